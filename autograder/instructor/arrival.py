"""Who made a submission and when it arrived: what `collect` recorded, and the time that counts.

`python -m autograder collect` (collect.py) writes SUBMITTED/.collect.json: for each student the exchange
folder it took, its owner, the time that counts (the latest change time of the folder and its files, which
the kernel sets and the student cannot set back), what the student's own timestamp.txt said, and the
submissions set aside as not this student's; and the folders attributable to no usable student id.

`grade` reads it for each student (`arrival`). Where collect did not record the folder (`nbgrader collect`, or
folders copied by hand), the time that counts is the collected folder's change time, which bounds the
submission from above: before the due date that proves it on time; after it, the lateness cannot be known
from a timestamp.txt the student wrote, and the submission is flagged. timestamp.txt alone never decides.
`lateness` turns the time into grades.json's "submission" block with the course's settings (settings.py).
"""
import json
import os
from datetime import datetime, timezone
from pathlib import Path

from ..items import ASSIGNMENT
from ..text import clip
from .settings import Settings, iso
from .staging import read_regular

MANIFEST = ".collect.json"
NBGRADER_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"  # nbgrader's own timestamp.txt


def read_manifest(submitted: Path) -> dict:
    """SUBMITTED/.collect.json as collect wrote it, or an empty one ({"students": {}, "set_aside": []})."""
    try:
        data = json.loads((Path(submitted) / MANIFEST).read_text())
    except (OSError, ValueError):
        return {"students": {}, "set_aside": []}
    if not isinstance(data, dict) or not isinstance(data.get("students"), dict):
        return {"students": {}, "set_aside": []}
    data.setdefault("set_aside", [])
    return data


def parse_stamp(text):
    """A timestamp.txt's content as an aware UTC datetime, or None when it is not a time (garbage, empty)."""
    from nbgrader.utils import parse_utc
    try:
        when = parse_utc(str(text).strip()[:64])
    except (ValueError, OverflowError, TypeError):
        return None
    return when.replace(tzinfo=timezone.utc) if isinstance(when, datetime) else None


def read_stamp(folder: Path):
    """The time in folder/timestamp.txt (read without following a link), or None."""
    try:
        return parse_stamp(read_regular(Path(folder) / "timestamp.txt")[:256].decode("utf-8", "replace"))
    except OSError:
        return None


def changed_at(folder: Path):
    """The latest change time (ctime) of `folder` and everything under it, links not followed; None if absent."""
    latest = None
    for root, dirs, names in os.walk(folder, followlinks=False):
        for name in [".", *dirs, *names]:
            try:
                ctime = os.lstat(os.path.join(root, name)).st_ctime
            except OSError:
                continue
            latest = ctime if latest is None else max(latest, ctime)
    return datetime.fromtimestamp(latest, timezone.utc) if latest is not None else None


def arrival(submitted: Path, student: str, manifest: dict, fingerprint: str, settings: Settings) -> dict:
    """What the student's record keeps of who submitted and when: {"time", "source", "claimed", "flags",
    "set_aside"}; `fingerprint`: the submission's now (staging.submission_fingerprint), which the manifest's
    must match for its record to describe this folder."""
    entry = manifest["students"].get(student) if isinstance(manifest.get("students"), dict) else None
    folder = Path(submitted) / student
    claimed = read_stamp(folder / ASSIGNMENT)
    set_aside = [clip_entry(e) for e in (entry or {}).get("set_aside", []) if isinstance(e, dict)]
    if isinstance(entry, dict) and entry.get("fingerprint") == fingerprint and entry.get("time"):
        flags = [clip(f, "note") for f in entry.get("flags", []) if isinstance(f, str)]
        return {"time": entry["time"], "source": "exchange", "claimed": entry.get("claimed"), "flags": flags,
                "set_aside": set_aside}
    bound = changed_at(folder / ASSIGNMENT) if (folder / ASSIGNMENT).is_dir() else None
    flags = []
    if entry is not None:  # collect recorded another folder: this one was changed or replaced since
        flags.append("not the folder `collect` took: changed since, by hand or by nbgrader collect")
    if bound is None:
        return {"time": None, "source": "none", "claimed": iso(claimed) if claimed else None, "flags": flags,
                "set_aside": set_aside}
    return {"time": iso(bound), "source": "collected", "claimed": iso(claimed) if claimed else None,
            "flags": flags, "set_aside": set_aside}


def clip_entry(entry: dict) -> dict:
    """A set-aside entry as grades.json keeps it: its strings clipped."""
    return {str(k)[:40]: clip(v, "reason") if isinstance(v, str) else v for k, v in list(entry.items())[:8]}


def lateness(info: dict, student: str, settings: Settings) -> dict:
    """grades.json's "submission" block: {"time", "source", "due", "late_seconds", "penalty"} (and "flags" when
    something needs a person's eye), from the record's `info` (arrival) and the course's settings now."""
    info = info if isinstance(info, dict) else {}
    if settings.exchange_timestamps and info.get("source") != "exchange" and info.get("claimed"):
        info = {**info, "time": info["claimed"], "source": "authenticated"}  # written by ngshare's server, say
    due = settings.due_for(student)
    time = _time(info.get("time"))
    claimed = _time(info.get("claimed"))
    flags = list(info.get("flags", []))
    block = {"time": info.get("time"), "source": SOURCES.get(info.get("source"), SOURCES["none"]),
             "due": iso(due) if due else None, "late_seconds": None, "penalty": 0.0}
    if claimed and time and info.get("source") == "exchange":
        skew = abs((claimed - time).total_seconds())
        if skew > settings.clock_tolerance.total_seconds() and not any("timestamp.txt" in f for f in flags):
            flags.append(f"timestamp.txt says {iso(claimed)}, {skew:.0f} s from the time that counts")
    if due is None:
        block["late_seconds"] = 0.0
    elif time is None:
        flags.append("no time the student cannot write: lateness unknown")
    elif info.get("source") in ("exchange", "authenticated") or time <= due:
        block["late_seconds"] = max(0.0, round((time - due).total_seconds(), 1))
    elif claimed and claimed > due:  # collected after the due date, and the student's own time says late too
        block["late_seconds"] = round((min(claimed, time) - due).total_seconds(), 1)
        block["source"] += "; the student's timestamp.txt (later than the due date)"
    else:
        flags.append(f"collected {(time - due).total_seconds():.0f} s after the due date, and only the "
                     "student's timestamp.txt says when it was submitted: lateness unknown")
    block["penalty"] = settings.penalty(block["late_seconds"] or 0.0)
    if flags:
        block["flags"] = flags
    return block


SOURCES = {
    "exchange": "the exchange's inbound folder (its change time), recorded by `python -m autograder collect`",
    "collected": "when the submission was collected (its folder's change time): nbgrader collect keeps no "
                 "time the student cannot write",
    "authenticated": "timestamp.txt, as an authenticated exchange wrote it (course.toml: exchange_timestamps)",
    "none": "no time recorded",
}


def _time(text):
    if not isinstance(text, str):
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


def nbgrader_stamp(text) -> str:
    """The time that counts, as nbgrader's timestamp.txt writes it ("" when there is none)."""
    when = _time(text)
    return when.astimezone(timezone.utc).strftime(NBGRADER_FORMAT) if when else ""
