"""Where the course is, and its own settings: course.toml, the one place for the due date, the grace period,
the late policy, per-student extensions and who may read what grading writes.

The course is the folder an instructor works in: $LESSON20_COURSE when set, else the working folder or the
nearest folder above it that holds `nbgrader_config.py` and `solutions/lesson20/`. It is never taken from
where this package is installed, so a second checkout run with the first one's environment grades, releases
and collects its own course. nbgrader_config.py passes its own folder (course_config(root)).
"""
import math
import os
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from ..items import ASSIGNMENT, SOLUTIONS_DIR

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

COURSE_ENV = "LESSON20_COURSE"
SETTINGS_FILE = "course.toml"
PERIODS = {"hour": 3600, "day": 86400}


class CourseError(Exception):
    """No course where a command looked, or a course.toml that cannot be used; the message says which and why."""


def is_course(folder: Path) -> bool:
    return (folder / "nbgrader_config.py").is_file() and (folder / SOLUTIONS_DIR / ASSIGNMENT).is_dir()


def course_root(start: Path = None) -> Path:
    """The course a command works on: $LESSON20_COURSE, else `start` (the working folder) or the nearest folder
    above it that is a course; CourseError naming where it looked otherwise."""
    named = os.environ.get(COURSE_ENV)
    if named:
        folder = Path(named).resolve()
        if not is_course(folder):
            raise CourseError(f"{COURSE_ENV}={named} is not a course: it needs nbgrader_config.py and "
                              f"{SOLUTIONS_DIR}/{ASSIGNMENT}/")
        return folder
    here = Path(start or os.getcwd()).resolve()
    for folder in (here, *here.parents):
        if is_course(folder):
            return folder
    raise CourseError(f"no course in {here} or any folder above it (a course holds nbgrader_config.py and "
                      f"{SOLUTIONS_DIR}/{ASSIGNMENT}/): run the command in the course's folder, or set "
                      f"{COURSE_ENV}=/path/to/the/course")


def parse_time(text: str, what: str) -> datetime:
    """An ISO 8601 time with its zone ("2026-12-10T05:30:00+01:00", "...Z"), as an aware UTC datetime."""
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except (AttributeError, ValueError):
        raise CourseError(f"{SETTINGS_FILE}: {what} = {text!r} is not an ISO 8601 time "
                          "(e.g. \"2026-12-10T05:30:00+01:00\")") from None
    if when.tzinfo is None:
        raise CourseError(f"{SETTINGS_FILE}: {what} = {text!r} has no time zone: add one "
                          "(\"+01:00\", or \"Z\" for UTC), so every machine reads the same moment")
    return when.astimezone(timezone.utc)


def iso(when: datetime) -> str:
    """A UTC time as grades.json writes it: 2026-12-10T05:30:00Z."""
    return when.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Settings:
    """course.toml, read (see the file itself for each setting's meaning)."""
    due: datetime = None                                 # None: nothing is late
    grace: timedelta = timedelta(0)
    penalty_points: float = 0.0                          # per started period late, after the grace period
    penalty_period: str = "hour"
    penalty_max: float = math.inf
    extensions: dict = field(default_factory=dict)       # student -> their own due date (aware, UTC)
    clock_tolerance: timedelta = timedelta(minutes=2)    # timestamp.txt against the time that counts
    instructors_group: str = ""                          # "" : the instructor alone (700)
    exchange_timestamps: bool = False                    # timestamp.txt is written by an authenticated exchange

    def due_for(self, student: str):
        """The student's due date, their extension included (None when the course has none)."""
        return self.extensions.get(student, self.due)

    def last_due(self):
        """The latest due date of any student, extensions and the grace period included: after it, nobody can
        still submit on time. None when there is no due date."""
        dues = [d for d in (self.due, *self.extensions.values()) if d is not None]
        return max(dues) + self.grace if dues else None

    def penalty(self, late_seconds: float) -> float:
        """Points off for a submission this late (0 within the grace period)."""
        if not late_seconds or late_seconds <= self.grace.total_seconds() or not self.penalty_points:
            return 0.0
        periods = math.ceil((late_seconds - self.grace.total_seconds()) / PERIODS[self.penalty_period])
        return round(min(self.penalty_max, periods * self.penalty_points), 4)


def read_settings(root: Path) -> Settings:
    """The course's course.toml; the defaults (no due date, no penalty, private to the instructor) without one."""
    path = Path(root) / SETTINGS_FILE
    if not path.is_file():
        return Settings()
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise CourseError(f"{path} cannot be read: {exc}") from None
    return settings_from(data)


def settings_from(data: dict) -> Settings:
    submission, access = data.get("submission", {}), data.get("access", {})
    known = {"due", "grace_minutes", "late_penalty_points", "late_penalty_period", "late_penalty_max",
             "clock_tolerance_seconds", "extensions", "exchange_timestamps"}
    unknown = sorted(set(submission) - known) + sorted(f"access.{k}" for k in set(access) - {"instructors_group"})
    if unknown:
        raise CourseError(f"{SETTINGS_FILE}: unknown setting {', '.join(unknown)}; the settings are "
                          f"{', '.join(sorted(known))} under [submission], and instructors_group under [access]")
    period = submission.get("late_penalty_period", "hour")
    if period not in PERIODS:
        raise CourseError(f"{SETTINGS_FILE}: late_penalty_period = {period!r}: it is \"hour\" or \"day\"")
    numbers = {k: submission.get(k, d) for k, d in (("grace_minutes", 0), ("late_penalty_points", 0),
                                                    ("late_penalty_max", math.inf), ("clock_tolerance_seconds", 120))}
    for key, value in numbers.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise CourseError(f"{SETTINGS_FILE}: {key} = {value!r}: it is a number of at least 0")
    if not isinstance(submission.get("exchange_timestamps", False), bool):
        raise CourseError(f"{SETTINGS_FILE}: exchange_timestamps is true or false")
    due = submission.get("due") or None
    extensions = submission.get("extensions", {})
    if not isinstance(extensions, dict):
        raise CourseError(f"{SETTINGS_FILE}: [submission.extensions] maps a student id to their due date")
    return Settings(
        due=parse_time(due, "due") if due else None,
        grace=timedelta(minutes=numbers["grace_minutes"]),
        penalty_points=float(numbers["late_penalty_points"]), penalty_period=period,
        penalty_max=float(numbers["late_penalty_max"]),
        extensions={str(s): parse_time(t, f"extensions.{s}") for s, t in extensions.items()},
        clock_tolerance=timedelta(seconds=numbers["clock_tolerance_seconds"]),
        instructors_group=str(access.get("instructors_group", "")),
        exchange_timestamps=submission.get("exchange_timestamps", False))
