"""One class, graded once for the run by `python -m autograder grade` (a plugin of tests/conftest.py).

The CLI tests (tests/integration/test_grade_cli.py) and the browser tests of the instructor's pages
(tests/browser: test_report, test_instructor, test_hostile_html) read the same OUT folder. Its first
run is killed part-way, as a scheduler, the OOM killer or a power cut would, so the grades every test
reads come from a resumed run. A test that changes the folder (formgrader's scores, `export`, a
resubmission) works on a copy: `graded_copy`.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from autograder.items import AUTO_ITEMS, MANUAL_ITEMS
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB

FULL = float(sum(item.points for item in AUTO_ITEMS))  # what the reference scores before manual grading
HOSTILE_ID = "<img src=x onerror=alert(1)>"  # a folder name: refused for grading, and shown as text
# bob's written answers, which tests/browser/test_instructor.py grades in formgrader
ANSWERS = {item.id: f"Bob's answer to {item.title.split(':')[0]}: fp16 runs out of range." for item in MANUAL_ITEMS}
BUGGY = ["cy", "dee"]  # the two who hand in the same mistake (the report groups their messages)


def _answered_student_notebook():
    nb = nbformat.read(STUDENT_NB, as_version=4)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if grade_id in ANSWERS:
            cell.source = ANSWERS[grade_id]
    return nb


def _hostile_html():
    from tests.submissions.hostile_html import hostile_notebook
    return hostile_notebook()


# student folder -> what they handed in: a file to copy, text, a link, a corpus variant or a notebook to build
CLASS = {
    "ref": {"lesson20/lesson20.ipynb": SOLUTION_NB,  # as `nbgrader collect` leaves it
            "lesson20/timestamp.txt": "2026-01-15 09:30:00.000000 UTC",
            "lesson20/submission_secret.txt": "0123456789abcdef"},
    "stub": {"lesson20/lesson20.ipynb": STUDENT_NB},
    "renamed": {"lesson20/lesson20 (1).ipynb": SOLUTION_NB},
    "x-broken": {"lesson20/lesson20.ipynb": "truncated"},
    "x-nofolder": {"lesson-20/lesson20.ipynb": SOLUTION_NB},
    "bad id": {"lesson20/lesson20.ipynb": SOLUTION_NB},
    "=HYPERLINK(1)": {"lesson20/lesson20.ipynb": SOLUTION_NB},  # a formula, were it a spreadsheet's cell
    "linked": {"lesson20": ("symlink", SOLUTION_NB.parent)},  # the instructor's solutions, through a link
    "ada": {"lesson20/lesson20.ipynb": ("variant", "reference")},
    "cy": {"lesson20/lesson20.ipynb": ("variant", "step_no_loss_scaling")},
    "dee": {"lesson20/lesson20.ipynb": ("variant", "step_no_loss_scaling")},
    "dan": {"lesson20/lesson20.ipynb": ("variant", "stub")},
    HOSTILE_ID: {"lesson20/lesson20.ipynb": ("variant", "reference")},
    "bob": {"lesson20/lesson20.ipynb": ("notebook", _answered_student_notebook)},  # stubs, written answers
    "mallory": {"lesson20/lesson20.ipynb": ("notebook", _hostile_html)},  # every HTML payload at once
}
PARTIAL = None  # a total above 0 and below full marks
EXPECTED = {  # student -> (status, total, words in the reason)
    "ref": ("graded", FULL, ""),
    "stub": ("graded", 0.0, ""),
    "renamed": ("graded", FULL, "graded lesson20 (1).ipynb as lesson20.ipynb"),
    "x-broken": ("failed", 0.0, "could not be read as a Jupyter notebook"),
    "x-nofolder": ("failed", 0.0, "no lesson20/ folder"),
    "bad id": ("failed", 0.0, "not a usable student id"),
    "=HYPERLINK(1)": ("failed", 0.0, "not a usable student id"),
    "linked": ("failed", 0.0, "'linked/lesson20' is a symbolic link"),
    "ada": ("graded", FULL, ""),
    "cy": ("graded", PARTIAL, ""),
    "dee": ("graded", PARTIAL, ""),
    "dan": ("graded", 0.0, ""),
    HOSTILE_ID: ("failed", 0.0, "not a usable student id"),
    "bob": ("graded", 0.0, ""),
    "mallory": ("graded", FULL, ""),  # nothing of the payloads is code: the reference's code scores in full
}
STUBS = sorted(s for s, (status, total, _) in EXPECTED.items() if status == "graded" and total == 0.0)


def write_class(folder: Path, students=CLASS) -> Path:
    from tests.submissions import make_submission
    for student, files in students.items():
        for name, source in files.items():
            path = folder / student / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(source, tuple) and source[0] == "symlink":
                path.symlink_to(source[1], target_is_directory=True)
            elif isinstance(source, tuple):  # ("variant", name) or ("notebook", builder)
                nb = make_submission(source[1]) if source[0] == "variant" else source[1]()
                nbformat.write(nb, str(path))
            elif source == "truncated":
                path.write_bytes(SOLUTION_NB.read_bytes()[:3000])
            elif isinstance(source, str):
                path.write_text(source)
            else:
                shutil.copyfile(source, path)
    return folder


def grade_command(submitted, out, *extra) -> list:
    return [sys.executable, "-m", "autograder", "grade", str(submitted), "--out", str(out), "--quiet", *extra]


# the course, for a command run from another folder (the instructor commands find it from the working folder)
COURSE_ENV = {**os.environ, "LESSON20_COURSE": str(ROOT)}


def grade(submitted, out, *extra, cwd=None) -> str:
    """Run the command to the end; return what it printed."""
    proc = subprocess.run(grade_command(submitted, out, *extra), cwd=cwd or ROOT, capture_output=True,
                          text=True, timeout=600, env=COURSE_ENV)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout + proc.stderr


def counts(output: str) -> tuple:
    """(graded now, unchanged) from the command's first line."""
    m = re.search(r"(\d+) students selected: grading (\d+), (\d+) unchanged", output)
    assert m, output
    return int(m.group(2)), int(m.group(3))


def descendants(pid: int) -> set:
    """Every process below `pid`, from the parent ids in /proc."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents[int(stat.parent.name)] = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = set(), [pid]
    while todo:
        parent = todo.pop()
        kids = {child for child, ppid in parents.items() if ppid == parent} - found
        found |= kids
        todo += kids
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory) -> dict:
    """The class graded into OUT by a run killed part-way, then resumed: {"base", "submitted", "out", "before"
    (state files of the killed run), "resumed" (what the resumed run printed), "helpers" and "leftover" (the
    killed run's processes, and those that outlived it), "grades" (grades.json)}. Read it; change a copy."""
    base = tmp_path_factory.mktemp("graded_class")
    submitted, out = write_class(base / "submitted"), base / "out"
    first = subprocess.Popen(grade_command(submitted, out, "--jobs", "2"), cwd=base, env=COURSE_ENV,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 300
    sandboxed = [out / "state" / f"{s}.json" for s in ("ref", "stub", "renamed")]
    while not any(p.exists() for p in sandboxed) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # until a student graded in a worker process (with a sandbox) is done
    helpers = descendants(first.pid)
    first.send_signal(signal.SIGKILL)
    first.wait()
    before = {p.name: p.read_bytes() for p in (out / "state").glob("*.json")}
    time.sleep(3)
    leftover = {pid for pid in helpers if alive(pid)}
    resumed = grade(submitted, out, "--jobs", "2", cwd=base)  # from another folder: paths must not matter
    return {"base": base, "submitted": submitted, "out": out, "before": before, "resumed": resumed,
            "leftover": leftover, "helpers": helpers,
            "grades": json.loads((out / "grades.json").read_text())}


@pytest.fixture
def graded_copy(graded_class, tmp_path) -> Path:
    """A copy of the graded class's OUT, for a test that changes it."""
    out = tmp_path / "out"
    shutil.copytree(graded_class["out"], out)
    return out
