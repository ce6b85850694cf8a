"""The sandbox's one exception and how a sandboxed process failed: plain data, shared by every part of the sandbox."""
import signal
from typing import Literal

# how the sandboxed process failed: it ran out of time, died, broke the protocol, or answered with something
# decode.py would not read ("refused")
SandboxReason = Literal["timeout", "crashed", "protocol", "refused"]


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
