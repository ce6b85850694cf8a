"""autograder.instructor.grade: what decides that a student is graded again (their files, the settings, the
grader), and the feedback page of a submission nbgrader could not grade."""
import shutil
from html.parser import HTMLParser

import pytest

from autograder.instructor import grade
from autograder.limits import Limits
from autograder.instructor.state import StudentRecord
from autograder.items import ASSIGNMENT, AUTO_ITEMS, EXERCISES_DIR, PACKAGE_DIR, check_file, solution_notebooks


@pytest.fixture
def submission(tmp_path):
    folder = tmp_path / "ada" / ASSIGNMENT
    folder.mkdir(parents=True)
    (folder / f"{ASSIGNMENT}.ipynb").write_text('{"cells": []}')
    return folder.parent


def test_a_students_fingerprint_changes_with_their_files_the_settings_and_the_grader(submission):
    first = grade.fingerprint(submission, Limits(), "grader-1")
    assert grade.fingerprint(submission, Limits(), "grader-1") == first
    others = [grade.fingerprint(submission, Limits.for_timeout(30.0), "grader-1"),
              grade.fingerprint(submission, Limits(memory_mb=1024), "grader-1"),
              grade.fingerprint(submission, Limits(), "grader-2")]
    (submission / ASSIGNMENT / "helpers.py").write_text("X = 1\n")
    others.append(grade.fingerprint(submission, Limits(), "grader-1"))
    assert len({first, *others}) == 1 + len(others)


def test_the_grader_fingerprint_changes_when_a_check_changes(tmp_path, monkeypatch):
    root = PACKAGE_DIR.parent
    copy = tmp_path / "root"
    shutil.copytree(PACKAGE_DIR, copy / PACKAGE_DIR.name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(root / "nbgrader_config.py", copy)
    for notebook in solution_notebooks(root):
        (copy / notebook.relative_to(root)).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(notebook, copy / notebook.relative_to(root))
    monkeypatch.setattr(grade, "PACKAGE_DIR", copy / PACKAGE_DIR.name)
    before = grade.grader_fingerprint(copy)
    assert grade.grader_fingerprint(copy) == before
    check = copy / check_file(EXERCISES_DIR, AUTO_ITEMS[0].id).relative_to(root)
    check.write_text(check.read_text() + "\n# a changed check\n")
    after = grade.grader_fingerprint(copy)
    assert after != before
    # the course's reference is the course's own, wherever the package is: its solutions change it too
    notebook = copy / solution_notebooks(root)[0].relative_to(root)
    notebook.write_bytes(notebook.read_bytes().replace(b'"cells"', b'"cells" ', 1))
    assert grade.grader_fingerprint(copy) != after


class _Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_the_failure_page_escapes_the_reason_and_lists_every_item_at_zero(tmp_path):
    reason = "<script>alert(1)</script> nbgrader could not autograde it"
    grade.write_failure_feedback(tmp_path, StudentRecord("ada", status="failed", reason=reason))
    page = _Page()
    page.feed((tmp_path / "feedback" / "ada" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text())
    text = "".join(page.text)
    assert "script" not in page.tags and reason in text and "failed" in text
    for item in AUTO_ITEMS:
        assert f"{item.title}0 / {item.points:g}" in text


class _NoWorkers:
    """Workers stood in for: no grading process is started."""

    def __init__(self, *args, **kwargs):
        pass

    def start(self, count):
        pass

    def close(self):
        pass


def test_the_pages_lock_is_held_shared_while_the_class_grades(tmp_path, submission, monkeypatch):
    """`export`'s rewrite of the pages (exclusive) cannot start while a grade stages, grades and writes pages in
    the folder; another grade (a shard in the same folder) can; once grade is done, export can."""
    import fcntl
    from autograder.instructor.course import pages_lock
    out, seen = tmp_path.parent / f"{tmp_path.name}-out", {}

    def attempt(mode):
        with open(pages_lock(out), "a") as handle:
            try:
                fcntl.flock(handle, mode | fcntl.LOCK_NB)
                return "got it"
            except BlockingIOError:
                return "blocked"

    def grade_all(pool, todo, *args):
        seen["exclusive"], seen["shared"], seen["todo"] = attempt(fcntl.LOCK_EX), attempt(fcntl.LOCK_SH), todo
    monkeypatch.setattr(grade, "Workers", _NoWorkers)
    monkeypatch.setattr(grade, "_grade_all", grade_all)
    grade.grade_class(submission.parent, out, jobs=1, progress=False)
    assert seen == {"exclusive": "blocked", "shared": "got it", "todo": ["ada"]}
    assert attempt(fcntl.LOCK_EX) == "got it"


def test_a_collected_folders_change_time_does_not_regrade_but_the_exchanges_record_does(submission):
    """Copying a class, or the chmod that makes it private, moves every change time: nobody is graded again for
    that; a new record of collect (another submission set aside, say) is a change."""
    collected = {"time": "2026-12-10T05:00:00Z", "source": "collected", "claimed": None, "flags": [], "set_aside": []}
    first = grade.fingerprint(submission, Limits(), "g", collected)
    assert grade.fingerprint(submission, Limits(), "g", {**collected, "time": "2026-12-11T00:00:00Z"}) == first
    exchange = {**collected, "source": "exchange"}
    assert grade.fingerprint(submission, Limits(), "g", {**exchange, "set_aside": [{"reason": "x"}]}) != \
        grade.fingerprint(submission, Limits(), "g", exchange)
