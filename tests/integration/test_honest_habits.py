"""Honest habits in real code (tests/submissions/honest.py): correct submissions whose graded functions use
ordinary Python and torch habits keep full marks, and none is set aside for review.

They are graded once, with the rest of the corpus (tests/corpus.py): grade_notebook with the reference, one grading
process per core, each keeping its sandbox from submission to submission. A flag here is the
audit hook mistaking an honest habit for an attack: the test names the variant, the flags and the items.
"""
import pytest

from tests.corpus import HABITS, what_it_left
from tests.submissions import VARIANTS, full_marks

pytestmark = pytest.mark.slow
ASKED = ["honest_namedtuple_in_accumulate", "honest_dataclass_in_function", "honest_inspect_signature",
         "honest_logging", "honest_warnings_warn", "honest_traceback_print_exc", "honest_lru_cache_helper",
         "honest_typing_namedtuple", "honest_checkpoint_forward", "honest_torch_compile_helper",
         "honest_dataloader_workers", "honest_pdb_never_runs", "honest_timeit_time_magics", "honest_autoreload"]


@pytest.fixture
def graded(graded_corpus):
    """The honest habits, graded with the rest of the corpus (tests/corpus.py)."""
    return {"graded": {n: graded_corpus["graded"][n] for n in HABITS}}


def what_went_wrong(g) -> list:
    """Every way in which graded variant `g` is not an honest submission's grade: the status, each item short
    of full marks (its score and its first failed checks), each item set aside for review (its flags)."""
    found = []
    if g.status != "graded":
        found.append(f"status {g.status!r} instead of 'graded' ({g.reason[:300]})")
    for item, points in full_marks().items():
        score = g.scores.get(item)
        if score is None:
            found.append(f"{item}: no score")
        elif score != points:
            failed = "; ".join(f"{title}: {message[:200]}" for title, message in g.messages.get(item, [])[:3])
            found.append(f"{item}: {score:g} instead of full marks ({points:g})" + (f" [{failed}]" if failed else ""))
    for item, flags in sorted(g.review.items()):
        if flags:
            found.append(f"{item}: set aside for review, flagged {flags}")
    from autograder.limits import Limits
    if g.seconds >= Limits.for_timeout().student_seconds:
        found.append(f"graded in {g.seconds:.0f} s, past the per-student deadline ({Limits.for_timeout().student_seconds} s)")
    found += what_it_left(g)
    return found


def test_the_corpus_has_every_habit_asked_for():
    assert len(HABITS) >= 22, len(HABITS)
    assert set(ASKED) <= set(HABITS), sorted(set(ASKED) - set(HABITS))
    assert all(VARIANTS[n].doc and VARIANTS[n].kind == "realistic" for n in HABITS)


@pytest.mark.parametrize("name", HABITS)
def test_honest_habit_keeps_full_marks_unflagged(graded, name):
    g = graded["graded"][name]
    found = what_went_wrong(g)
    assert not found, (f"{name} ({VARIANTS[name].doc}), graded in {g.seconds:.1f} s:\n  " + "\n  ".join(found)
                       + f"\n  scores {g.scores}")


def test_time(graded, record_property):
    seconds = sum(g.seconds for g in graded["graded"].values())
    record_property("honest_seconds", round(seconds, 1))
    slowest = max(graded["graded"].values(), key=lambda g: g.seconds)
    from autograder.limits import Limits
    bound = Limits.for_timeout().student_seconds
    assert slowest.seconds < bound, f"{slowest.name} took {slowest.seconds:.0f} s, past the deadline ({bound} s)"
    print(f"{len(graded['graded'])} honest habits in {seconds:.0f} s of grading; slowest {slowest.name} "
          f"({slowest.seconds:.0f} s)")
