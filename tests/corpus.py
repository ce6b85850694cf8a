"""The whole corpus of submissions (tests/submissions), graded once for the run (a plugin of tests/conftest.py).

`graded_corpus` grades every variant once, with as many grading processes as the machine has cores, as
`python -m autograder grade --jobs N` would: each process keeps one sandbox and reuses it for submission
after submission, so a submission that leaves something behind would hurt the next one. The realistic
variants are graded from their notebooks as a student's Jupyter saves them (`saved_realistic`), the rest
from the notebook node. tests/integration/test_submissions.py, test_realistic.py and test_honest_habits.py
hold each variant to what its kind promises. Those modules run last, and the grading starts with the first test,
at a lower priority, so that it uses the cores the other tests leave idle (`Background`).
"""
import concurrent.futures as futures
import multiprocessing
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.submissions import VARIANTS, names, write_class
from tests.submissions.hostile import NETWORK_PORT, OUTSIDE_PATHS
from tests.submissions.honest import HONEST

JOBS = os.cpu_count() or 2
DEADLINE = 2700  # seconds for the whole corpus (about 270 variants) from its start: a hang fails the tests
NICE = 10  # the background gradings' niceness: a tenth of a core against a busy test, the idle cores otherwise
HABITS = [v.name for v in HONEST]
# realistic variants graded from their saved notebooks (the honest habits are realistic too, graded from the node)
SAVED = [n for n in names("realistic") if n not in set(HABITS)]


@dataclass
class Graded:
    name: str
    status: str
    reason: str
    scores: dict
    messages: dict        # item -> [(check title, message)] of the failed checks
    reports: dict         # item -> the item's report, as the student reads it
    seconds: float
    worker: int           # pid of the grading process
    left_behind: list = field(default_factory=list)  # sandbox processes alive after grading, zygotes aside
    threads_left: list = field(default_factory=list)  # threads grading started in the grading process, still running
    review: dict = field(default_factory=dict)  # item -> tamper flags, for the items set aside for review


def processes_of(uid) -> dict:
    """pid -> (pid inside its PID namespace, cmdline) of the processes whose real uid is `uid`."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = dict(line.split(":", 1) for line in (entry / "status").read_text().splitlines() if ":" in line)
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, ValueError):
            continue
        if int(fields["Uid"].split()[0]) == uid:
            found[int(entry.name)] = (int(fields.get("NSpid", entry.name).split()[-1]), cmd)
    return found


def grade_variant(name: str, path: str = None) -> Graded:
    """In a grading process: grade one variant (from its saved notebook at `path`, if given), then look for
    anything it left in the sandbox."""
    from autograder.cells import read_notebook
    from autograder.sandbox import sandbox_uid
    from tests.submissions import failed_messages, grade_variant_notebook

    before = set(threading.enumerate())
    result, seconds = grade_variant_notebook(VARIANTS[name], read_notebook(path) if path else None)
    threads = threads_started_since(before)
    left = []
    uid = sandbox_uid()
    if uid is not None:
        # the zygote that waits for the next submission is PID 2 of its sandbox (bubblewrap is PID 1)
        left = [f"{pid}: {cmd}" for pid, (inner, cmd) in processes_of(uid).items() if inner != 2]
    return Graded(name, result.status, result.reason, {i: r.score for i, r in result.items.items()},
                  failed_messages(result), {i: result.report(i) for i in result.items}, seconds, os.getpid(), left,
                  threads, result.review)


def what_it_left(g: Graded) -> list:
    """What grading variant `g` left running, as failure lines: processes in the sandbox, threads in the grader."""
    found = []
    if g.left_behind:
        found.append(f"processes left in the sandbox after grading: {g.left_behind[:5]}")
    if g.threads_left:
        found.append(f"threads left running in the grading process: {g.threads_left[:5]}")
    return found


def threads_started_since(before: set, grace: float = 3.0) -> list:
    """The names of the threads of this process not in `before` that are still running after `grace` seconds,
    but the output drains of the zygotes this process keeps for its next submissions. A grading that leaves
    one (a sandbox's output drain, a memory measurement's sampler) slows every later submission of its
    grading process, for as long as that process lives."""
    from autograder.sandbox import zygote
    deadline = time.monotonic() + grace
    while True:
        kept = {z.err for z in zygote._SHARED.values() if z.alive}  # a zygote's own drain lives as long as it
        new = [t for t in threading.enumerate() if t not in before and t not in kept and t.is_alive()]
        if not new or time.monotonic() > deadline:
            return [f"{type(t).__name__} {t.name}" for t in new]
        time.sleep(0.05)


class Listener(threading.Thread):
    """A TCP server on the grading machine that answers "b" and records every connection."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.connections = []
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.server.bind(("0.0.0.0", port))
            self.server.listen()
            self.listening = True
        except OSError:
            self.listening = False
        self.server.settimeout(0.2)
        self.stop = False
        self.start()

    def run(self):
        while not self.stop and self.listening:
            try:
                conn, address = self.server.accept()
            except OSError:
                continue
            self.connections.append(address)
            try:
                conn.sendall(b"b")
            finally:
                conn.close()

    def close(self):
        self.stop = True
        self.join(timeout=2)
        self.server.close()


def order(all_names):
    """Slow variants first (those with limits of their own, then the hostile ones), so that the grading
    processes finish together."""
    return sorted(all_names, key=lambda n: (not VARIANTS[n].limits, VARIANTS[n].kind != "hostile"))


class Background:
    """The corpus's gradings, started by the first test when the run has tests that read the corpus.

    The other tests keep about 0.6 of the two cores busy on their own (the browser tests, which wait on
    Jupyter servers, kernels and pip, less), so the gradings run beside them at a lower priority (`NICE`,
    inherited by their sandboxes, whose CPU cgroups take the matching share), to take the idle cores without
    slowing them much. The variants with short limits of their own (`VARIANTS[...].limits`:
    gradings that must run out of time at the right place) wait for `graded_corpus` and are then graded at
    normal priority, beside the tail of the rest, so that a busy machine cannot move where they stop."""

    def __init__(self, saved: dict):
        self.saved = saved
        self.listener = None
        self.started = None
        self.pools = []
        self.running = {}

    def start(self):
        """Start grading the variants without limits of their own (once; later calls do nothing)."""
        if self.started is not None:
            return
        for path in OUTSIDE_PATHS:
            Path(path).unlink(missing_ok=True)
        self.listener = Listener(NETWORK_PORT)
        self.started = time.monotonic()
        self.submit([n for n in order(names()) if not VARIANTS[n].limits], nice=NICE)

    def submit(self, variants: list, nice: int = 0):
        pool = futures.ProcessPoolExecutor(max_workers=JOBS, mp_context=multiprocessing.get_context("spawn"),
                                           initializer=os.nice, initargs=(nice,))
        self.pools.append(pool)
        for name in variants:
            path = self.saved.get(name)
            self.running[pool.submit(grade_variant, name, str(path) if path else None)] = name

    def wait(self) -> dict:
        """{"graded": {variant: Graded}, "seconds", "workers" (pids of the grading processes), "listener"}."""
        self.start()
        self.submit([n for n in order(names()) if VARIANTS[n].limits])
        try:
            done, pending = futures.wait(self.running, timeout=max(0.0, self.started + DEADLINE - time.monotonic()))
            if pending:
                pytest.fail(f"grading did not finish in {DEADLINE} s; still running: "
                            f"{sorted(self.running[f] for f in pending)[:10]}")
            graded = {self.running[f]: f.result() for f in done}
        finally:
            self.close()
        seconds = time.monotonic() - self.started
        print(f"graded {len(graded)} submissions in {seconds:.0f} s with {JOBS} processes")
        return {"graded": graded, "seconds": seconds, "workers": {g.worker for g in graded.values()},
                "listener": self.listener}

    def close(self):
        """Stop every grading still running (a run cut short, a deadline passed) and the listener."""
        if any(not f.done() for f in self.running):
            for pool in self.pools:
                for process in list(getattr(pool, "_processes", {}).values()):
                    process.kill()
        for pool in self.pools:
            pool.shutdown(wait=True, cancel_futures=True)
        if self.listener is not None:
            self.listener.close()


def reads_the_corpus(item) -> bool:
    return "graded_corpus" in getattr(item, "fixturenames", ())


def pytest_collection_modifyitems(items):
    """The modules that read the corpus run last, so that it is graded in the background while the rest run."""
    last = {item.path for item in items if reads_the_corpus(item)}
    items[:] = [i for i in items if i.path not in last] + [i for i in items if i.path in last]


@pytest.fixture(scope="session")
def saved_realistic(tmp_path_factory) -> dict:
    """realistic variant -> the path of its notebook, saved as a student's Jupyter saves it."""
    folder = tmp_path_factory.mktemp("realistic")
    return dict(zip(SAVED, write_class(folder, SAVED)))


@pytest.fixture(scope="session")
def corpus_in_background(request):
    """The corpus's `Background`, when some test of the run reads the corpus; else None."""
    if not any(reads_the_corpus(item) for item in request.session.items):
        yield None
        return
    background = Background(request.getfixturevalue("saved_realistic"))
    try:
        yield background
    finally:
        background.close()  # a no-op once graded_corpus has waited for it


@pytest.fixture(autouse=True)
def corpus_starts_with_the_first_test(corpus_in_background):
    if corpus_in_background is not None:
        corpus_in_background.start()


@pytest.fixture(scope="session")
def graded_corpus(corpus_in_background) -> dict:
    """{"graded": {variant: Graded}, "seconds", "workers" (pids of the grading processes), "listener"}."""
    return corpus_in_background.wait()
