"""autograder.instructor.release_feedback: no page is released before the class's last due date (extensions and
grace included) without the option that names the cost, and a folder nbgrader cannot release is skipped, not
fatal for the class."""
import logging
import os
import shutil
from datetime import datetime, timedelta, timezone

import pytest
from traitlets.config import Config

from autograder.instructor.release_feedback import ALLOW_LEAK, GuardedReleaseFeedback, too_early
from autograder.instructor.settings import iso
from autograder.items import ROOT

NOW = datetime(2026, 12, 11, 12, 0, tzinfo=timezone.utc)


def course_with(tmp_path, due, extension=None):
    text = (ROOT / "course.toml").read_text().replace('due = ""', f'due = "{iso(due)}"')
    if extension:
        text = text.replace('# alice = "2026-12-12T05:30:00Z"', f'alice = "{iso(extension)}"')
    (tmp_path / "course.toml").write_text(text)
    return str(tmp_path)


def test_feedback_waits_for_the_last_due_date_extensions_included(tmp_path):
    assert too_early(course_with(tmp_path, NOW - timedelta(days=1)), NOW) == ""
    why = too_early(course_with(tmp_path, NOW - timedelta(days=1), NOW + timedelta(hours=3)), NOW)
    assert iso(NOW + timedelta(hours=3)) in why and ALLOW_LEAK in why and "reference code" in why
    assert too_early(str(ROOT), NOW) == ""  # no due date: nothing to wait for


def _feedback(out, student, files=("timestamp.txt", "submission_secret.txt")):
    folder = out / "feedback" / student / "lesson20"
    folder.mkdir(parents=True)
    (folder / "lesson20.html").write_text(f"<p>{student}</p>")
    for name in files:
        (folder / name).write_text("2026-12-10 05:00:00.000000 UTC" if name == "timestamp.txt" else f"secret-{student}")


def _exchange(tmp_path, course, allow=False):
    cfg = Config()
    cfg.CourseDirectory.root = str(tmp_path / "out")
    cfg.CourseDirectory.course_id = "lesson20"
    cfg.CourseDirectory.assignment_id = "lesson20"
    cfg.Exchange.root = str(tmp_path / "exchange")
    cfg.GuardedReleaseFeedback.course = course
    cfg.GuardedReleaseFeedback.allow_reference_leak = allow
    from nbgrader.coursedir import CourseDirectory
    coursedir = CourseDirectory(config=cfg)
    step = GuardedReleaseFeedback(coursedir=coursedir, config=cfg)
    step.log = logging.getLogger("test-release")
    return step


def test_a_folder_without_nbgraders_files_is_skipped_and_the_others_released(tmp_path, caplog):
    out = tmp_path / "out"
    _feedback(out, "ada")
    _feedback(out, "handmade", files=("timestamp.txt",))
    _feedback(out, "zed")
    (tmp_path / "exchange").mkdir()
    step = _exchange(tmp_path, str(ROOT))
    with caplog.at_level(logging.WARNING, logger="test-release"):
        step.start()
    released = sorted(p.read_text() for p in (tmp_path / "exchange" / "lesson20" / "feedback").glob("*.html"))
    assert released == ["<p>ada</p>", "<p>zed</p>"]
    assert "handmade" in caplog.text and "submission_secret.txt" in caplog.text


def test_before_the_last_due_date_nothing_is_released_without_the_option(tmp_path):
    out = tmp_path / "out"
    _feedback(out, "ada")
    (tmp_path / "exchange").mkdir()
    course = course_with(tmp_path, datetime.now(timezone.utc) + timedelta(days=1))
    from nbgrader.exchange import ExchangeError
    with pytest.raises(ExchangeError):
        _exchange(tmp_path, course).start()
    assert not list((tmp_path / "exchange").rglob("*.html"))
    _exchange(tmp_path, course, allow=True).start()
    assert len(list((tmp_path / "exchange").rglob("*.html"))) == 1
    shutil.rmtree(tmp_path / "exchange")
    assert not os.path.exists(tmp_path / "exchange")
