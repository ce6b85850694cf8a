"""Blast radius of one: a student whose grading process dies or overruns costs no other student anything.

`python -m autograder grade --jobs 2` runs inside a small memory cgroup (root, cgroup v1 or v2),
beside three students who hand in the reference. A grading process that dies is charged to the
student it held, and only to them; a student past the per-student deadline is recorded as
"timeout"; the three keep full marks throughout.
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
# the student who takes a grading process down is named "a-…": graded first, so that each time it dies
# the innocents are being graded beside it or wait their turn (a pool crash would charge them all)
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


def test_a_grading_process_that_dies_costs_only_its_student(tmp_path):
    reference = make_submission("reference")
    submitted = write_students(tmp_path / "submitted", {s: reference for s in (*INNOCENTS, "a-victim")})
    out = tmp_path / "out"
    with memory_cgroup(CGROUP_BYTES) as (_, prefix):
        rows, _, seconds = grade_in(prefix, submitted, out, "--jobs", "2", fault="a-victim:kill")
    print(f"\n[blast radius] a grading process SIGKILLed at each try for one of 4 students: {seconds:.0f} s")
    assert_full_marks(rows, INNOCENTS)
    victim = rows["a-victim"]
    assert victim["status"] == "error" and victim["total"] == 0.0, victim
    assert "grading process died 2 times (killed by SIGKILL)" in victim["reason"], victim
    # "error" is our fault: the next run grades the victim again, and no one else
    rows, output, _ = grade_in([], submitted, out, "--jobs", "2")
    assert counts(output) == (1, len(INNOCENTS))
    assert_full_marks(rows, (*INNOCENTS, "a-victim"))


def test_a_memory_bomb_beside_three_students_in_a_small_cgroup(tmp_path):
    bomb = make_submission("reference")
    apply_edit(bomb, Append("master_weights", MEMORY_BOMB))
    reference = make_submission("reference")
    submitted = write_students(tmp_path / "submitted", {**{s: reference for s in INNOCENTS}, "a-bomb": bomb})
    with memory_cgroup(CGROUP_BYTES) as (folder, prefix):  # --memory-mb larger than the whole cgroup
        rows, _, seconds = grade_in(prefix, submitted, tmp_path / "out", "--jobs", "2", "--memory-mb", "4096")
        kills = oom_kills(folder)
    row = rows["a-bomb"]
    print(f"\n[blast radius] memory bomb + 3 reference students in a {CGROUP_BYTES / 2**30:g} GiB cgroup, "
          f"--jobs 2: {seconds:.0f} s, {kills} OOM kills, innocents {[rows[s]['total'] for s in INNOCENTS]} "
          f"of {FULL:g}, bomb {row['status']} {row['total']:g}: {row['reason'][:200]}")
    assert_full_marks(rows, INNOCENTS)
    assert row["total"] < FULL and row["reason"], row
    if row["status"] == "error":  # the bomb took its own grading process down, twice
        assert "grading process died" in row["reason"], row


def test_a_student_past_the_deadline_is_recorded_as_timeout(tmp_path):
    reference = make_submission("reference")
    submitted = write_students(tmp_path / "submitted", {"alice": reference, "bob": reference, "slow": reference})
    out = tmp_path / "out"
    # seconds per item (the reference still grades in full), and for starting the sandbox and writing the
    # feedback: the deadline follows from the two, 6 * 2 + 20 s, not a minute's constant
    timeout, startup = 2, 20
    limits = ("--timeout", str(timeout), "--startup-seconds", str(startup))
    deadline = Limits.for_timeout(timeout, startup_seconds=startup).student_seconds
    with memory_cgroup(CGROUP_BYTES) as (_, prefix):
        rows, _, seconds = grade_in(prefix, submitted, out, "--jobs", "2", *limits, fault="slow:hang")
    print(f"\n[blast radius] a student hanging past the {deadline:g} s deadline beside 2 others: {seconds:.0f} s")
    slow = rows["slow"]
    assert slow["status"] == "timeout" and slow["total"] == 0.0, slow
    assert f"deadline of {deadline:g} s per student" in slow["reason"], slow
    assert all(rows[s]["status"] == "graded" for s in ("alice", "bob")), rows
    page = (out / "feedback" / "slow" / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert "could not be graded" in page and f"{deadline:g} s" in page
    # like "failed", a timeout is the submission's: not graded again until it changes
    _, output, _ = grade_in([], submitted, out, "--jobs", "2", *limits)
    assert counts(output) == (0, 3)
    nb = make_submission("reference")
    nb.cells[0].source += "\n"
    write_students(submitted, {"slow": nb})
    rows, output, _ = grade_in([], submitted, out, "--jobs", "2", *limits)
    assert counts(output) == (1, 2) and rows["slow"]["status"] == "graded", rows["slow"]
