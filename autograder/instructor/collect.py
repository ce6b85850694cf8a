"""`python -m autograder collect`: the submissions in nbgrader's exchange, each checked for who made it and
when, copied to SUBMITTED/<student>/lesson20/ without following a link.

nbgrader's exchange trusts the names students give: `nbgrader submit --student=bob` run by alice puts
alice's folder in inbound/ under bob's name, and anyone may write a folder into inbound/ by hand, with any
name and any timestamp.txt (nbgrader#1097). So, for every folder in inbound/:

* who made it is its owner (the kernel's record), never the id in its name: a folder whose owner is not the
  student it names is set aside, with a reason naming both accounts, and the named student's own latest
  genuine submission is collected instead;
* when it arrived is the latest change time of the folder and everything in it, which the kernel sets and
  nobody can set back (timestamp.txt and the folder's name are the student's words); the latest genuine
  submission by that time is collected;
* it holds only regular files and folders of its owner: a symbolic or hard link anywhere, or anything else,
  sets it aside. Every file is opened relative to its folder's descriptor without following a link, so
  whatever is copied is the student's own bytes;
* it must hold nbgrader's timestamp.txt and submission_secret.txt (without the secret no feedback can be
  released to it), and an id that a file name, a state file or the gradebook can hold (staging.usable_id).

What it took and what it set aside go to SUBMITTED/.collect.json (arrival.py reads it for `grade`).
"""
import json
import os
import pwd
import re
import shutil
import stat
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ..items import ASSIGNMENT
from ..text import clip
from .messages import one_line
from .arrival import MANIFEST, parse_stamp, read_manifest
from .files import write_atomic
from .settings import iso
from .staging import EXCHANGE_FILES, submission_fingerprint, usable_id

INBOUND_NAME = re.compile(rf"^(?P<student>.*)\+{re.escape(ASSIGNMENT)}\+(?P<stamp>[^+]*)(?:\+[^+]*)?$")
MAX_FILE_BYTES = 100_000 * 1024   # nbgrader's CourseDirectory.max_file_size (KiB): submit leaves larger files out
MAX_BYTES = 100_000 * 1024        # nbgrader's max_dir_size: the whole submission
MAX_ENTRIES = 500                 # files and folders in one submission
MAX_DEPTH = 8
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK


@dataclass
class Found:
    """One folder in inbound/."""
    name: str
    student: str = ""                 # the id it claims (its name's first part)
    owner: str = ""                   # the account that owns it
    time: datetime = None             # the latest change time of the folder and everything in it
    claimed: datetime = None          # what its timestamp.txt says
    problem: str = ""                 # why it is not a genuine submission of `student` ("" if it is)
    files: list = field(default_factory=list)

    def aside(self) -> dict:
        """The entry that lists it among the submissions set aside."""
        return {"reason": self.problem, "folder": clip(self.name, "name"), "owner": self.owner,
                "claimed_id": clip(self.student, "name"), "time": iso(self.time) if self.time else None}


def account(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def inspect(inbound_fd: int, name: str) -> Found:
    """What the folder `name` in inbound/ is, read through descriptors, links never followed."""
    found = Found(name)
    match = INBOUND_NAME.match(name)
    if not match:
        found.problem = f"its name is not nbgrader's <student>+{ASSIGNMENT}+<time>: not made by nbgrader submit"
        return found
    found.student = match["student"]
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=inbound_fd)
    except OSError as exc:
        found.problem = f"it is not a folder that can be opened ({exc.strerror})"
        return found
    try:
        info = os.fstat(fd)
        found.owner, found.time = account(info.st_uid), _utc(info.st_ctime)
        totals = {"bytes": 0, "entries": 0}
        found.problem = _scan(fd, "", 0, info.st_uid, found, totals)
        if not found.problem:
            found.problem = _genuine(fd, found)
    finally:
        os.close(fd)
    return found


def _scan(dir_fd: int, rel: str, depth: int, uid: int, found: Found, totals: dict) -> str:
    """Walk a folder through descriptors: "" if it holds only its owner's regular files and folders within
    bounds, else what it holds instead. Updates found.time (latest change) and found.files."""
    for name in sorted(os.listdir(dir_fd)):
        path = f"{rel}{name}"
        info = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        found.time = max(found.time, _utc(info.st_ctime))
        totals["entries"] += 1
        if totals["entries"] > MAX_ENTRIES:
            return f"it holds more than {MAX_ENTRIES} files and folders"
        if stat.S_ISLNK(info.st_mode):
            return f"{path!r} in it is a symbolic link (a submission is collected only from files of its own)"
        if info.st_uid != uid:
            return f"{path!r} in it belongs to {account(info.st_uid)}, not to {account(uid)}, who owns the folder"
        if stat.S_ISDIR(info.st_mode):
            if depth + 1 >= MAX_DEPTH:
                return f"{path!r} in it is more than {MAX_DEPTH} folders deep"
            fd = os.open(name, DIR_FLAGS, dir_fd=dir_fd)
            try:
                problem = _scan(fd, path + "/", depth + 1, uid, found, totals)
            finally:
                os.close(fd)
            if problem:
                return problem
        elif stat.S_ISREG(info.st_mode):
            if info.st_nlink > 1:
                return f"{path!r} in it is a hard link (a file with more than one name)"
            totals["bytes"] += info.st_size
            if info.st_size > MAX_FILE_BYTES or totals["bytes"] > MAX_BYTES:
                return f"it is larger than nbgrader's limit of {MAX_BYTES >> 10} KiB"
            found.files.append(path)
        else:
            return f"{path!r} in it is neither a file nor a folder"
    return ""


def _genuine(fd: int, found: Found) -> str:
    """"" if the folder is the named student's own and holds nbgrader's exchange files, else why not."""
    if not usable_id(found.student):
        return "its student id cannot be held (letters, digits and _.@+- only, at most 100 characters)"
    if found.owner != found.student:
        return (f"it was submitted under the id {found.student} by the account {found.owner}, who owns it: "
                f"not {found.student}'s own work")
    for name in EXCHANGE_FILES:
        if name not in found.files:
            return f"it has no {name}: it was not made by nbgrader submit"
    found.claimed = parse_stamp(_read(fd, "timestamp.txt", 256).decode("utf-8", "replace"))
    return ""


def _read(dir_fd: int, name: str, limit: int) -> bytes:
    """Up to `limit` bytes of the regular file `name` in the folder of `dir_fd`, opened without following a
    link; OSError for anything but a regular file with one name."""
    fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_nlink > 1:
            raise OSError(f"{name} is no longer a file of its own")
        return handle.read(limit)


def copy_submission(inbound_fd: int, found: Found, dest: Path):
    """Copy `found`'s files to `dest` (a new folder), each opened afresh without following a link and checked
    again (the student may have changed the folder since it was inspected); OSError if one is no longer
    a regular file of its own."""
    for rel in found.files:
        *folders, name = rel.split("/")
        fds = [os.open(found.name, DIR_FLAGS, dir_fd=inbound_fd)]
        try:
            for folder in folders:
                fds.append(os.open(folder, DIR_FLAGS, dir_fd=fds[-1]))
            data = _read(fds[-1], name, MAX_FILE_BYTES + 1)
        finally:
            for fd in fds:
                os.close(fd)
        if len(data) > MAX_FILE_BYTES:
            raise OSError(f"{rel} grew past nbgrader's limit")
        target = dest.joinpath(*folders, name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def _utc(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, timezone.utc)


def collect(exchange: Path, course_id: str, submitted: Path, say=print) -> dict:
    """Collect every student's latest genuine submission from the exchange into `submitted`; returns the
    manifest written to SUBMITTED/.collect.json."""
    inbound = Path(exchange) / course_id / "inbound"
    submitted = Path(submitted)
    submitted.mkdir(parents=True, exist_ok=True)
    old = read_manifest(submitted)
    inbound_fd = os.open(inbound, DIR_FLAGS)
    try:
        found = [inspect(inbound_fd, name) for name in sorted(os.listdir(inbound_fd))]
        manifest = {"collected": iso(datetime.now(timezone.utc)), "students": {}, "set_aside": []}
        by_student = {}
        for f in found:
            if f.problem and not usable_id(f.student):  # attributable to no student the class can hold
                manifest["set_aside"].append(f.aside())
            else:
                by_student.setdefault(f.student, []).append(f)
        for student, folders in sorted(by_student.items()):
            entry = _take(inbound_fd, student, folders, submitted, old["students"].get(student), say)
            manifest["students"][student] = entry
    finally:
        os.close(inbound_fd)
    write_atomic(submitted / MANIFEST, _dumps(manifest), force=True)
    for entry in manifest["set_aside"]:
        say(f"set aside {one_line(entry['folder'], 60)} (owner {entry['owner'] or 'unknown'}): {entry['reason']}")
    return manifest


def _take(inbound_fd: int, student: str, folders: list, submitted: Path, before, say) -> dict:
    """Collect `student`'s latest genuine folder (by the time that counts); the entry for the manifest."""
    set_aside = [f for f in folders if f.problem]
    genuine = sorted((f for f in folders if not f.problem), key=lambda f: f.time, reverse=True)
    entry = {"set_aside": [], "flags": []}
    dest = submitted / student
    for f in genuine:
        if isinstance(before, dict) and before.get("inbound") == f.name and (dest / ASSIGNMENT).is_dir() \
                and before.get("fingerprint") == submission_fingerprint(dest):
            entry.update({k: before[k] for k in ("inbound", "owner", "time", "claimed", "fingerprint") if k in before})
            break
        work = submitted / f".collect-{os.getpid()}-{student}"
        shutil.rmtree(work, ignore_errors=True)
        try:
            copy_submission(inbound_fd, f, work / ASSIGNMENT)
        except OSError as exc:
            shutil.rmtree(work, ignore_errors=True)
            f.problem = f"it changed while it was collected ({exc.strerror or exc})"
            set_aside.append(f)
            continue
        if dest.exists():
            shutil.rmtree(dest)
        os.replace(work, dest)
        entry.update({"inbound": f.name, "owner": f.owner, "time": iso(f.time),
                      "claimed": iso(f.claimed) if f.claimed else None,
                      "fingerprint": submission_fingerprint(dest)})
        say(f"collected {student}: {f.name} (changed last at {iso(f.time)})")
        break
    else:
        dest.mkdir(exist_ok=True)  # so that `grade` lists the student, with what was set aside
    for f in set_aside:
        entry["set_aside"].append(f.aside())
        say(f"set aside a submission named {student}: {f.problem}")
    return entry


def _dumps(doc) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"
