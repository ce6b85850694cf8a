"""autograder.instructor.state: per-student records survive a round trip, and damage reads as none."""
from autograder.instructor.state import StudentRecord, load_state, recorded_students, save_state, state_path
from autograder.text import LIMITS


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
