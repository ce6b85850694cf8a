"""A fresh kernel for each submission: nothing one submission leaves in any kernel object reaches the next one
graded by the same grading process (sandbox/namespaces.py).

Graded with the audit hook off (the tests' switch), as the issue's threat model says: the student's code may
use ctypes and read or write every byte of its process. Each kind of object is left by one submission and
looked for by the next, in the same sandbox; its control leaves and finds it within one submission, so that a
finder that cannot find is caught. The cross-submission attack of issue 44 (the reference's code, as an item's
fork holds it, left in a POSIX message queue) is graded end to end.
"""
import platform
import warnings

import pytest

from autograder.grading import grade_notebook
from autograder.instructor.reference import reference, stand_in_units
from autograder.sandbox import Sandbox, have_bwrap
from autograder.sandbox.session import AUDIT_HOOK_OFF
from tests.submissions import NewCell, Variant, make_submission, make_variant_submission
from tests.submissions.hostile_round7 import LEAVE, MQ, TAKE, stubs

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_bwrap(), reason="bubblewrap is not installed")]

LIBC = '''
import ctypes, os, socket, subprocess, sys, time
libc = ctypes.CDLL(None, use_errno=True)
KEY = 0x4C3230  # a SysV key
'''

# kind -> (what the first submission runs to leave it, an expression the next evaluates: True if it is there)
OBJECTS = {
    "SysV shared memory": ("libc.shmget(KEY, 4096, 0o1666)", "libc.shmget(KEY, 0, 0) >= 0"),
    "SysV semaphores": ("libc.semget(KEY, 1, 0o1666)", "libc.semget(KEY, 0, 0) >= 0"),
    "SysV message queue": ("libc.msgget(KEY, 0o1666)", "libc.msgget(KEY, 0) >= 0"),
    "POSIX message queue": ("_mq(7, True)", "_mq(7, False) >= 0"),
    "POSIX shared memory": ("open('/dev/shm/lesson20-left', 'w').write('x')", "os.path.exists('/dev/shm/lesson20-left')"),
    "POSIX semaphore": ("libc.sem_open(b'/lesson20-left', 0o100, 0o666, 1)",
                        "libc.sem_open(b'/lesson20-left', 0) not in (None, 0, ctypes.c_void_p(-1).value)"),
    "a file in /tmp": ("open('/tmp/lesson20-left', 'w').write('x')", "os.path.exists('/tmp/lesson20-left')"),
    "an abstract unix socket": (
        "subprocess.Popen([sys.executable, '-c', 'import socket, time; s = socket.socket(socket.AF_UNIX); "
        "s.bind(chr(0) + \"lesson20-left\"); s.listen(); time.sleep(600)']); time.sleep(1.5)",
        "socket.socket(socket.AF_UNIX).connect_ex(chr(0) + 'lesson20-left') == 0"),
    "a key in the session keyring": ("libc.syscall(248, b'user', b'lesson20-left', b'x', 1, -3)",
                                     "libc.syscall(250, 10, -3, b'user', b'lesson20-left', 0) >= 0"),
    "a key in the user keyring": ("libc.syscall(248, b'user', b'lesson20-left', b'x', 1, -4)",
                                  "libc.syscall(250, 10, -4, b'user', b'lesson20-left', 0) >= 0"),
    "a process": ("subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', 'lesson20-left']); time.sleep(0.5)",
                  "any(b'lesson20-left' in open(f'/proc/{p}/cmdline', 'rb').read() for p in os.listdir('/proc') "
                  "if p.isdigit() and os.path.exists(f'/proc/{p}/cmdline'))"),
}
KEYRINGS = {"a key in the session keyring", "a key in the user keyring"}  # syscall numbers of x86_64


def cell(index: int, source: str) -> dict:
    return {"index": index, "label": f"<cell {index}>", "solution": True, "source": source}


def found_in(sandbox_cells: list) -> list:
    """Run these cells in a fresh submission of this process's sandbox; the messages its cells raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(sandbox_cells)
    try:
        return [p["message"] for p in sandbox.start()]
    finally:
        sandbox.close()


def finder(index: int, kind: str) -> dict:
    return cell(index, LIBC + MQ + f"if {OBJECTS[kind][1]}:\n    raise RuntimeError('found: {kind}')\n")


@pytest.fixture
def hook_off(monkeypatch):
    monkeypatch.setenv(AUDIT_HOOK_OFF, "1")


@pytest.mark.parametrize("kind", sorted(OBJECTS))
def test_what_a_submission_leaves_in_a_kernel_object_is_not_there_for_the_next(hook_off, kind):
    if kind in KEYRINGS and platform.machine() != "x86_64":
        pytest.skip("the keyring calls use x86_64's system call numbers")
    leave = cell(0, LIBC + MQ + OBJECTS[kind][0])
    # the control: the finder finds what the same submission left
    assert found_in([leave, finder(1, kind)]) == [f"found: {kind}"], f"the finder of {kind} cannot find it"
    assert found_in([leave]) == []
    assert found_in([finder(0, kind)]) == [], f"{kind}, left by one submission, is there for the next"


def test_each_submission_gets_fresh_namespaces():
    """This machine (root or not, with bubblewrap) lets the sandbox give each submission namespaces of its own:
    the report of protections says so, and the cells see a PID namespace of their own."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox([cell(0, "import os\nraise RuntimeError(str(os.getpid()))")])
    try:
        problems = sandbox.start()
        assert sandbox.zygote.fresh_namespaces
    finally:
        sandbox.close()
    assert [p["message"] for p in problems] == ["2"], problems  # the second process of its own PID namespace


def graded(nb) -> dict:
    result = grade_notebook(nb, reference=reference())
    return {item: r.score for item, r in result.items.items()}


def test_the_reference_left_in_a_message_queue_is_not_there_for_the_next_submission(hook_off):
    """Issue 44's attack: the first submission puts the reference's code, as its q5 and token items' forks hold
    it, into POSIX message queues; the second, the untouched notebook plus a cell that rebuilds whatever it
    finds there, is graded next by the same process. It earned 13 of 14 points when every submission shared
    the zygote's IPC namespace."""
    graded(make_submission("round7_leaves_reference_in_a_message_queue"))
    scores = graded(make_submission("round7_takes_reference_from_a_message_queue"))
    assert sum(scores.values()) == 0, f"the next submission took the reference's code from a message queue: {scores}"


def test_the_control_the_thief_rebuilds_the_reference_from_a_queue_it_finds(hook_off):
    """The same thief, where the queue holds the reference's code when it looks (planted by a cell before it,
    in the same submission): every exercise's points."""
    units = stand_in_units()
    planted = ("_REF = {}\nexec(compile(%r, '<planted>', 'exec'), _REF)\n_leave([_REF.get(n) for n in _UNITS])\n"
               % (units["imports"] + "\n".join(u["source"] for u in units["units"])))
    # each new cell goes right after q5's check cell: the planter, listed last, comes first
    variant = Variant("round7_thief_control", "hostile",
                      (*stubs(), NewCell("q5_answer", TAKE), NewCell("q5_answer", LEAVE + planted)))
    scores = graded(make_variant_submission(variant))
    assert sum(v for item, v in scores.items() if item != "q5_answer") == 13, scores
