"""Grade the whole corpus of submissions (tests/submissions) and hold each to what its kind promises.

The reference scores full marks and the untouched student notebook 0; every buggy variant loses
points on the item it breaks, and only there (each item is graded with the reference's code standing in
for the other exercises' code); every correct
alternative keeps full marks; every hostile one is contained: no more than its honest code earns,
no file written outside, no connection made, no process or cgroup left, in bounded time.

The corpus is graded once, by two grading processes at a time, as `python -m autograder grade
--jobs 2` would: each process keeps one sandbox and reuses it for submission after submission,
so a submission that leaves something behind would hurt the next one here.
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

from tests.submissions import VARIANTS, judge, names
from tests.submissions.hostile import NETWORK_PORT, OUTSIDE_PATHS
from tests.submissions.unseen import names_cause

pytestmark = pytest.mark.slow
JOBS = 2
DEADLINE = 1800  # seconds for the whole corpus (about 190 variants): a hang fails the tests instead of stalling them


@dataclass
class Graded:
    name: str
    status: str
    reason: str
    scores: dict
    messages: dict        # item -> [(check title, message)] of the failed checks
    seconds: float
    worker: int           # pid of the grading process
    left_behind: list = field(default_factory=list)  # sandbox processes alive after grading, zygotes aside
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


def grade_one(name: str) -> Graded:
    """In a grading process: grade one variant, then look for anything it left in the sandbox."""
    from autograder.grading import grade_notebook
    from autograder.instructor.reference import reference
    from autograder.limits import Limits
    from autograder.sandbox import sandbox_uid
    from tests.submissions import make_submission

    started = time.monotonic()
    result = grade_notebook(make_submission(name), limits=Limits.for_timeout(**VARIANTS[name].limits), reference=reference())
    seconds = time.monotonic() - started
    left = []
    uid = sandbox_uid()
    if uid is not None:
        # the zygote that waits for the next submission is PID 2 of its sandbox (bubblewrap is PID 1)
        left = [f"{pid}: {cmd}" for pid, (inner, cmd) in processes_of(uid).items() if inner != 2]
    messages = {i: [(o.name, o.message) for o in r.outcomes if not o.passed] for i, r in result.items.items()}
    return Graded(name, result.status, result.reason, {i: r.score for i, r in result.items.items()},
                  messages, seconds, os.getpid(), left, result.review)


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
    """Slow hostile variants first, so that the two grading processes finish together."""
    return sorted(all_names, key=lambda n: (not VARIANTS[n].limits, VARIANTS[n].kind != "hostile"))


@pytest.fixture(scope="module")
def corpus():
    for path in OUTSIDE_PATHS:
        Path(path).unlink(missing_ok=True)
    listener = Listener(NETWORK_PORT)
    context = multiprocessing.get_context("spawn")
    pool = futures.ProcessPoolExecutor(max_workers=JOBS, mp_context=context)
    started = time.monotonic()
    try:
        graded_here = [n for n in names() if VARIANTS[n].kind != "realistic"]  # those: tests/integration/test_realistic.py
        running = {pool.submit(grade_one, name): name for name in order(graded_here)}
        done, pending = futures.wait(running, timeout=DEADLINE)
        if pending:
            for process in list(getattr(pool, "_processes", {}).values()):
                process.kill()
            pytest.fail(f"grading did not finish in {DEADLINE} s; still running: "
                        f"{sorted(running[f] for f in pending)[:10]}")
        graded = {running[f]: f.result() for f in done}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        listener.close()
    seconds = time.monotonic() - started
    workers = {g.worker for g in graded.values()}
    yield {"graded": graded, "seconds": seconds, "workers": workers, "listener": listener}


def scores_of(corpus, name):
    g = corpus["graded"][name]
    return g.status, g.scores


def problems(corpus, name):
    g = corpus["graded"][name]
    twin = corpus["graded"][VARIANTS[name].twin].scores if VARIANTS[name].twin else None
    found = judge(name, g.status, g.scores, twin, g.review)
    if g.left_behind:
        found.append(f"processes left in the sandbox after grading: {g.left_behind[:5]}")
    return found


def detail(corpus, name) -> str:
    g = corpus["graded"][name]
    lines = [f"{name}: {VARIANTS[name].doc}", f"status {g.status} ({g.reason[:300]}), {g.seconds:.1f} s",
             f"scores {g.scores}"]
    for item, failed in g.messages.items():
        lines += [f"  {item} FAIL {title}: {message[:300]}" for title, message in failed[:4]]
    return "\n".join(lines)


def test_reference_scores_full_marks(corpus):
    assert not problems(corpus, "reference"), detail(corpus, "reference")


def test_untouched_student_notebook_scores_zero(corpus):
    assert not problems(corpus, "stub"), detail(corpus, "stub")


@pytest.mark.parametrize("name", names("buggy"))
def test_buggy_submission_loses_points_on_its_item_only(corpus, name):
    found = problems(corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(corpus, name)


@pytest.mark.parametrize("name", names("alternative"))
def test_correct_alternative_keeps_full_marks(corpus, name):
    found = problems(corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(corpus, name)


@pytest.mark.parametrize("name", names("hostile"))
def test_hostile_submission_is_contained(corpus, name):
    found = problems(corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(corpus, name)


def test_buggy_submissions_are_told_why(corpus):
    """Every failed check of a broken item says something, and no check broke on the student's data."""
    for name in names("buggy"):
        g = corpus["graded"][name]
        failed = g.messages[VARIANTS[name].item]
        assert failed and all(message.strip() for _, message in failed), detail(corpus, name)
    for name, g in corpus["graded"].items():
        for item, failed in g.messages.items():
            for title, message in failed:
                assert "internal error in the check" not in message, f"{name}, {item}, {title}: {message}"


def test_first_failing_message_names_the_cause(corpus):
    """The first failing message of a broken item names the mistake, as the student would recognise it."""
    unnamed = [n for n in names("buggy") if not VARIANTS[n].cause.strip()]
    assert not unnamed, f"buggy variants without a cause: {unnamed}"
    vague = []
    for name in names("buggy"):
        variant = VARIANTS[name]
        failed = corpus["graded"][name].messages[variant.item]
        first = failed[0][1] if failed else ""
        if not names_cause(variant, first):
            vague.append(f"{name} (cause {variant.cause!r}, or {list(variant.synonyms)}): {first}")
    assert not vague, f"{len(vague)} first failing messages do not name the cause:\n" + "\n".join(vague)


def test_every_submission_is_graded_in_bounded_time(corpus):
    from autograder.limits import Limits
    for name, g in corpus["graded"].items():
        limits = Limits.for_timeout(**VARIANTS[name].limits)
        # the README's worst case per submission: 3 x timeout for the notebook's runs, 3 x timeout for all
        # the checks, and a minute for starting sandboxes (the per-student deadline of `grade`)
        bound = limits.student_seconds
        assert g.seconds < bound, f"{name} took {g.seconds:.0f} s (bound {bound} s)"


def test_nothing_is_left_running_or_mounted(corpus):
    """Once the grading processes are gone, so is every process and cgroup their sandboxes had."""
    from autograder.sandbox import sandbox_uid
    deadline = time.monotonic() + 10
    left = {}
    while time.monotonic() < deadline:
        left = {w: processes_of(sandbox_uid(w)) for w in corpus["workers"] if sandbox_uid(w) is not None}
        left = {w: p for w, p in left.items() if p}
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"processes of the sandboxes' uids still running: {left}"
    stale = [d for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu")
             for w in corpus["workers"] for d in Path(root).glob(f"lesson20-{w}-*")]
    assert not stale, f"cgroups left behind: {stale}"


def test_no_file_is_written_outside_the_sandbox(corpus):
    written = [p for p in OUTSIDE_PATHS if Path(p).exists()]
    assert not written, f"a submission wrote {written}"


def test_no_connection_reaches_the_grading_machine(corpus):
    listener = corpus["listener"]
    if not listener.listening:
        pytest.skip(f"port {NETWORK_PORT} is taken on this machine")
    assert listener.connections == [], f"a submission connected from {listener.connections}"


def test_corpus_size_and_time(corpus, record_property):
    counts = {kind: len(names(kind)) for kind in ("buggy", "alternative", "hostile")}
    assert counts["buggy"] >= 30 and counts["alternative"] >= 8 and counts["hostile"] >= 10, counts
    record_property("corpus_seconds", round(corpus["seconds"], 1))
    print(f"graded {len(corpus['graded'])} submissions in {corpus['seconds']:.0f} s with {JOBS} processes")
