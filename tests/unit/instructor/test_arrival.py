"""autograder.instructor.arrival: the time that counts is one the student cannot write; timestamp.txt alone never
decides, and where nothing else says when, the lateness is unknown and flagged."""
import os
from datetime import datetime, timedelta, timezone

import pytest

from autograder.instructor.arrival import arrival, lateness, nbgrader_stamp, parse_stamp, read_manifest
from autograder.instructor.settings import iso, settings_from
from autograder.instructor.staging import submission_fingerprint

DUE = datetime(2026, 12, 10, 5, 30, tzinfo=timezone.utc)
SETTINGS = settings_from({"submission": {"due": iso(DUE), "late_penalty_points": 1, "clock_tolerance_seconds": 60}})


def at(minutes: float) -> str:
    return iso(DUE + timedelta(minutes=minutes))


@pytest.mark.parametrize("text", ["garbage", "", "2099-13-45 99:99", "\x00" * 10, "1" * 5000])
def test_a_garbage_timestamp_is_no_time(text):
    assert parse_stamp(text) is None


def test_nbgraders_own_timestamp_reads_back_as_the_time_it_wrote():
    assert parse_stamp(nbgrader_stamp(at(3))) == DUE + timedelta(minutes=3)
    assert nbgrader_stamp(None) == "" and nbgrader_stamp("garbage") == ""


def test_the_exchanges_time_decides_and_a_forged_timestamp_is_flagged():
    """A folder written into inbound/ at 06:03 with a timestamp.txt saying 05:10: 33 minutes late."""
    block = lateness({"time": at(33), "source": "exchange", "claimed": at(-20)}, "bob", SETTINGS)
    assert block["late_seconds"] == 33 * 60 and block["penalty"] == 1.0 and block["time"] == at(33)
    assert block["due"] == iso(DUE) and "exchange" in block["source"]
    assert any("timestamp.txt says" in f for f in block["flags"])


def test_on_time_by_the_exchanges_clock_within_the_tolerance_is_not_flagged():
    block = lateness({"time": at(-1), "source": "exchange", "claimed": at(-1.5)}, "bob", SETTINGS)
    assert block["late_seconds"] == 0 and block["penalty"] == 0 and "flags" not in block


def test_collected_before_the_due_date_proves_it_on_time():
    block = lateness({"time": at(-10), "source": "collected", "claimed": None}, "bob", SETTINGS)
    assert block["late_seconds"] == 0 and "flags" not in block


def test_collected_after_the_due_date_with_only_the_students_word_is_unknown():
    block = lateness({"time": at(60), "source": "collected", "claimed": at(-5)}, "bob", SETTINGS)
    assert block["late_seconds"] is None and block["penalty"] == 0
    assert any("lateness unknown" in f for f in block["flags"])


def test_a_student_who_says_late_is_late_by_what_they_say_at_most_the_collect_time():
    block = lateness({"time": at(60), "source": "collected", "claimed": at(20)}, "bob", SETTINGS)
    assert block["late_seconds"] == 20 * 60 and block["penalty"] == 1.0


def test_no_due_date_nothing_is_late_and_no_time_is_unknown():
    block = lateness({}, "bob", settings_from({}))
    assert block == {"time": None, "source": "no time recorded", "due": None, "late_seconds": 0.0, "penalty": 0.0}
    block = lateness({}, "bob", SETTINGS)
    assert block["late_seconds"] is None and block["flags"]


def test_an_extension_moves_the_students_due_date():
    settings = settings_from({"submission": {"due": iso(DUE), "late_penalty_points": 1,
                                             "extensions": {"ada": at(24 * 60)}}})
    info = {"time": at(60), "source": "exchange"}
    assert lateness(info, "ada", settings)["late_seconds"] == 0
    assert lateness(info, "bob", settings)["late_seconds"] == 3600


def _submission(tmp_path, student="bob", stamp="2026-12-10 05:10:00.000000 UTC"):
    folder = tmp_path / "submitted" / student / "lesson20"
    folder.mkdir(parents=True)
    (folder / "lesson20.ipynb").write_text("{}")
    (folder / "timestamp.txt").write_text(stamp)
    return tmp_path / "submitted"


def test_what_collect_recorded_counts_only_for_the_folder_it_took(tmp_path):
    submitted = _submission(tmp_path)
    took = submission_fingerprint(submitted / "bob")
    manifest = {"students": {"bob": {"time": at(33), "claimed": at(-20), "fingerprint": took, "flags": [],
                                     "set_aside": [{"reason": "not bob's", "owner": "alice"}]}}}
    got = arrival(submitted, "bob", manifest, took, SETTINGS)
    assert got["source"] == "exchange" and got["time"] == at(33) and got["set_aside"][0]["owner"] == "alice"
    (submitted / "bob" / "lesson20" / "lesson20.ipynb").write_text('{"changed": 1}')  # by hand since
    got = arrival(submitted, "bob", manifest, submission_fingerprint(submitted / "bob"), SETTINGS)
    assert got["source"] == "collected" and got["flags"] and got["set_aside"]


def test_without_collects_record_the_folders_change_time_bounds_it(tmp_path):
    submitted = _submission(tmp_path)
    os.utime(submitted / "bob" / "lesson20" / "lesson20.ipynb", (0, 0))  # a modification time is anyone's to set
    got = arrival(submitted, "bob", read_manifest(submitted), "", SETTINGS)
    changed = datetime.fromisoformat(got["time"].replace("Z", "+00:00"))
    assert abs((changed - datetime.now(timezone.utc)).total_seconds()) < 60  # the change time: now, not 1970
    assert got["claimed"] == "2026-12-10T05:10:00Z"


def test_an_authenticated_exchanges_timestamp_counts_only_when_the_course_says_so():
    info = {"time": at(90), "source": "collected", "claimed": at(10)}
    trusting = settings_from({"submission": {"due": iso(DUE), "exchange_timestamps": True}})
    assert lateness(info, "bob", trusting)["late_seconds"] == 600 and "authenticated" in lateness(info, "bob", trusting)["source"]
    assert lateness(info, "bob", SETTINGS)["late_seconds"] == 600  # by default: the student's own late time
    early = {"time": at(90), "source": "collected", "claimed": at(-10)}
    assert lateness(early, "bob", trusting)["late_seconds"] == 0 and lateness(early, "bob", SETTINGS)["late_seconds"] is None
