"""The sandbox's limits and its one exception: plain data, shared by every part of the sandbox."""
import signal
from dataclasses import dataclass
from typing import Literal

# how the sandboxed process failed: it ran out of time, died, broke the protocol, or answered with something
# decode.py would not read ("refused")
SandboxReason = Literal["timeout", "crashed", "protocol", "refused"]


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096        # address space per process, and the cgroup's total where there is one
    timeout: float = 60          # seconds per graded item, and for loading the notebook's code
    max_processes: int = 64      # processes and threads, enforced where the code runs under its own uid
    max_output_kb: int = 256     # what the code prints is drained and kept up to this, then dropped
    max_answer_mb: int = 64      # largest answer read back
    tmp_mb: int = 256            # size of the private /tmp
    cpus: float = 1.0            # CPU cores the sandbox may use at once (cgroup), 0 for no limit
    max_restarts: int = 8        # fresh starts after a crash or timeout, per submission (backends enforce it)
    total_seconds: float = 0     # the whole notebook's run, and all items together (0: three times timeout)

    @property
    def notebook_seconds(self) -> float:
        """How long running the whole notebook may take, and then checking all its items."""
        return self.total_seconds or 3 * self.timeout


class SandboxError(Exception):
    """The sandboxed process timed out, died or broke the protocol.

    reason: a SandboxReason ("refused": its detail says what the answer held); doing: what the grader had
    asked for; status: the child's exit code (negative: the signal that ended it) when it died; tail: the
    last line it wrote to stderr; cell: the notebook cell it was running, if it was loading the notebook.
    """

    def __init__(self, reason: SandboxReason, detail: str, doing: str = "", status=None, tail: str = "", cell=None,
                 died: bool = False):
        super().__init__(detail)
        self.reason, self.detail, self.doing = reason, detail, doing
        self.status, self.tail, self.cell, self.died = status, tail, cell, died

    @property
    def signal_name(self):
        """"SIGKILL" and the like when a signal ended the child, else None."""
        if isinstance(self.status, int) and self.status < 0:
            try:
                return signal.Signals(-self.status).name
            except ValueError:
                return None
        return None
