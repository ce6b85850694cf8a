"""autograder.runner: the checks of one item, run against in-process backends, and what is collected."""
import shutil
import sys
import textwrap

import pytest

from autograder import rubric
from autograder.backends import LocalStudent, Reference
from autograder.checks.released import released
from autograder.instructor.reference import reference_namespace
from autograder.items import get_item
from autograder.runner import ItemResult, Outcome, check_files, diagnose, run_checks


def test_visible_checks_only_without_a_reference():
    result = run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}))["q5_answer"]
    assert [o.hidden for o in result.outcomes] == [False] and result.outcomes[0].passed


def test_hidden_checks_compare_with_the_reference():
    result = run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}), Reference({"Q5_ANSWER": "b"}),
                        include_hidden=True)["q5_answer"]
    assert [(o.hidden, o.passed) for o in result.outcomes] == [(False, True), (True, False)]
    assert result.score < 1


def test_a_failed_check_keeps_only_the_students_words():
    result = run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": 5}))["q5_answer"]
    message = result.outcomes[0].message
    assert message.startswith("Q5_ANSWER is 5") and "\nassert " not in message


def test_missing_checks_are_an_instructor_error(monkeypatch, tmp_path):
    import autograder.runner as runner
    monkeypatch.setattr(runner, "HIDDEN_DIR", tmp_path)
    with pytest.raises(FileNotFoundError, match="hidden checks for q5_answer are not installed"):
        check_files(["q5_answer"], include_hidden=True)


def test_scores_come_from_the_rubric_behaviours():
    assert ItemResult(get_item("q5_answer")).score == 0.0
    letter = Outcome("a", True, check="test_answer_is_a_letter", behaviour="a_letter")
    right = Outcome("b", True, hidden=True, check="test_answer_is_right", behaviour="right_letter")
    assert ItemResult(get_item("q5_answer"), [letter, right]).score == 1.0
    wrong = Outcome("b", False, "no", hidden=True, check="test_answer_is_right", behaviour="right_letter")
    assert ItemResult(get_item("q5_answer"), [letter, wrong]).score == 0.1


def test_outcomes_carry_their_check_and_the_behaviour_it_is_marked_with():
    result = run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}), Reference({"Q5_ANSWER": "b"}),
                        include_hidden=True)["q5_answer"]
    assert [(o.check, o.behaviour) for o in result.outcomes] == [("test_answer_is_a_letter", "a_letter"),
                                                                  ("test_answer_is_right", "right_letter")]


@pytest.fixture
def own_checks(monkeypatch, tmp_path):
    """Writes visible checks of our own for an item, in a folder that stands in for autograder/checks (its
    pytest.ini) and autograder/exercises (<id>/test_<id>.py)."""
    import autograder.runner as runner
    shutil.copy(runner.CHECKS_DIR / "pytest.ini", tmp_path)
    monkeypatch.setattr(runner, "CHECKS_DIR", tmp_path)
    monkeypatch.setattr(runner, "EXERCISES_DIR", tmp_path)

    def write(item_id: str, source: str):
        (tmp_path / item_id).mkdir(exist_ok=True)
        (tmp_path / item_id / f"test_{item_id}.py").write_text(textwrap.dedent(source))
    yield write
    for name in [name for name, module in sys.modules.items()
                 if str(getattr(module, "__file__", None) or "").startswith(str(tmp_path))]:
        del sys.modules[name]


def test_a_check_without_a_behaviour_fails_at_collection(own_checks):
    own_checks("q5_answer", """
        import pytest

        @pytest.mark.behaviour("a_letter")
        def test_marked(student):
            pass

        def test_unmarked(student):
            pass
        """)
    with pytest.raises(RuntimeError, match=r"test_q5_answer\.py: check test_unmarked has no @pytest\.mark\.behaviour\(id\) "
                       r"naming the behaviour of q5_answer it decides; the behaviours of q5_answer "
                       r"\(autograder/rubric\.py\): a_letter, right_letter"):
        run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}))


def test_a_check_marked_with_a_behaviour_its_item_lacks_fails_at_collection(own_checks):
    own_checks("q5_answer", """
        import pytest

        @pytest.mark.behaviour("right_answer")
        @pytest.mark.parametrize("case", [1, 2])
        def test_misnamed(student, case):
            pass
        """)
    with pytest.raises(RuntimeError, match=r"check test_misnamed is marked @pytest\.mark\.behaviour\('right_answer'\), "
                       r"not a behaviour of q5_answer; the behaviours of q5_answer \(autograder/rubric\.py\): "
                       r"a_letter, right_letter"):
        run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}))


def test_a_check_that_could_not_check_on_this_machine_is_not_checked_never_passed(own_checks):
    """A hidden memory check skips where the sandbox has no memory cgroup (a non-root instructor): its behaviour
    earns nothing, is marked not checked, and caps nothing; an ordinary skip is still left out."""
    own_checks("q5_answer", """
        import pytest
        from autograder.runner import NOT_CHECKED

        @pytest.mark.behaviour("a_letter")
        def test_letter(student):
            pass

        @pytest.mark.behaviour("right_letter")
        def test_right(student):
            pass

        @pytest.mark.behaviour("right_letter")
        def test_measured(student):
            pytest.skip(NOT_CHECKED + "this grading machine could not measure it")

        @pytest.mark.behaviour("a_letter")
        def test_skipped(student):
            pytest.skip("not relevant here")
        """)
    class Graded(LocalStudent):  # stands for the grader's sandbox, which measures from outside
        in_process = False

    result = run_checks(["q5_answer"], Graded({"Q5_ANSWER": "d"}))["q5_answer"]
    assert [(o.check, o.passed, o.reason) for o in result.outcomes] == [
        ("test_letter", True, ""), ("test_right", True, ""), ("test_measured", False, "not_checked")]
    judged = {b["id"]: b for b in result.behaviours()}
    assert judged["right_letter"]["not_checked"] and judged["right_letter"]["earned"] == 0.0
    assert not judged["a_letter"]["not_checked"] and judged["a_letter"]["earned"] == 0.1
    assert result.score == 0.1  # the central right_letter's 0.9 is withheld, not capped to half, not given
    # run in process (the self-check, `check --all`), the measured check waits for grading, as before
    in_process = run_checks(["q5_answer"], LocalStudent({"Q5_ANSWER": "d"}))["q5_answer"]
    assert [o.check for o in in_process.outcomes] == ["test_letter", "test_right"] and in_process.score == 1.0


def test_the_checks_expected_values_come_from_the_source_they_are_handed(own_checks):
    """run_checks(expected=...) is the checks' `expected` fixture (the release computes expected.pt so); left out,
    the fixture reads the release (checks.released)."""
    own_checks("q5_answer", """
        import pytest

        @pytest.mark.behaviour("a_letter")
        def test_letter(student, expected):
            assert False, repr(expected("torch_scales", init_scale=1024.0, found_infs=[True, True]))
        """)
    student = LocalStudent({"Q5_ANSWER": "d"})
    handed = run_checks(["q5_answer"], student, expected=lambda oracle, *args, **kwargs: (oracle, args, kwargs))
    assert [o.message for o in handed["q5_answer"].outcomes] == [
        "('torch_scales', (), {'init_scale': 1024.0, 'found_infs': [True, True]})"]
    as_released = run_checks(["q5_answer"], student)["q5_answer"]
    assert [o.message for o in as_released.outcomes] == [
        repr(released("torch_scales", init_scale=1024.0, found_infs=[True, True]))]


def test_the_diagnosis_asks_the_source_the_checks_were_handed():
    """runner.diagnose hands an exercise's diagnose(student, expected) the checks' source of expected values."""
    asked = []

    def recording(oracle, *args, **kwargs):
        asked.append(oracle)
        return released(oracle, *args, **kwargs)

    item = get_item("mixed_precision_train_step")
    failing = [Outcome(b.id, False, "wrong", check=f"test_{b.id}", behaviour=b.id)
               for b in rubric.behaviours(item.id)[:2]]
    assert diagnose(ItemResult(item, failing), Reference(reference_namespace()), recording) == ""
    assert {"fp32_masters", "full_batch_grads"} <= set(asked)
