"""Grading processes that each hold one student at a time, so that one student's crash or overrun costs no one else.

Each worker is a long-lived spawned process (its torch and nbgrader imports, about 3 s, are paid
once) with a pipe of its own, so this process always knows which student a worker holds. A
worker that dies (the OOM killer, a crash) or passes the student's deadline is killed and
replaced, and only that student's outcome says so.

Why not a shared pool: concurrent.futures breaks every pending task when one worker dies, and
pebble's workers share one pipe under a lock that a killed worker can leave held, which hangs
the pool (noxdafox/pebble#163, #97).
"""
import atexit
import os
import signal
import sys
import time
from dataclasses import dataclass
from multiprocessing.connection import wait

START_FAILURES = 3  # workers in a row that die before they are ready: the pool cannot run here


@dataclass
class Finished:
    key: str
    value: object = None  # what the function returned
    error: str = ""       # "" (it returned), "raised", "died" or "deadline"
    detail: str = ""      # the exception, or how the worker ended


def die_with_parent():
    """A worker dies with the process that started it (Linux), so a killed run leaves nothing behind;
    the sandboxes die with their worker."""
    if sys.platform.startswith("linux"):
        import ctypes
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def serve(conn, function, warm):
    """A worker's loop: (key, args) in, (value, error text) out, until the pipe closes. It first runs
    `warm` (function, args), if given: what every key would otherwise pay for on its first run."""
    die_with_parent()
    if warm is not None:
        try:
            warm[0](*warm[1])
        except Exception:  # the first key pays for it instead, and meets the error itself if it lasts
            pass
    conn.send("ready")
    while True:
        try:
            key, args = conn.recv()
        except (EOFError, OSError):
            _exit_now()
        try:
            reply = (function(*args), "")
        except Exception as exc:
            reply = (None, f"{type(exc).__name__}: {exc}")
        conn.send(reply)


def _exit_now():
    """The pipe closed: end this worker. Its exit handlers run (they close its sandboxes), but not the
    interpreter's teardown of torch and nbgrader, which takes seconds and frees nothing the system would not."""
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def ending(exitcode) -> str:
    """How a worker ended, in words: "killed by SIGKILL", "exit code 1"."""
    if exitcode is not None and exitcode < 0:
        try:
            return f"killed by {signal.Signals(-exitcode).name}"
        except ValueError:
            return f"killed by signal {-exitcode}"
    return f"exit code {exitcode}"


class Worker:
    def __init__(self, context, function, warm=None):
        self.conn, theirs = context.Pipe()
        self.process = context.Process(target=serve, args=(theirs, function, warm), daemon=True)
        self.process.start()
        theirs.close()
        self.ready = False
        self.key = None       # the student it holds
        self.until = None     # that student's deadline (time.monotonic())

    def give(self, key, args, seconds: float):
        self.key, self.until = key, time.monotonic() + seconds
        self.conn.send((key, args))

    def kill(self):
        self.process.kill()
        self.process.join()
        self.conn.close()


class Workers:
    """Up to `count` workers running `function(*args)` for each submitted key, each within `deadline` seconds;
    each worker first runs `warm` = (function, args), if given."""

    def __init__(self, function, count: int, deadline: float, context, warm=None):
        self.function, self.count, self.deadline, self.context, self.warm = function, count, deadline, context, warm
        self.queue = []   # (key, args) not yet handed to a worker
        self.workers = []
        self.failed_starts = 0

    def start(self, count: int):
        """Start up to `count` workers now (at most the pool's size), so that they warm up while the caller
        does other work; otherwise they start when keys are waiting."""
        while len(self.workers) < min(count, self.count):
            self.workers.append(Worker(self.context, self.function, self.warm))

    def submit(self, key, args):
        self.queue.append((key, args))

    def outcomes(self):
        """Yield a Finished for each submitted key as it finishes; keys submitted meanwhile are run too."""
        while self.queue or any(w.key is not None for w in self.workers):
            busy = sum(w.key is not None for w in self.workers)
            while len(self.workers) < min(self.count, busy + len(self.queue)):
                self.workers.append(Worker(self.context, self.function, self.warm))
            for worker in self.workers:
                if worker.ready and worker.key is None and self.queue:
                    worker.give(*self.queue.pop(0), self.deadline)
            deadlines = [w.until for w in self.workers if w.key is not None]
            timeout = max(0.0, min(deadlines) - time.monotonic()) if deadlines else None
            wait([w.conn for w in self.workers] + [w.process.sentinel for w in self.workers], timeout)
            for worker in list(self.workers):
                outcome = self._check(worker)
                if outcome is not None:
                    yield outcome

    def _check(self, worker: Worker):
        """What became of one worker since the last look: a Finished when it finished a student."""
        key = worker.key
        try:
            message = worker.conn.recv() if worker.conn.poll() else None
        except (EOFError, OSError):  # it died: its end of the pipe closed
            message = None
            worker.process.join(5)
        if message is None and not worker.process.is_alive():
            self._drop(worker)
            if key is not None:
                return Finished(key, error="died", detail=ending(worker.process.exitcode))
            self.failed_starts += 1
            if self.failed_starts >= START_FAILURES:
                raise RuntimeError(f"grading processes die as they start ({ending(worker.process.exitcode)})")
            return None
        if message == "ready":
            worker.ready, self.failed_starts = True, 0
        elif message is not None:
            worker.key = worker.until = None
            value, error = message
            return Finished(key, value, "raised" if error else "", error)
        elif key is not None and time.monotonic() > worker.until:
            self._drop(worker)
            return Finished(key, error="deadline", detail=f"past its deadline of {self.deadline:g} s")
        return None

    def _drop(self, worker: Worker):
        worker.kill()
        self.workers.remove(worker)

    def close(self):
        """End every worker: an idle one exits when its pipe closes (its sandbox cleaned up), a stuck one is killed."""
        for worker in self.workers:
            worker.conn.close()
        for worker in self.workers:
            worker.process.join(10 if worker.key is None else 0)
            if worker.process.is_alive():
                worker.kill()
        self.workers = []
