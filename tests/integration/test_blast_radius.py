"""Blast radius of one: a student whose grading process dies or overruns costs no other student anything.

`python -m autograder grade --jobs 2` runs inside a small memory cgroup (root, cgroup v1 or v2) on one
class: three students who hand in the reference, beside a student whose grading process is killed at each
try, a memory bomb and a student whose grading process hangs. A grading process that dies is charged to the
student it held, and only to them; a student past the per-student deadline is recorded as "timeout"; the
three keep full marks throughout, and the runs after it grade again only what they should.
"""
import contextlib
import json
import os
import subprocess
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from autograder.limits import Limits
from autograder.instructor.grade import TEST_FAULT
from autograder.items import AUTO_ITEMS
from autograder.sandbox.isolation import remove_cgroup
from tests.submissions import ASSIGNMENT, Append, apply_edit, make_submission
from tests.integration.test_grade_cli import counts, grade_command

pytestmark = pytest.mark.slow
FULL = float(sum(item.points for item in AUTO_ITEMS))
INNOCENTS = ("alice", "bob", "carol")  # each hands in the reference
# the students who bring trouble are named "a-…": graded first, so that each time a grading process dies
# the innocents are being graded beside it or wait their turn (a pool crash would charge them all), and the
# one who hangs holds a grading process from the start while the rest are graded beside it
SLOW = "a-slow"
CGROUP_BYTES = 3 * 2**30
CGROUPS = Path("/sys/fs/cgroup")

# Every answer the sandbox hands back becomes a view that claims 2**29 floats over one float of storage:
# a few bytes through the pipe, and 4 GiB in a grading process that casts it before comparing shapes.
MEMORY_BOMB = '''
def _claims_everything(self, *args, **kwargs):
    return torch.zeros(1).expand(2 ** 29)


torch.Tensor.contiguous = _claims_everything
'''


@contextlib.contextmanager
def memory_cgroup(limit: int):
    """A fresh memory cgroup of `limit` bytes; yields the command prefix that runs a command inside it."""
    name = f"lesson20-blast-test-{uuid.uuid4().hex[:8]}"
    if (CGROUPS / "cgroup.controllers").exists():  # v2
        folder, knobs = CGROUPS / name, {"memory.max": limit, "memory.swap.max": 0}
    else:
        folder, knobs = CGROUPS / "memory" / name, {"memory.limit_in_bytes": limit,
                                                     "memory.memsw.limit_in_bytes": limit}
    try:
        folder.mkdir()
    except OSError as exc:
        pytest.skip(f"cannot create a memory cgroup here ({folder}: {exc}); this test needs root and cgroups")
    try:
        for knob, value in knobs.items():
            if (folder / knob).exists():
                (folder / knob).write_text(str(value))
        if not (folder / next(iter(knobs))).exists():
            pytest.skip(f"{folder} has no memory controller")
        yield folder, ["/bin/sh", "-c", f'echo $$ > {folder / "cgroup.procs"} && exec "$@"', "sh"]
    finally:
        remove_cgroup(folder, seconds=10)


def oom_kills(folder: Path) -> int:
    """How many processes the OOM killer took in this cgroup (v1 memory.oom_control, v2 memory.events)."""
    for knob in ("memory.oom_control", "memory.events"):
        if (folder / knob).exists():
            for line in (folder / knob).read_text().splitlines():
                if line.startswith("oom_kill "):
                    return int(line.split()[1])
    return -1


def write_students(folder: Path, notebooks: dict) -> Path:
    for student, nb in notebooks.items():
        path = folder / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(path))
    return folder


def grade_in(prefix: list, submitted: Path, out: Path, *extra, fault: str = "") -> tuple:
    """Run `grade` to the end under `prefix`; (grades.json's students, what it printed, seconds)."""
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULT}
    if fault:
        env[TEST_FAULT] = fault
    started = time.monotonic()
    proc = subprocess.run(prefix + grade_command(submitted, out, *extra), capture_output=True, text=True,
                          timeout=900, env=env)
    seconds = time.monotonic() - started
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "grades.json").read_text())["students"], proc.stdout + proc.stderr, seconds


def next_run_counts(rows_before: dict) -> tuple:
    """(graded, unchanged) that the next run must print when one student of the class has to be graded again:
    and the bomb too, if it took its grading process down in the run before ("error" is our fault)."""
    graded = 1 + (rows_before["a-bomb"]["status"] == "error")
    return graded, len(rows_before) - graded


def assert_full_marks(rows: dict, students):
    for student in students:
        row = rows[student]
        assert (row["status"], row["total"]) == ("graded", FULL), (student, row)


def test_the_sandbox_is_the_oom_killers_first_choice():
    from autograder.sandbox import Sandbox
    cell = {"index": 0, "label": "cell 0", "solution": True,
            "source": 'raise RuntimeError("oom_score_adj=" + open("/proc/self/oom_score_adj").read().strip())'}
    sandbox = Sandbox([cell])
    try:
        problems = sandbox.start()
    finally:
        sandbox.close()
    assert [p["message"] for p in problems] == ["oom_score_adj=1000"], problems


@pytest.fixture(scope="module")
def troubled(tmp_path_factory):
    """One class graded by `grade --jobs 2` in a small memory cgroup: the three innocents beside a student whose
    grading process is SIGKILLed at each try, a memory bomb, and a student whose grading process hangs past
    the deadline. One run for the three kinds of trouble, as a class would bring them; the tests below read it."""
    base = tmp_path_factory.mktemp("blast")
    reference = make_submission("reference")
    bomb = make_submission("reference")
    apply_edit(bomb, Append("master_weights", MEMORY_BOMB))
    submitted = write_students(base / "submitted", {**{s: reference for s in INNOCENTS}, "a-victim": reference,
                                                    "a-bomb": bomb, SLOW: reference})
    # seconds per item (the reference still grades in full), and for starting the sandbox and writing the
    # feedback: the deadline follows from the two, 6 * 5 + 20 s, not the default's four minutes; --memory-mb
    # is larger than the whole cgroup
    timeout, startup = 5, 20
    limits = ("--jobs", "2", "--timeout", str(timeout), "--startup-seconds", str(startup), "--memory-mb", "4096")
    out = base / "out"
    with memory_cgroup(CGROUP_BYTES) as (folder, prefix):
        rows, _, seconds = grade_in(prefix, submitted, out, *limits, fault=f"a-victim:kill,{SLOW}:hang")
        kills = oom_kills(folder)
        page = (out / "feedback" / SLOW / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
        print(f"\n[blast radius] 3 reference students beside a grading process SIGKILLed at each try, a memory "
              f"bomb and a hang, --jobs 2 in a {CGROUP_BYTES / 2**30:g} GiB cgroup: {seconds:.0f} s, {kills} OOM "
              f"kills; bomb {rows['a-bomb']['status']} {rows['a-bomb']['total']:g}: {rows['a-bomb']['reason'][:200]}")
        # the same class again, without the faults: what it grades again, and what it leaves
        again, again_output, _ = grade_in(prefix, submitted, out, *limits)
        # the student who hung hands in again
        nb = make_submission("reference")
        nb.cells[0].source += "\n"
        write_students(submitted, {SLOW: nb})
        resubmitted, resubmitted_output, _ = grade_in(prefix, submitted, out, *limits)
    return {"rows": rows, "page": page, "again": (again, counts(again_output)),
            "resubmitted": (resubmitted, counts(resubmitted_output)),
            "deadline": Limits.for_timeout(timeout, startup_seconds=startup).student_seconds}


def test_the_innocents_keep_full_marks_beside_every_kind_of_trouble(troubled):
    assert_full_marks(troubled["rows"], INNOCENTS)
    assert_full_marks(troubled["again"][0], INNOCENTS)


def test_a_grading_process_that_dies_costs_only_its_student(troubled):
    victim = troubled["rows"]["a-victim"]
    assert victim["status"] == "error" and victim["total"] == 0.0, victim
    assert "grading process died 2 times (killed by SIGKILL)" in victim["reason"], victim
    # "error" is our fault: the next run grades the victim again
    rows, printed = troubled["again"]
    assert printed == next_run_counts(troubled["rows"])
    assert_full_marks(rows, ("a-victim",))


def test_a_memory_bomb_beside_three_students_in_a_small_cgroup(troubled):
    row = troubled["rows"]["a-bomb"]
    assert row["total"] < FULL and row["reason"], row
    if row["status"] == "error":  # the bomb took its own grading process down, twice
        assert "grading process died" in row["reason"], row


def test_a_student_past_the_deadline_is_recorded_as_timeout(troubled):
    deadline, rows = troubled["deadline"], troubled["rows"]
    slow = rows[SLOW]
    assert slow["status"] == "timeout" and slow["total"] == 0.0, slow
    assert f"deadline of {deadline:g} s per student" in slow["reason"], slow
    assert "could not be graded" in troubled["page"] and f"{deadline:g} s" in troubled["page"]
    # like "failed", a timeout is the submission's: not graded again until it changes
    assert troubled["again"][0][SLOW]["status"] == "timeout"
    rows, printed = troubled["resubmitted"]
    assert printed == next_run_counts(troubled["again"][0])
    assert rows[SLOW]["status"] == "graded", rows[SLOW]
