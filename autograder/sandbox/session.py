"""One submission in the sandbox: start its child, load its code, answer the checks' probe requests."""
import base64
import hashlib
import io
import os
import secrets
import sys
import threading
import time
import warnings
from pathlib import Path

import torch

from . import protocol
from .decode import Refused
from .errors import Limits, SandboxError, SandboxReason
from .isolation import WEAK_ISOLATION, have_bwrap, probe_files
from .zygote import open_channel


class RiseWatch(threading.Thread):
    """Samples a cgroup's memory use while a call runs: the largest rise above the lowest use before it."""

    def __init__(self, cgroup, baseline: int):
        super().__init__(daemon=True)
        self.cgroup, self.low, self.rise, self.done = cgroup, baseline, 0, threading.Event()
        self.start()

    def run(self):
        while not self.done.wait(0.001):
            used = self.cgroup.usage()
            if used is None:
                return
            self.low = min(self.low, used)
            self.rise = max(self.rise, used - self.low)

    def stop(self) -> int:
        self.done.set()
        self.join(timeout=1)
        return self.rise


# The tests' switch, never a command-line option: grade with the sandbox's audit hook off, to show that what
# the student's code can read in the sandbox earns it nothing (tests/test_reading_earns_nothing.py).
AUDIT_HOOK_OFF = "LESSON20_TEST_AUDIT_HOOK_OFF"
# the child checks the probes' files it loads against these: what runs there is what the grader shipped
PROBES_SHA256 = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in probe_files(isolate=False)]


def _flags(message: dict) -> list:
    """The child's tamper flags, as short strings."""
    flags = message.get("flags")
    return [str(f)[:200] for f in flags[:20]] if isinstance(flags, list) else []


class Sandbox:
    """The sandboxed process holding one submission's code; restartable after a crash or timeout."""

    def __init__(self, cells: list, limits: Limits = Limits(), isolate: bool = None, files: dict = None):
        """cells: [{"index", "label", "source", "solution"}], run in order by the child.
        files: {relative path: bytes} handed in beside the notebook (attachments.beside), put read-only in
        the notebook's working folder, which is also on sys.path (as in a kernel started there)."""
        self.cells = cells
        self.audit_hook = not os.environ.get(AUDIT_HOOK_OFF)
        self.item, self.setup = "", {}  # the item whose checks come now, and what its fork is handed (use_item)
        self.fork_open = False  # whether a fork of the child holds the item now
        self.fork_flags = []    # what the fork's guard caught while it set up: its first answer carries them
        self.census = None      # the tests' census of the last fork (child.Child.census), when they asked for it
        self.files = {name: base64.b64encode(data).decode() for name, data in (files or {}).items()}
        self.limits = limits
        self.isolate = have_bwrap() if isolate is None else isolate
        if not self.isolate:
            warnings.warn(WEAK_ISOLATION, stacklevel=2)
        self.zygote = None
        self.channel = None
        self.restarts = 0      # children started again because a request had ended the one before
        self.requests = 0
        self.stopped = set()   # cells past their time, or that ended the child: not run again on a restart
        self.lost = []         # a problem for each cell that ended the child
        self.flags = []        # what the child's audit hook and integrity check caught while the notebook ran
        self.reload_seconds = 0.0  # what restarting the child cost the last request
        self.start_seconds = 0.0   # what the last start()'s runs of the notebook took together

    # ---- lifecycle ----

    def start(self, seconds: float = None) -> list:
        """Start a child and run the submission's notebook in it, within `seconds` in all (default
        Limits.notebook_seconds); return the problems it reported (plain dicts, as the child sent them).

        A cell that ends the child (os._exit, a kill, a crash) is reported as a "ProcessDied" problem
        and left out of a fresh run of the notebook, as a cell past its time is: the rest still runs,
        within the same `seconds`.
        """
        seconds = self.limits.notebook_seconds if seconds is None else seconds
        self.start_seconds = 0.0
        for attempt in range(self.limits.max_restarts + 1):
            try:
                return self._load(seconds - self.start_seconds) + self.lost
            except SandboxError as exc:
                if not (exc.died and exc.cell is not None) or attempt == self.limits.max_restarts:
                    raise
                self.stopped.add(exc.cell)
                ended = exc.signal_name or (f"exit code {exc.status}" if exc.status is not None else "no exit code")
                self.lost.append({"cell": exc.cell, "line": None, "type": "ProcessDied", "message": ended,
                                  "where": exc.tail})

    def _load(self, seconds: float) -> list:
        """One run of the notebook in a fresh child, within `seconds` from the child's start (starting the
        sandbox itself is the grader's cost), added to self.start_seconds."""
        self._end_child()
        if seconds <= 0:
            raise SandboxError("timeout", "out of time", "running your notebook")
        self.zygote, self.channel = open_channel(self.zygote, self.limits, self.isolate)
        opened = time.monotonic()
        deadline = opened + seconds
        try:
            return self._run_notebook(deadline)
        finally:
            self.start_seconds += time.monotonic() - opened

    def _run_notebook(self, deadline: float) -> list:
        doing = "running your notebook"
        cells = [c for c in self.cells if c["index"] not in self.stopped]
        nonce, key = secrets.token_hex(16), secrets.token_bytes(32)
        self.channel.key = self.channel.template_key = key  # the child's messages are signed with it
        notebook = {"cells": cells, "cell_seconds": self.limits.cell_seconds, "nonce": nonce, "key": key.hex(),
                    "probes": probe_files(self.isolate), "probes_sha256": PROBES_SHA256,
                    "files": self.files, "audit_hook": self.audit_hook}
        self._send(protocol.request(notebook), deadline, doing)
        hello = self._guard(lambda: self.channel.hello(deadline, nonce), doing)
        self.flags = list(dict.fromkeys(self.flags + _flags(hello) + self._forgery()))
        problems = hello.get("problems")
        problems = [p for p in (problems if isinstance(problems, list) else [])[:50] if isinstance(p, dict)]
        self.stopped |= {p.get("cell") for p in problems if p.get("type") == "CellTimeout"}
        return problems

    def use_item(self, item: str, setup: dict = None, seconds: float = None):
        """The checks of `item` come next: from the next request on, a fork of the child of its own answers
        them, handed `setup` ({"imports", "units", "bind"}: the stand-ins, see child.py). The fork of the
        item before is ended first, and with it everything it started."""
        if item == self.item and self.setup == (setup or {}):
            return
        self._close_fork(seconds)
        self.item, self.setup = item, dict(setup or {})

    def request(self, probe: str, spec: dict, timeout: float, within: float = None,
                measure_memory: bool = False) -> dict:
        """Run one probe in the current item's fork within `timeout`; return its plain-data answer, or raise
        SandboxError.

        If the last request ended the child, the notebook runs again first; if it ended only the item's
        fork, a new fork is made. `within`: seconds for that re-run, the fork and the probe together (default:
        Limits.notebook_seconds for the re-run, then `timeout`); what the re-run took (starting the sandbox
        itself aside) is left in self.reload_seconds.
        measure_memory: add {"memory": {"baseline", "peak", "after", "added"}} in bytes, read from the
        sandbox's memory cgroup by this process (so the code being measured cannot change it), where
        there is one. The child gives freed heap memory back to the system after every request, so the
        baseline holds no cache that the call could reuse unseen."""
        within = self.limits.notebook_seconds + timeout if within is None else within
        self.reload_seconds = 0.0
        if self.channel is None:  # the last request ended the child: run the notebook again first
            self.restarts += 1
            try:
                self.start(min(within, self.limits.notebook_seconds))
            finally:
                self.reload_seconds = self.start_seconds
        deadline = time.monotonic() + min(timeout, within - self.reload_seconds)
        doing = f"running {probe}"
        if not self.fork_open:
            self._open_fork(deadline, doing)
        if self.fork_flags:
            flags, self.fork_flags = self.fork_flags, []
            return {"status": "tampered", "flags": flags}
        self.requests += 1
        buffer = io.BytesIO()
        torch.save(spec, buffer)
        data = buffer.getvalue()
        nonce = secrets.token_hex(16)
        header = {"id": self.requests, "nonce": nonce, "probe": probe, "size": len(data),
                  "cpu_seconds": int(timeout) + 1}
        cgroup = self.zygote.cgroup if measure_memory and self.zygote is not None else None
        baseline = cgroup.reset_peak() if cgroup is not None else None
        watch = RiseWatch(cgroup, baseline) if baseline is not None else None
        self._send(protocol.request(header, data), deadline, doing)
        limit = self.limits.max_answer_mb * 2**20
        try:
            answer = self._guard(lambda: self.channel.answer(self.requests, deadline, limit, nonce), doing)
        finally:
            rise = watch.stop() if watch is not None else 0
        measured = cgroup.peak() if baseline is not None else None
        if measured is not None and answer.get("status") == "ok":
            # what the call added, whatever it freed meanwhile: memory held before the call and let go during
            # it (a ballast) hides nothing, neither from the peak against the lower of the baseline and the
            # end, nor from the largest rise above the lowest use seen so far, sampled every millisecond
            answer["memory"] = {"baseline": baseline, "peak": measured[0], "after": measured[1],
                                "added": max(measured[0] - min(baseline, measured[1]), rise)}
        forged = self._forgery()
        if forged:
            answer = {"status": "tampered", "flags": list(dict.fromkeys(answer.get("flags", []) + forged))}
        return answer

    def _open_fork(self, deadline: float, doing: str):
        """Have the child fork a process for the current item and hand it the item's key and stand-ins."""
        nonce = secrets.token_hex(16)
        self._send(protocol.request({"fork": self.item or "none", "nonce": nonce}), deadline, doing)
        self._guard(lambda: self.channel.template_message("forked", deadline, nonce), doing)
        key, nonce = secrets.token_bytes(32), secrets.token_hex(16)
        self._send(protocol.request({**self.setup, "key": key.hex(), "nonce": nonce}), deadline, doing)
        self.channel.key = key  # the fork's messages are signed with the item's own key
        ready = self._guard(lambda: self.channel.item_ready(deadline, nonce), doing)
        self.fork_open = True
        self.fork_flags = _flags(ready) + self._forgery()
        self.census = ready.get("census") if isinstance(ready.get("census"), dict) else None

    def _close_fork(self, seconds: float = None):
        """End the item's fork; the child ends what it started and puts /tmp back. A child that does not say
        so in time is ended too (the next request runs the notebook again)."""
        if not self.fork_open or self.channel is None:
            self.fork_open = False
            return
        self.fork_open = False
        seconds = self.limits.FORK_END_SECONDS if seconds is None else min(seconds, self.limits.FORK_END_SECONDS)
        deadline = time.monotonic() + max(seconds, 0.1)
        doing = "ending the checks of an exercise"
        try:
            self._send(protocol.request({"end": True}), deadline, doing)
            done = self._guard(lambda: self.channel.template_message("item_done", deadline), doing)
        except SandboxError:
            return  # _fail ended the child
        self.channel.key = self.channel.template_key
        if done.get("clean") is not True:  # what the item started could not be ended, or /tmp put back
            self._end_child()

    def _forgery(self) -> list:
        """A flag if the student's code wrote messages into the grader's reply channel since the last look."""
        forged, self.channel.forged = self.channel.forged, 0
        return ["writing messages into the grader's reply channel"] if forged else []

    def close(self):
        self._end_child()
        if self.zygote is not None and not self.isolate:
            self.zygote.close()
        self.zygote = None

    # ---- internals ----

    def _end_child(self):
        """Close this submission's pipes and have the zygote kill everything it started; returns
        (exit code or None, last stderr line) of the child."""
        channel, self.channel = self.channel, None
        self.fork_open = False
        if channel is None:
            return None, ""
        channel.close()
        status = None
        if self.zygote is not None:
            try:
                status = self.zygote.reap()
            except (OSError, SandboxError, ValueError):
                self.zygote.close()  # a zygote that cannot clean up is not used again
            if not self.isolate:  # without a PID namespace, a fresh process for every start
                self.zygote.close()
                self.zygote = None
        channel.join_drains()
        return status, channel.err.tail()

    def _guard(self, step, doing: str):
        """Run one channel step, turning a timeout, a dead child or garbage into a SandboxError."""
        try:
            result = step()
        except TimeoutError:
            self._fail("timeout", "out of time", doing)
        except Refused as exc:
            self._fail("refused", str(exc), doing)
        except ValueError as exc:
            self._fail("protocol", str(exc), doing)
        if result is None and self.channel is not None and self.channel.fork_ended is not None:
            ended, self.channel.fork_ended = self.channel.fork_ended, None  # the fork died; the child stays
            self.fork_open = False
            self.channel.key = self.channel.template_key
            status = ended.get("status") if isinstance(ended.get("status"), int) else None
            raise SandboxError("crashed", "the exercise's process ended", doing, status, self.channel.err.tail(),
                               None, True)
        if result is None or result is False:
            self._fail("crashed", "the child ended", doing, died=True)
        return result

    def _send(self, data: bytes, deadline: float, doing: str):
        self._guard(lambda: self.channel.send(data, deadline), doing)

    def _fail(self, reason: SandboxReason, detail: str, doing: str, died: bool = False):
        if os.environ.get("LESSON20_SANDBOX_DEBUG") and self.channel is not None:
            print(bytes(self.channel.err.kept).decode(errors="replace"), file=sys.stderr)
        cell = self.channel.cell if self.channel is not None else None
        status, tail = self._end_child()
        raise SandboxError(reason, detail, doing, status if died else None, tail if died else "", cell, died)
