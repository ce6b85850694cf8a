"""Writing the feedback pages again after grading by hand: which students, in which folder, and that a page
is only ever replaced whole (nbgrader's GenerateFeedback stood in for by a function that writes a page, or
fails part-way, where it would write it; test_grade_cli and test_exchange run the real one)."""
import time
from pathlib import Path

from autograder.instructor import handback
from autograder.instructor.state import StudentRecord, save_state
from autograder.items import ASSIGNMENT


def page_of(folder, student, feedback="feedback"):
    return Path(folder) / feedback / student / ASSIGNMENT / f"{ASSIGNMENT}.html"


def graded_class(folder, statuses: dict):
    """Records for each student, with the page `grade` wrote."""
    for student, status in statuses.items():
        record = StudentRecord(student, "x")
        record.settle(status, "")
        save_state(folder, record)
        page_of(folder, student).parent.mkdir(parents=True, exist_ok=True)
        page_of(folder, student).write_text(f"{student}: the page grade wrote")


def converter(outcomes: dict, calls: list):
    """A stand-in for run_with_retries(cfg, student, GenerateFeedback): writes the page where nbgrader would, or
    half of it and an error."""
    def run(cfg, student, _converter):
        calls.append((cfg.CourseDirectory.autograded_directory, student))
        made = page_of("/", student, cfg.CourseDirectory.feedback_directory)  # an absolute folder
        made.parent.mkdir(parents=True, exist_ok=True)
        made.write_text(f"{student}: half a page" if outcomes.get(student) else f"{student}: the page now")
        return outcomes.get(student, "")
    return run


def test_each_graded_students_page_is_written_again_in_the_folder_of_their_newest_record(tmp_path, monkeypatch):
    shard1, shard2 = tmp_path / "shard-1", tmp_path / "shard-2"
    graded_class(shard1, {"alice": "graded", "bob": "graded", "carol": "failed"})
    time.sleep(0.01)
    graded_class(shard2, {"bob": "graded", "dave": "timeout"})  # bob graded again, later, in shard 2
    calls = []
    monkeypatch.setattr(handback, "run_with_retries", converter({}, calls))
    written, failed = handback.rewrite_feedback("sqlite://", ["alice", "bob", "carol", "dave", "erin"], [shard1, shard2])
    assert written == ["alice", "bob"] and failed == {}
    assert sorted(calls) == [(str(shard1.resolve() / "autograded"), "alice"), (str(shard2.resolve() / "autograded"), "bob")]
    assert page_of(shard1, "alice").read_text() == "alice: the page now"
    assert page_of(shard2, "bob").read_text() == "bob: the page now"
    assert page_of(shard1, "bob").read_text() == "bob: the page grade wrote"  # not bob's newest record
    assert page_of(shard1, "carol").read_text() == "carol: the page grade wrote"  # failed: its page is grade's
    assert not list(shard1.glob(".feedback-*")) and not list(shard2.glob(".feedback-*"))


def test_a_page_that_fails_part_way_leaves_the_old_one_whole(tmp_path, monkeypatch):
    graded_class(tmp_path, {"alice": "graded", "bob": "graded"})
    monkeypatch.setattr(handback, "run_with_retries", converter({"bob": "KeyError: 'x'"}, []))
    written, failed = handback.rewrite_feedback("sqlite://", ["alice", "bob"], [tmp_path])
    assert written == ["alice"]
    assert failed == {"bob": "no feedback: KeyError: 'x'"}
    assert page_of(tmp_path, "bob").read_text() == "bob: the page grade wrote"
    assert page_of(tmp_path, "alice").read_text() == "alice: the page now"
    assert not list(tmp_path.glob(".feedback-*"))


def test_a_grade_running_in_the_folder_is_waited_for_and_what_it_graded_is_read_after_it(tmp_path, monkeypatch):
    """grade holds the folder's pages lock shared while it grades; the rewrite waits for it (and says so), then
    reads the records as that grade left them: bob, whom it graded again and failed, keeps grade's page."""
    import threading
    from autograder.instructor.course import pages_lock
    from autograder.instructor.files import file_lock
    graded_class(tmp_path, {"alice": "graded", "bob": "graded"})
    monkeypatch.setattr(handback, "run_with_retries", converter({}, []))
    told, done = [], {}
    with file_lock(pages_lock(tmp_path), shared=True):  # a grade, running
        export = threading.Thread(target=lambda: done.update(result=handback.rewrite_feedback(
            "sqlite://", ["alice", "bob"], [tmp_path], waiting=told.append)))
        export.start()
        export.join(0.5)
        assert export.is_alive() and told == [tmp_path.resolve()], "the rewrite did not wait for the grade"
        assert page_of(tmp_path, "alice").read_text() == "alice: the page grade wrote"
        time.sleep(0.01)
        graded_class(tmp_path, {"bob": "failed"})  # the grade's newer record, and its page
    export.join(30)
    assert done["result"] == (["alice"], {})
    assert page_of(tmp_path, "alice").read_text() == "alice: the page now"
    assert page_of(tmp_path, "bob").read_text() == "bob: the page grade wrote"
