"""Running a submission's notebook in a fresh child, again after a cell that ended it (a mixin of Sandbox)."""
import secrets
import time

from . import protocol
from .errors import SandboxError
from .forks import flags_of
from .isolation import probe_files
from .zygote import open_channel


class Loading:
    """Starts the child and runs the notebook in it (it uses the Sandbox's channel, _send, _guard, _end_child
    and _forgery; PROBES_SHA256 and the audit hook's switch come from the Sandbox)."""

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
                    "probes": probe_files(self.isolate), "probes_sha256": self.PROBES_SHA256,
                    "files": self.files, "audit_hook": self.audit_hook}
        self._send(protocol.request(notebook), deadline, doing)
        hello = self._guard(lambda: self.channel.hello(deadline, nonce), doing)
        self.flags = list(dict.fromkeys(self.flags + flags_of(hello) + self._forgery()))
        problems = hello.get("problems")
        problems = [p for p in (problems if isinstance(problems, list) else [])[:50] if isinstance(p, dict)]
        self.stopped |= stopped_cells(problems)
        return problems


def stopped_cells(problems: list) -> set:
    """The indexes of the cells the child says ran past their time: whole numbers only, for the message is
    the child's (a list there would make the set, and so the whole submission's grading, raise)."""
    return {p["cell"] for p in problems if p.get("type") == "CellTimeout" and type(p.get("cell")) is int}
