"""The sandbox on its own: what one submission leaves behind never reaches the next, code loads as
in the student's kernel, and the fallback without bubblewrap still grades; and, through the
`grade` command, hostile students in a class change nobody else's grades."""
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import pytest

from autograder.grading import grade_notebook
from autograder.items import AUTO_ITEMS
from autograder.instructor.reference import reference
from autograder.sandbox import WEAK_ISOLATION, have_bwrap, sandbox_uid
from tests.submissions import ROOT, judge, make_submission, write_class
from tests.submissions.hostile import WAITING_LIMITS
from tests.submissions.hostile_guard import PLANTERS
from tests.corpus import processes_of

pytestmark = pytest.mark.slow
needs_bwrap = pytest.mark.skipif(not have_bwrap(), reason="bubblewrap is not installed")


def scores(result) -> dict:
    return {item: r.score for item, r in result.items.items()}


def zygotes() -> set:
    """Host pids of this process's waiting sandboxes (PID 2 in their namespace)."""
    uid = sandbox_uid()
    return {pid for pid, (inner, _) in processes_of(uid).items() if inner == 2} if uid is not None else set()


@needs_bwrap
def test_nothing_carries_over_to_the_next_submission():
    """A file in /tmp and a process that keeps rewriting it, left by one submission, are gone for the next,
    which runs in the same sandbox (the zygote is reused, not restarted)."""
    first = grade_notebook(make_submission("hostile_leaves_traces"), ["q5_answer"], reference=reference())
    assert first.status == "graded" and scores(first) == {"q5_answer": 1.0}
    before = zygotes()
    assert before, "no sandbox is waiting for the next submission"
    uid = sandbox_uid()
    assert all(inner == 2 for inner, _ in processes_of(uid).values()), processes_of(uid)
    second = grade_notebook(make_submission("hostile_reads_traces"), ["q5_answer"], reference=reference())
    assert second.status == "graded"
    assert scores(second)["q5_answer"] < 1.0, "the second submission read what the first one left in /tmp"
    assert zygotes() == before, "the sandbox was restarted between two well-behaved submissions"


@needs_bwrap
@pytest.mark.parametrize("planter", sorted(PLANTERS))
def test_nothing_a_submission_plants_is_there_for_the_next(planter):
    """Folders of mode 000, FIFOs, sockets, links and /dev/shm files left by one submission are gone for the
    next one graded in the same process: emptied, or the sandbox replaced."""
    first = grade_notebook(make_submission(planter), ["underflow_fraction"], reference=reference())
    assert first.status == "graded" and scores(first) == {"underflow_fraction": 1.0}, first.reason
    second = grade_notebook(make_submission("hostile_reads_any_trace"), ["q5_answer"], reference=reference())
    assert second.status == "graded"
    assert scores(second)["q5_answer"] < 1.0, f"the next submission found what {planter} left behind"


def test_code_loads_as_in_the_students_kernel():
    """Cell magics and the course's own imports are skipped, a SyntaxError is reported with its line,
    and a solution cell stops at its first error, keeping what ran before it."""
    nb = make_submission("reference")
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    cells["underflow_fraction_solution"].source = ("%%time\nfrom autograder import lesson\n"
                                                   + cells["underflow_fraction_solution"].source)
    cells["static_loss_scaler_solution"].source += "\n\nbroken = (\n"
    cells["q5_answer_solution"].source = 'Q5_ANSWER = "b"\n1 / 0\nQ5_ANSWER = "a"\n'
    result = grade_notebook(nb, ["underflow_fraction", "static_loss_scaler", "q5_answer"], reference=reference())
    got = scores(result)
    assert got["underflow_fraction"] == 1.0 and got["q5_answer"] == 1.0 and got["static_loss_scaler"] == 0.0, got
    syntax = [p for p in result.problems if p["type"] == "SyntaxError"]
    assert syntax and syntax[0]["item"] == "static_loss_scaler" and syntax[0]["line"], result.problems
    assert "SyntaxError" in result.report("static_loss_scaler")


def test_fallback_without_bubblewrap_still_grades():
    """Without bubblewrap: a plain subprocess, a clear warning, and the same scores."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = grade_notebook(make_submission("reference"), ["underflow_fraction", "q5_answer"], reference=reference(),
                                isolate=False)
    assert any(WEAK_ISOLATION in str(w.message) for w in caught)
    assert result.status == "graded" and scores(result) == {"underflow_fraction": 1.0, "q5_answer": 1.0}


CLASS = ["reference", "stub", "step_no_update", "alt_master_apex_style", "hostile_tampered_test_cell",
         "hostile_exit_at_load", "hostile_detached_sleepers", "hostile_leaves_traces", "hostile_reads_traces",
         "hostile_loop_ignoring_signals", "hostile_control_channel"]


@needs_bwrap
def test_hostile_students_change_nobody_elses_grades(tmp_path):
    """`python -m autograder grade --jobs 2` on a class with hostile students: everyone gets what their own
    code earns (test cells edited to claim 100 points included), and no daemon they started survives."""
    write_class(tmp_path / "submitted", CLASS)
    out = tmp_path / "out"
    # a short time per item, the same for everyone in the class: the endless loop costs it three times (two
    # demo cells that call the exercise while the notebook runs, then the item), tests/submissions/hostile.py's
    # WAITING_LIMITS
    timeout = str(WAITING_LIMITS["timeout"])
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(tmp_path / "submitted"), "--out", str(out),
                           "--jobs", "2", "--quiet", "--timeout", timeout, "--memory-mb", "2048"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    students = json.loads((out / "grades.json").read_text())["students"]
    assert sorted(students) == sorted(CLASS)
    for name, row in students.items():
        got = {item: value["score"] for item, value in row["items"].items()}
        found = judge(name, row["status"], got, review=row.get("review", {}))
        assert not found, f"{name}: {found} ({row['reason'][:300]})"
    # a flagged student: set aside in grades.json, the CSV and formgrader (needs manual grading)
    flagged = set(students["hostile_control_channel"]["review"])
    assert flagged == {i.id for i in AUTO_ITEMS}
    rows = {r["student_id"]: r for r in csv.DictReader((out / "grades.csv").open())}
    assert set(rows["hostile_control_channel"]["review"].split()) == flagged and rows["reference"]["review"] == ""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="lesson20") as gb:
        notebook = gb.find_submission_notebook("lesson20", "lesson20", "hostile_control_channel")
        assert {g.name for g in notebook.grades if g.needs_manual_grade} >= flagged
        reference_nb = gb.find_submission_notebook("lesson20", "lesson20", "reference")
        assert not {g.name for g in reference_nb.grades if g.needs_manual_grade} & flagged
    deadline = time.monotonic() + 10
    while (sleepers := _sleepers()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not sleepers, f"processes started by a submission are still running: {sleepers}"


def _sleepers() -> list:
    """Processes that run the detached `sleep 3600`/`sleep 3601` of hostile_detached_sleepers."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
            except OSError:
                continue
            if cmd in ("sleep 3600", "sleep 3601"):
                found.append((int(entry.name), cmd))
    return found


def test_only_stored_torch_archives_are_loaded():
    """An answer is loaded only if it is a torch.save archive with uncompressed members, within the size
    limit: a forged answer could otherwise be a zip bomb that torch.load inflates in the grader."""
    import io
    import zipfile

    import torch

    from autograder.sandbox import stored_zip as _stored_zip
    buffer = io.BytesIO()
    torch.save({"status": "ok", "value": torch.zeros(100)}, buffer)
    assert _stored_zip(buffer.getvalue(), 2**20)
    assert not _stored_zip(buffer.getvalue(), 100)
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("archive/data.pkl", b"\0" * 2**22)
    assert len(bomb.getvalue()) < 2**16 and not _stored_zip(bomb.getvalue(), 2**30)
    assert not _stored_zip(b"not a zip at all", 2**20)


GRADER_WAITING = '''
import sys, warnings
warnings.simplefilter("ignore")
from autograder.sandbox import Sandbox, sandbox_uid
from autograder.sandbox.isolation import uid_candidates
import os
print(uid_candidates(os.getpid())[0], flush=True)
sys.stdin.readline()  # the test makes a host account with that uid now
sandbox = Sandbox([{"index": 0, "label": "<cell 0>", "solution": True, "source": "x = 1"}])
sandbox.start()
print(sandbox_uid(), flush=True)
sys.stdin.readline()
sandbox.close()
'''


@needs_bwrap
@pytest.mark.skipif(sandbox_uid() is None or not shutil.which("useradd"), reason="needs root, setpriv and useradd")
def test_a_host_account_with_the_uid_the_sandbox_would_pick_cannot_signal_it():
    """The uid is checked when the grading process starts its sandbox: a host account that holds the first
    candidate is passed over, and cannot signal the sandbox's processes (before, an innocent failed 0/14)."""
    grader = subprocess.Popen([sys.executable, "-c", GRADER_WAITING], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    account = f"l20uid{os.getpid() % 100000}"  # its own name: a run killed earlier may have left one behind
    try:
        first = int(grader.stdout.readline())
        subprocess.run(["useradd", "-M", "-N", "-s", "/usr/sbin/nologin", "-u", str(first), account], check=True)
        grader.stdin.write("go\n")
        grader.stdin.flush()
        picked = int(grader.stdout.readline())
        assert picked != first, "the sandbox took the uid a host account holds"
        sandbox = sorted(processes_of(picked))
        assert sandbox, "no process of the sandbox runs under its uid"

        def kill_as(uid: int, sig: str) -> list:
            return [subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "kill", sig,
                                    str(pid)], capture_output=True).returncode for pid in sandbox]

        assert kill_as(first, "-0") == [1] * len(sandbox) and kill_as(first, "-KILL") == [1] * len(sandbox)
        assert all(Path(f"/proc/{pid}").exists() for pid in sandbox)
        assert kill_as(picked, "-0") == [0] * len(sandbox)  # the control: the sandbox's own uid may
    finally:
        try:
            grader.stdin.write("done\n")
            grader.stdin.flush()
            grader.wait(timeout=60)
        except (OSError, subprocess.TimeoutExpired):  # it stopped early, or waits on a line never sent
            grader.kill()
        subprocess.run(["userdel", account], capture_output=True)


def accumulation_memory(result) -> tuple:
    """(accumulate_gradients' score, its failed checks' messages) of a graded result."""
    item = result.items["accumulate_gradients"]
    return item.score, [o.message for o in item.outcomes if not o.passed]


@needs_bwrap
@pytest.mark.parametrize("name", ["round7_tmpfs_ballast_hides_kept_graphs", "round7_tmpfs_pool_holds_kept_graphs"])
def test_no_tmpfs_file_hides_a_kept_graph(name):
    """Issue 44's ballast (a /dev/shm file written by the notebook, cut as every micro-batch's graph grows and
    refilled by backward hooks), and a pool (the graphs written into such a file, whose pages were charged
    before the call): the memory in use stays level, but not every kind of it. The usual memory message, and
    the point for one graph at a time is lost (each earned 2/2)."""
    score, messages = accumulation_memory(grade_notebook(make_submission(name), ["accumulate_gradients"],
                                                         reference=reference()))
    assert score == 1.0 and any("raised the sandbox's memory by" in m for m in messages), messages


GRADE_AS_USER = '''
import json, sys, warnings
sys.path.insert(0, ".")
warnings.simplefilter("ignore")
from autograder.grading import grade_notebook
from autograder.instructor.reference import reference
from tests.submissions import make_submission
out = {}
for name in sys.argv[1:]:
    item = grade_notebook(make_submission(name), ["accumulate_gradients"], reference=reference()).items["accumulate_gradients"]
    out[name] = [item.score, [o.message for o in item.outcomes if not o.passed]]
print(json.dumps(out))
'''


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0 or not all(shutil.which(t) for t in ("useradd", "runuser", "unshare")),
                    reason="makes a Unix user: needs root, useradd, runuser and unshare")
def test_a_grader_that_is_not_root_still_measures_memory():
    """An instructor's own account may make no cgroup here (cgroup v1, no delegation): the sandbox's memory is
    sampled from its processes instead. Keeping every graph alive loses its point, as graded by root; the
    reference keeps it."""
    from tests.integration.unix_users import PYTHON, Users, checkout
    base = Path(tempfile.mkdtemp(prefix="l20-nonroot-"))  # pytest's own temporary folders are root's alone
    base.chmod(0o755)
    (base / "home").mkdir(mode=0o755)
    users = Users(base)
    try:
        name = users.add("instructor", base)
        # the instructor's own copy of the course: the checkout's instructor paths are private to root here
        course = checkout(users, name, users.home(name) / "course", fresh_modes=False)
        users.env[name]["PYTHONPATH"] = str(course)  # this copy's package, not the installed checkout's
        done = users.run(name, PYTHON, "-c", GRADE_AS_USER, "reference",
                         "accumulate_one_backward_of_summed_losses", cwd=course)
        got = json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        users.remove()
        shutil.rmtree(base, ignore_errors=True)
    assert got["reference"][0] == 2.0, got["reference"]
    score, messages = got["accumulate_one_backward_of_summed_losses"]
    assert score == 1.0 and any("raised the sandbox's memory by" in m for m in messages), messages
