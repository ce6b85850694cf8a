"""autograder.instructor.settings: the course is found from the working folder or $LESSON20_COURSE, never from
where the package is, and course.toml's due dates and late policy read as documented."""
import math
import shutil
from datetime import datetime, timedelta, timezone

import pytest

from autograder.instructor.settings import (COURSE_ENV, CourseError, Settings, course_root, read_settings,
                                            settings_from)
from autograder.items import ROOT

UTC = timezone.utc


def make_course(folder):
    (folder / "solutions" / "lesson20").mkdir(parents=True)
    (folder / "nbgrader_config.py").write_text("c = get_config()\n")
    return folder


def test_the_course_is_the_working_folder_or_the_nearest_one_above_it(tmp_path, monkeypatch):
    monkeypatch.delenv(COURSE_ENV, raising=False)
    course = make_course(tmp_path / "second-checkout")
    (course / "grading" / "feedback").mkdir(parents=True)
    assert course_root(course) == course.resolve()
    assert course_root(course / "grading" / "feedback") == course.resolve()  # not this package's checkout
    assert course_root(course) != ROOT


def test_the_environment_variable_names_the_course(tmp_path, monkeypatch):
    course = make_course(tmp_path / "c")
    monkeypatch.setenv(COURSE_ENV, str(course))
    assert course_root(tmp_path) == course.resolve()
    monkeypatch.setenv(COURSE_ENV, str(tmp_path))
    with pytest.raises(CourseError, match="is not a course"):
        course_root()


def test_no_course_is_an_error_that_says_where_it_looked_and_what_to_do(tmp_path, monkeypatch):
    monkeypatch.delenv(COURSE_ENV, raising=False)
    with pytest.raises(CourseError) as caught:
        course_root(tmp_path)
    assert str(tmp_path) in str(caught.value) and COURSE_ENV in str(caught.value)


def test_the_repository_course_toml_reads_as_no_due_date_and_no_penalty():
    settings = read_settings(ROOT)
    assert settings.due is None and settings.last_due() is None and settings.penalty(10**6) == 0
    assert settings.instructors_group == "" and settings.clock_tolerance == timedelta(seconds=120)


def test_a_missing_course_toml_is_the_defaults(tmp_path):
    assert read_settings(tmp_path) == Settings()


def test_due_dates_grace_penalties_and_extensions(tmp_path):
    shutil.copy(ROOT / "course.toml", tmp_path)
    text = (tmp_path / "course.toml").read_text()
    text = text.replace('due = ""', 'due = "2026-12-10T05:30:00+01:00"').replace(
        "grace_minutes = 0", "grace_minutes = 5").replace("late_penalty_points = 0", "late_penalty_points = 0.5")
    text = text.replace("late_penalty_max = 14", "late_penalty_max = 2")
    text = text.replace('# alice = "2026-12-12T05:30:00Z"', 'alice = "2026-12-12T05:30:00Z"')
    (tmp_path / "course.toml").write_text(text)
    settings = read_settings(tmp_path)
    assert settings.due == datetime(2026, 12, 10, 4, 30, tzinfo=UTC)
    assert settings.due_for("bob") == settings.due and settings.due_for("alice") == datetime(2026, 12, 12, 5, 30, tzinfo=UTC)
    assert settings.last_due() == datetime(2026, 12, 12, 5, 35, tzinfo=UTC)  # the latest extension, and the grace
    assert settings.penalty(0) == settings.penalty(300) == 0          # within the grace period
    assert settings.penalty(301) == 0.5                                # a started hour past the grace
    assert settings.penalty(300 + 3600) == 0.5 and settings.penalty(300 + 3601) == 1.0
    assert settings.penalty(300 + 100 * 3600) == 2                     # the cap


def test_per_day_penalties_count_started_days():
    settings = settings_from({"submission": {"due": "2026-01-01T00:00:00Z", "late_penalty_points": 1,
                                             "late_penalty_period": "day"}})
    assert settings.penalty(1) == 1 and settings.penalty(86400) == 1 and settings.penalty(86401) == 2
    assert settings.penalty_max == math.inf


@pytest.mark.parametrize("submission,words", [
    ({"due": "2026-12-10 05:30"}, "no time zone"),
    ({"due": "next tuesday"}, "not an ISO 8601 time"),
    ({"late_penalty_period": "week"}, '"hour" or "day"'),
    ({"grace_minutes": -1}, "at least 0"),
    ({"grace": 5}, "unknown setting grace"),
    ({"extensions": {"bob": "2026-12-10"}}, "no time zone"),
])
def test_a_setting_that_cannot_be_used_is_named_with_why(submission, words):
    with pytest.raises(CourseError, match=words):
        settings_from({"submission": submission})
