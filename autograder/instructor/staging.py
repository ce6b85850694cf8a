"""Which students a `grade` run takes, and a clean copy of each one's submission for nbgrader.

Staging never runs student code: it picks the notebook, checks it can be read, and copies it
with nbgrader's own exchange files to a folder nbgrader may use.
"""
import fnmatch
import hashlib
import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from ..attachments import beside
from ..cells import read_notebook
from ..items import ASSIGNMENT, NOTEBOOK_GLOB

STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_NOTEBOOK_BYTES = 20 * 2**20        # a notebook without its outputs (nbgrader clears them anyway)
MAX_RAW_NOTEBOOK_BYTES = 256 * 2**20   # the file as submitted, saved plots and all: above this it is not read
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # written by `nbgrader submit` and `collect`
NOTEBOOK = f"{ASSIGNMENT}.ipynb"


@dataclass
class Staged:
    """What staging found: notes for people, and the problem that leaves nothing to grade ("" if none)."""
    notes: list = field(default_factory=list)
    problem: str = ""


def usable_id(student: str) -> bool:
    return bool(STUDENT_ID.match(student))


def select_students(submitted: Path, patterns=None, shard=None) -> list:
    """Student folders under `submitted`, filtered by glob patterns and by a shard (i, n), 1-based.

    A student's shard depends on their id alone, so every machine agrees without talking.
    """
    names = sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
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
    h = hashlib.sha256()
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            h.update(str(path.relative_to(folder)).encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def without_outputs(path: Path) -> bytes:
    """The notebook's JSON with every code cell's outputs and execution count cleared, as nbgrader's
    ClearOutput step would clear them."""
    nb = json.loads(path.read_bytes())
    for cell in nb.get("cells", []) if isinstance(nb, dict) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            cell["outputs"], cell["execution_count"] = [], None
    return json.dumps(nb, ensure_ascii=False, indent=1).encode()


def staged_notebook(staging: Path, student: str) -> Path:
    return staging / student / ASSIGNMENT / NOTEBOOK


def stage(student: str, submitted: Path, staging: Path) -> Staged:
    """Copy the student's notebooks to a clean folder nbgrader may use."""
    src = submitted / student / ASSIGNMENT
    dest = staging / student / ASSIGNMENT
    shutil.rmtree(staging / student, ignore_errors=True)
    if not usable_id(student):
        return Staged(problem=f"the folder name {student!r} is not a usable student id (letters, digits and _.@+- only)")
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
        size = path.stat().st_size
        if size > MAX_RAW_NOTEBOOK_BYTES:
            problems.append(f"{path.name} is larger than {MAX_RAW_NOTEBOOK_BYTES >> 20} MiB, saved outputs included: "
                            "clear its outputs (Edit > Clear Outputs of All Cells), save and submit again")
            continue
        try:
            read_notebook(path)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        if size <= MAX_NOTEBOOK_BYTES:
            shutil.copyfile(path, dest / name)
            continue
        stripped = without_outputs(path)
        if len(stripped) > MAX_NOTEBOOK_BYTES:
            problems.append(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB even without its outputs")
            continue
        notes.append(f"{path.name}'s saved outputs ({size >> 20} MiB) were left out, as nbgrader clears them")
        (dest / name).write_bytes(stripped)
    files, left_out = beside(src, ignore=EXCHANGE_FILES)  # helper modules and data files, as nbgrader would run them
    for name, data in files.items():
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    notes += left_out
    for name in EXCHANGE_FILES:  # nbgrader's own: late penalties, and release_feedback's check
        path = src / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 4096:
            shutil.copyfile(path, dest / name)
    if not (dest / NOTEBOOK).exists():
        problems.append(f"no readable {NOTEBOOK} in the submission" if notebooks else f"no notebook in {ASSIGNMENT}/")
    return Staged(notes, "; ".join(problems))
