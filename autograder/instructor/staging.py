"""Which students a `grade` run takes, and a clean copy of each one's submission for nbgrader.

Staging never runs student code: it refuses a submission holding a link (links.py), picks the
notebook, checks its structure is within bounds (notebook_bounds.py) before it parses it, checks it
can be read, and copies it with nbgrader's own exchange files to a folder nbgrader may use. It reads
every file through a descriptor opened without following links.
"""
import fnmatch
import hashlib
import json
import mmap
import os
import re
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from nbformat.v4.nbbase import random_cell_id

from ..attachments import beside
from ..cells import parse_notebook
from ..items import ASSIGNMENT, NOTEBOOK_GLOB
from ..structure import CELL_ID
from .messages import beyond_bound, beyond_cost, duplicate_cell_id, linked_path
from .links import first_link, link_kind, mount_points
from .notebook_bounds import Bounds, measure, without_outputs

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_NOTEBOOK_BYTES = 20 * 2**20        # above this, the feedback notes that the saved outputs were left out
MAX_RAW_NOTEBOOK_BYTES = 256 * 2**20   # the file as submitted, saved plots and all: above this it is not read
# what reading a notebook without its outputs may cost (notebook_bounds.Measured.cost: its bytes, its text and
# its strings once parsed): 13 MiB of plain text, 5 of text with an astral character (4 bytes a character)
MAX_READ_COST = 40 * 2**20
# bounds on a notebook's structure, checked on its bytes before it is parsed (the lesson's notebook: 70 cells,
# 231 strings in its longest source, about 1,900 lines, 6 levels deep)
MAX_CELLS = 2_000
MAX_SOURCE_STRINGS = 20_000   # strings in one list: a cell's source, an output's text, one per line
MAX_LINES = 200_000           # strings in lists, and line breaks in cell sources, in the whole notebook
MAX_JSON_DEPTH = 64
NOTEBOOK_BOUNDS = Bounds(MAX_CELLS, MAX_SOURCE_STRINGS, MAX_LINES, MAX_JSON_DEPTH)
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # written by `nbgrader submit` and `collect`
NOTEBOOK = f"{ASSIGNMENT}.ipynb"


@dataclass
class Staged:
    """What staging found: notes for people, and the problem that leaves nothing to grade ("" if none)."""
    notes: list = field(default_factory=list)
    problem: str = ""
    answers: dict = field(default_factory=dict)  # the written answers' hashes as last graded (answers.py)


def usable_id(student: str) -> bool:
    return bool(STUDENT_ID.match(student))


def select_students(submitted: Path, patterns=None, shard=None) -> list:
    """Student folders under `submitted`, filtered by glob patterns and by a shard (i, n), 1-based.

    A student's shard depends on their id alone, so every machine agrees without talking.
    """
    names = sorted(p.name for p in submitted.iterdir()  # a link is selected, to be refused with a reason
                   if (p.is_dir() or p.is_symlink()) and not p.name.startswith("."))
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]
    if shard:
        index, count = shard
        names = [n for n in names if int(hashlib.sha256(n.encode()).hexdigest(), 16) % count == index - 1]
    return names


def parse_shard(text: str):
    m = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard takes i/n with 1 <= i <= n, for example 2/5; got {text!r}")
    return int(m.group(1)), int(m.group(2))


def submission_fingerprint(folder: Path) -> str:
    """A hash of every path under `folder` (itself included) and what it is: a regular file's bytes, a link's
    kind and target. No link is followed, so a link changes the hash, and so does undoing it."""
    h = hashlib.sha256()
    folder = Path(folder)
    mounted = mount_points()
    parent_dev = os.lstat(folder.parent).st_dev if os.path.lexists(folder) else None
    for path, dev in _every_path(folder, parent_dev):
        kind = link_kind(path, dev, mounted)
        h.update(f"{path.relative_to(folder.parent).as_posix()}\0{kind}\0".encode())
        if kind == "symbolic link":
            h.update(os.fsencode(os.readlink(path)))
        elif path.is_file() and not path.is_symlink():
            h.update(_file_hash(path))
    return h.hexdigest()[:16]


def _every_path(folder: Path, parent_dev):
    """(path, its folder's device) for `folder` and everything under it, sorted, links not followed."""
    if parent_dev is None:
        return
    yield folder, parent_dev
    if folder.is_symlink() or not folder.is_dir():
        return
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        dev = os.lstat(root).st_dev
        for name in sorted(dirs + names):
            yield Path(root) / name, dev


def _file_hash(path: Path) -> bytes:
    h = hashlib.sha256()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b"unreadable"
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b"not a file"
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            h.update(chunk)
    return h.digest()


def read_regular(path: Path) -> bytes:
    """The bytes of a regular file, opened without following a link (OSError for a link or anything else)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path.name} is not a regular file")
        return handle.read()


def _measured(path: Path) -> tuple:
    """(the notebook's notebook_bounds.Measured, its bytes without its outputs, or b"" if it passes a bound or
    costs too much). It is measured on the file mapped in memory, whose pages are given back as the scan passes
    them, so a notebook of any size costs a few MiB, and one that passes a bound is never read past where it
    did; its outputs are cut out of the bytes, never parsed (nbgrader clears them anyway)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb"):  # closes fd
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path.name} is not a regular file")
        if info.st_size == 0:
            return measure(b"", NOTEBOOK_BOUNDS), b""
        with mmap.mmap(fd, 0, access=mmap.ACCESS_READ) as mapped:
            def release(offset: int):
                mapped.madvise(mmap.MADV_DONTNEED, 0, offset - offset % mmap.PAGESIZE)
            found = measure(mapped, NOTEBOOK_BOUNDS, release if hasattr(mapped, "madvise") else None)
            if found.bound or found.cost > MAX_READ_COST:
                return found, b""
            return found, without_outputs(mapped, found.outputs)


def unique_cell_ids(doc: dict) -> list:
    """Give each cell whose id an earlier cell has a new one, in place; return a note for each.

    nbformat would give it one too, silently, when nbgrader reads the notebook: this says so. An id that
    is not an id at all is RepairStructure's (structure.py)."""
    cells = doc.get("cells") if isinstance(doc, dict) else None
    seen, notes = {}, []
    for index, cell in enumerate(cells if isinstance(cells, list) else []):
        cell_id = cell.get("id") if isinstance(cell, dict) else None
        if not isinstance(cell_id, str) or not CELL_ID.fullmatch(cell_id):
            continue
        if cell_id in seen:
            new = random_cell_id()
            while new in seen:
                new = random_cell_id()
            cell["id"] = new
            notes.append(duplicate_cell_id(index, cell_id, seen[cell_id]))
            cell_id = new
        seen[cell_id] = index
    return notes


def staged_notebook(staging: Path, student: str) -> Path:
    return staging / student / ASSIGNMENT / NOTEBOOK


def stage(student: str, submitted: Path, staging: Path, stamp: str = "") -> Staged:
    """Copy the student's notebooks to a clean folder nbgrader may use. `stamp`: the time that counts, in
    nbgrader's timestamp.txt format (arrival.nbgrader_stamp), written as the staged timestamp.txt in place of
    the student's own ("" for none): nbgrader's gradebook then records a time the student could not write,
    and a garbage or missing timestamp.txt cannot fail the submission."""
    src = submitted / student / ASSIGNMENT
    dest = staging / student / ASSIGNMENT
    shutil.rmtree(staging / student, ignore_errors=True)
    if not usable_id(student):
        return Staged(problem=f"the folder name {student!r} is not a usable student id (letters, digits and _.@+- only)")
    linked, kind = first_link(submitted, student, ASSIGNMENT)
    if linked:  # nothing of it is read: the link could lead to the instructor's solution
        return Staged(problem=linked_path(linked, kind))
    dest.mkdir(parents=True)
    if not src.is_dir():
        return Staged(problem=f"no {ASSIGNMENT}/ folder in the submission")
    notebooks = sorted(p for p in src.glob(NOTEBOOK_GLOB) if p.is_file() and not p.is_symlink())
    notes, problems = [], []
    if not (src / NOTEBOOK).is_file() and len(notebooks) == 1:
        notes.append(f"graded {notebooks[0].name} as {NOTEBOOK}")
        notebooks = [(notebooks[0], NOTEBOOK)]
    else:
        notebooks = [(p, p.name) for p in notebooks]
    for path, name in notebooks:
        data, problem = _checked_notebook(path, notes)
        if problem:
            problems.append(problem)
        else:
            (dest / name).write_bytes(data)
    files, left_out = beside(src, ignore=EXCHANGE_FILES)  # helper modules and data files, as nbgrader would run them
    for name, data in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    notes += left_out
    secret = src / "submission_secret.txt"  # nbgrader's own: release_feedback names the page with it
    if secret.is_file() and not secret.is_symlink() and secret.stat().st_size < 4096:
        (dest / secret.name).write_bytes(read_regular(secret))
    if stamp:
        (dest / "timestamp.txt").write_text(stamp)
    if not (dest / NOTEBOOK).exists():
        problems.append(f"no readable {NOTEBOOK} in the submission" if notebooks else f"no notebook in {ASSIGNMENT}/")
    return Staged(notes, "; ".join(problems))


def _checked_notebook(path: Path, notes: list) -> tuple:
    """(the bytes to stage, "") for a notebook that can be graded, else (b"", why not); notes get what was
    changed. Its structure and its cost once read are measured on the bytes before anything parses them, and
    its outputs are left out unparsed."""
    size = os.lstat(path).st_size
    if size > MAX_RAW_NOTEBOOK_BYTES:
        return b"", (f"{path.name} is larger than {MAX_RAW_NOTEBOOK_BYTES >> 20} MiB, saved outputs included: "
                     "clear its outputs (Edit > Clear Outputs of All Cells), save and submit again")
    try:
        found, data = _measured(path)
    except OSError as exc:
        return b"", f"{path.name} could not be read ({exc.strerror or exc})"
    if found.bound:
        return b"", beyond_bound(path.name, *found.bound[1:])
    if found.cost > MAX_READ_COST:
        return b"", beyond_cost(path.name, found.cost, MAX_READ_COST)
    try:
        parse_notebook(data, path)  # only to check it is a notebook: its parse is let go at once
    except ValueError as exc:
        return b"", str(exc)
    if len(set(found.ids)) < len(found.ids):  # a cell id repeated: renumbered as nbformat would, and said
        doc = json.loads(data)
        notes += unique_cell_ids(doc)
        data = json.dumps(doc, ensure_ascii=False, indent=1).encode()
    if size > MAX_NOTEBOOK_BYTES and found.outputs:
        notes.append(f"{path.name}'s saved outputs ({size >> 20} MiB) were left out, as nbgrader clears them")
    return data, ""
