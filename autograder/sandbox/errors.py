"""The sandbox's limits and its one exception: plain data, shared by every part of the sandbox."""
import signal
from dataclasses import dataclass
from typing import Literal

# how the sandboxed process failed: it ran out of time, died, broke the protocol, or answered with something
# decode.py would not read ("refused")
SandboxReason = Literal["timeout", "crashed", "protocol", "refused"]


@dataclass(frozen=True)
class Limits:
    """Every limit one submission is graded under, each field named for what it bounds. Made once, from
    the command line (`Limits.for_timeout`: `--timeout` and `--memory-mb`), and handed down to the
    grading steps, the sandbox and its zygote; these defaults are the only ones."""
    cell_seconds: float = 60       # one notebook cell, wall and CPU, while the notebook runs
    item_seconds: float = 60       # one graded item's checks (its probes' CPU too)
    notebook_seconds: float = 180  # the whole notebook's run, restarts after a crash included
    checks_seconds: float = 180    # every item's checks together, and running the notebook again for them
    memory_mb: int = 4096          # address space per process, and the cgroup's total where there is one
    max_processes: int = 64        # processes and threads, enforced where the code runs under its own uid
    max_output_kb: int = 256       # what the code prints is drained and kept up to this, then dropped
    max_answer_mb: int = 64        # largest answer read back
    tmp_mb: int = 256              # size of the private /tmp
    cpus: float = 1.0              # CPU cores the sandbox may use at once (cgroup), 0 for no limit
    max_restarts: int = 8          # fresh starts after a crash or timeout, per submission (backends enforce it)
    STARTUP_SECONDS = 60           # starting Python and the sandbox, and making a feedback page (not a field)
    FORK_END_SECONDS = 5           # an item's fork ended and cleaned up after, at most (not a field)

    @classmethod
    def for_timeout(cls, timeout: float = None, **fields) -> "Limits":
        """`--timeout T` (seconds per exercise): T for one cell and one item, 3T for the whole notebook's
        run and 3T for all its checks; without T, the defaults."""
        if timeout is not None:
            fields = {"cell_seconds": timeout, "item_seconds": timeout, "notebook_seconds": 3 * timeout,
                      "checks_seconds": 3 * timeout, **fields}
        return cls(**fields)

    @property
    def student_seconds(self) -> float:
        """Wall-clock seconds for grading one student from staging to feedback, after which its grading
        process is killed: the notebook's run, then all its checks, plus a minute for starting the
        sandbox and nbgrader and writing the feedback page."""
        return self.notebook_seconds + self.checks_seconds + self.STARTUP_SECONDS


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
