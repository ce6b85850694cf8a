"""autograder.exercises.mixed_precision_train_step.diagnose: each cause is named only when its scenario's values show
it, and the reference shows none (the one-cause corpus, graded, is tests/test_rubric.py's)."""
from autograder.backends import Reference
from autograder.checks.released import released
from autograder.exercises.mixed_precision_train_step import diagnose as diagnosis
from autograder.instructor.reference import reference_namespace


def step(loss, stepped=True, loss_calls=()):
    """A step as the probe describes it: what the call returned, and loss_fn's calls (dtype, value)."""
    return {"returned": {"items": ({"value": loss}, {"value": stepped})}, "loss_calls": list(loss_calls)}


def test_a_loss_in_fp16_is_named_only_when_loss_fn_saw_fp16():
    assert diagnosis.loss_in_low_precision(step(1.5, loss_calls=[("float32", 1.4), ("float32", 1.6)])) == ""
    said = diagnosis.loss_in_low_precision(step(1.5, stepped=False, loss_calls=[("float16", 1.4)]))
    assert "float16" in said and "skipped as an overflow" in said and ".float()" in said


def test_the_returned_loss_is_named_by_which_wrong_loss_it_is():
    calls = [("float32", 1.0), ("float32", 2.0), ("float32", 3.0)]
    assert diagnosis.which_loss(step(2.0, loss_calls=calls), want_loss=2.0) == ""  # the right one
    assert "last micro-batch's loss" in diagnosis.which_loss(step(3.0, loss_calls=calls), want_loss=2.0)
    assert "sum of the 3" in diagnosis.which_loss(step(6.0, loss_calls=calls), want_loss=2.0)
    assert "scaled loss" in diagnosis.which_loss(step(2.0 * 2 ** 16, loss_calls=calls), want_loss=2.0)
    assert diagnosis.which_loss(step(2.5, loss_calls=calls), want_loss=2.0) == ""  # none it can name: no guess


def test_the_reference_shows_no_cause():
    assert diagnosis.diagnose(Reference(reference_namespace()), released) == ""
