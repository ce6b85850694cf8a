"""One submission in the sandbox: start its child, load its code, answer the checks' probe requests."""
import base64
import hashlib
import io
import os
import secrets
import sys
import time
import warnings
from pathlib import Path

import torch

from . import protocol
from .decode import Refused
from ..limits import Limits
from .errors import SandboxError, SandboxReason
from .forks import ItemForks
from .isolation import WEAK_ISOLATION, have_bwrap, probe_files
from .loading import Loading
from .memory import Measurement


# The tests' switch, never a command-line option: grade with the sandbox's audit hook off, to show that what
# the student's code can read in the sandbox earns it nothing (tests/integration/test_reading_earns_nothing.py).
AUDIT_HOOK_OFF = "LESSON20_TEST_AUDIT_HOOK_OFF"
# the child checks the probes' files it loads against these: what runs there is what the grader shipped
PROBES_SHA256 = [hashlib.sha256(Path(path).read_bytes()).hexdigest() for path in probe_files(isolate=False)]


class Sandbox(Loading, ItemForks):
    """The sandboxed process holding one submission's code; restartable after a crash or timeout."""

    PROBES_SHA256 = PROBES_SHA256

    def __init__(self, cells: list, limits: Limits = Limits(), isolate: bool = None, files: dict = None):
        """cells: [{"index", "label", "source", "solution"}], run in order by the child.
        files: {relative path: bytes} handed in beside the notebook (attachments.beside), put read-only in
        the notebook's working folder, which is also on sys.path (as in a kernel started there)."""
        self.cells = cells
        self.audit_hook = not os.environ.get(AUDIT_HOOK_OFF)
        self._no_fork()
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

    def request(self, probe: str, spec: dict, timeout: float, within: float = None,
                measure_memory: bool = False) -> dict:
        """Run one probe in the current item's fork within `timeout`; return its plain-data answer, or raise
        SandboxError.

        If the last request ended the child, the notebook runs again first; if it ended only the item's
        fork, a new fork is made. `within`: seconds for that re-run, the fork and the probe together (default:
        Limits.notebook_seconds for the re-run, then `timeout`); what the re-run took (starting the sandbox
        itself aside) is left in self.reload_seconds.
        measure_memory: add {"memory": {"baseline", "added", "anon_added", "measured_by", ...}} in bytes
        (memory.py), read by this process from the sandbox's memory cgroup, or from its processes where this
        process may make no cgroup (so the code being measured cannot change it), where it runs isolated. The
        child gives freed heap memory back to the system after every request, so the baseline holds no cache
        that the call could reuse unseen."""
        within = self.limits.notebook_seconds + timeout if within is None else within
        self.reload_seconds = 0.0
        if self.channel is None:  # the last request ended the child: run the notebook again first
            self._reload(within)
        deadline = time.monotonic() + min(timeout, within - self.reload_seconds)
        doing = f"running {probe}"
        source = self.zygote.memory if measure_memory and self.zygote is not None else None
        if source is not None and self.fork_open:
            # a fork of its own, in which no code of the student's has run before the call: nothing it holds can
            # be let go of during the call to hide what the call keeps (what the template holds stays the
            # template's: a fork that frees it gives nothing back)
            self._close_fork(deadline - time.monotonic())
            if self.channel is None:  # what the item left could not be ended: the notebook runs again first
                self._reload(within)
                deadline = time.monotonic() + min(timeout, within - self.reload_seconds)
        if not self.fork_open:
            self._open_fork(deadline, doing, measured=source is not None)
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
        limit = self.limits.max_answer_mb * 2**20
        with Measurement(source) as memory:  # from just before the request is sent until its answer is read
            self._send(protocol.request(header, data), deadline, doing)
            answer = self._guard(lambda: self.channel.answer(self.requests, deadline, limit, nonce), doing)
        memory.add_to(answer)
        forged = self._forgery()
        if forged:
            answer = {"status": "tampered", "flags": list(dict.fromkeys(answer.get("flags", []) + forged))}
        return answer

    def _reload(self, within: float):
        """Run the notebook again in a fresh child; what it took is added to self.reload_seconds."""
        self.restarts += 1
        try:
            self.start(min(within, self.limits.notebook_seconds))
        finally:
            self.reload_seconds += self.start_seconds

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
            self._fork_ended(doing)
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
