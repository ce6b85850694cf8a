"""autograder.instructor.state: per-student records survive a round trip, and damage reads as none."""
from autograder.instructor.state import StudentRecord, load_state, recorded_students, save_state, state_path
from autograder.text import LIMITS, NOT_IMPLEMENTED


def test_round_trip(tmp_path):
    record = StudentRecord("ada", "abc", "graded", "", {"q5_answer": {"letter": {"earned": 1}}})
    save_state(tmp_path, record)
    assert load_state(tmp_path, "ada") == record
    assert recorded_students(tmp_path) == ["ada"]


def test_unreadable_or_old_state_files(tmp_path):
    state_path(tmp_path, "bob").parent.mkdir(parents=True)
    state_path(tmp_path, "bob").write_text("{not json")
    assert load_state(tmp_path, "bob") is None
    state_path(tmp_path, "cy").write_text('{"student": "cy", "status": "failed", "items": {}, "extra": 1}')
    assert load_state(tmp_path, "cy") == StudentRecord("cy", status="failed")
    assert load_state(tmp_path, "nobody") is None


def test_a_stored_reason_is_clipped(tmp_path):
    save_state(tmp_path, StudentRecord("ada", reason="regraded by hand: full marks" + "x" * 10**6))
    assert len(load_state(tmp_path, "ada").reason) == LIMITS["reason"]


def _result(outcomes):
    from autograder.grading import SubmissionResult
    from autograder.items import get_item
    from autograder.runner import ItemResult
    return SubmissionResult("graded", items={"q5_answer": ItemResult(get_item("q5_answer"), outcomes)})


def test_a_record_keeps_what_each_failing_behaviours_checks_said_beside_an_unchanged_rubric():
    from autograder.instructor.state import MESSAGES_KEPT, item_records
    from autograder.runner import Outcome
    said = [f"Q5_ANSWER is {c!r}, not a letter" for c in "xyzw"]
    outcomes = [Outcome("letter", False, m, behaviour="a_letter") for m in said + said[:1]]
    outcomes.append(Outcome("right", True, behaviour="right_letter"))
    outcomes.append(Outcome("long", False, "y" * 5000, behaviour="right_letter"))
    [(item_id, item)] = item_records(_result(outcomes)).items()
    assert item_id == "q5_answer" and set(item) == {"score", "max_score", "rubric", "messages"}
    assert all(set(b) == {"score", "max_score", "central"} for b in item["rubric"].values())  # grades.json's shape
    assert item["messages"] == {"a_letter": said[:MESSAGES_KEPT], "right_letter": ["y" * LIMITS["check"]]}
    stub = [Outcome(f"letter {i}", False, f"Q5_ANSWER is not written yet: cell {i}", reason="not_implemented",
                    behaviour="a_letter") for i in range(2)]
    assert item_records(_result(stub))["q5_answer"]["messages"] == {"a_letter": [NOT_IMPLEMENTED]}
    passing = item_records(_result([Outcome("letter", True, behaviour="a_letter"),
                                    Outcome("right", True, behaviour="right_letter")]))["q5_answer"]
    assert passing["messages"] == {}


def test_a_record_keeps_its_seconds_and_an_older_record_reads_as_untimed(tmp_path):
    save_state(tmp_path, StudentRecord("ada", "f", seconds=7.25))
    assert load_state(tmp_path, "ada").seconds == 7.25
    state_path(tmp_path, "bob").write_text('{"student": "bob", "status": "graded", "items": {}}')
    assert load_state(tmp_path, "bob").seconds is None


def test_a_broken_record_is_named_with_its_cause(tmp_path):
    import pytest

    from autograder.instructor.state import read_state
    state_path(tmp_path, "x").parent.mkdir(parents=True)
    for name, text, cause in [("a", "{not json", "JSONDecodeError"), ("b", "[1, 2]", "AttributeError"),
                              ("c", '{"student": "c", "items": []}', "wrong type: items"),
                              ("d", '{"student": "d", "items": {"q5_answer": {"rubric": {"a": 1}}}}',
                               "wrong type: items.q5_answer.rubric"),
                              ("e", '{"student": "e", "items": {"q5_answer": {"messages": {"a": "one"}}}}',
                               "wrong type: items.q5_answer.messages"),
                              ("f", '{"student": "f", "seconds": "7"}', "wrong type: seconds")]:
        state_path(tmp_path, name).write_text(text)
        with pytest.raises(ValueError, match=cause) as caught:
            read_state(tmp_path, name)
        assert str(state_path(tmp_path, name)) in str(caught.value) and load_state(tmp_path, name) is None
    with pytest.raises(OSError):
        read_state(tmp_path, "nobody")


def test_a_folder_name_no_file_name_can_hold_gets_its_record_under_a_hash(tmp_path):
    """A 243-character id stopped the class with `OSError: [Errno 36] File name too long` in the state folder."""
    long_id, odd = "a" * 243, "=HYPERLINK(1)"
    for student in (long_id, odd, "ada"):
        save_state(tmp_path, StudentRecord(student, status="failed", reason="not a usable student id"))
    assert state_path(tmp_path, odd).name == f"{odd}.json"  # a name a file system holds keeps its file
    assert len(state_path(tmp_path, long_id).name) < 64
    assert recorded_students(tmp_path) == sorted([long_id, odd, "ada"])
