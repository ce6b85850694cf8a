"""The framing of the messages between the grader and a submission's child, written once for both sides.

grader -> child: a JSON line, then the raw bytes (torch.save) whose size the line gives (`request`).
child -> grader: a newline, the HMAC-SHA256 (hex) under the run's key of the JSON line, a newline and the
raw bytes after it, a space, the JSON line, a newline, the raw bytes (`signed`). The newline first ends
whatever the student's code wrote into the pipe before, apart; the key, which the grader sends in the
notebook's first line, is what no student code can read, so no student code can sign.

Only the standard library: the worker loads this file by path inside the sandbox, before any student
code, and keeps nothing of it where the student's code could find it by name (see worker.load_module).
"""
import builtins
import hmac
import json

# taken when the file is loaded: in the worker that is before any student code, which may rebind builtins
length, as_bytes, view = builtins.len, builtins.bytes, builtins.memoryview
TAG_SIZE = 64  # the hex of a SHA-256


def request(header: dict, payload: bytes = b"") -> bytes:
    """One request to the child: its JSON line, then its payload."""
    return json.dumps(header).encode() + b"\n" + payload


def tag(key: bytes, line: bytes, payload: bytes, digest=hmac.digest) -> bytes:
    """The HMAC of a message under the run's key. digest: hmac.digest's signature (the worker passes the C
    function itself: hmac.digest looks up its module's globals, which student code could rebind)."""
    return digest(key, line + b"\n" + payload, "sha256").hex().encode()


def signed(key: bytes, line: bytes, payload: bytes, digest=hmac.digest) -> bytes:
    """One message of the child, as it goes into the reply pipe."""
    return b"\n" + tag(key, line, payload, digest) + b" " + line + b"\n" + payload


def untag(line: bytes):
    """(tag, JSON text) of a line read from the reply pipe; an unsigned line has the tag b""."""
    head, _, rest = line.partition(b" ")
    return (head, rest) if length(head) == TAG_SIZE and rest else (b"", line)


def authentic(key: bytes, head: bytes, line: bytes, payload: bytes = b"") -> bool:
    """Whether the line (and the payload after it) carry the tag that only the key makes."""
    return bool(key) and hmac.compare_digest(tag(key, line, payload), head)


class Reader:
    """Lines and exact byte counts from a pipe, with a buffer of its own (it grows in place: a 64 MiB
    answer arrives in 64 KiB reads). receive(*wait): what came next, b"" if nothing came in time (then it
    is asked again), None at the end of the pipe. flood: the most bytes a line may take."""

    def __init__(self, receive, flood: int = None):
        self.receive, self.flood, self.buffer = receive, flood, bytearray()

    def line(self, *wait):
        """The next line, without its newline; None at the end of the pipe."""
        while b"\n" not in self.buffer:
            if self.flood is not None and length(self.buffer) > self.flood:
                raise ValueError("the sandbox flooded its reply channel")
            if not self._more(*wait):
                return None
        end = self.buffer.index(b"\n")
        line = as_bytes(self.buffer[:end])
        del self.buffer[:end + 1]
        return line

    def exact(self, size: int, *wait):
        """Exactly `size` bytes; None if the pipe ended first."""
        while length(self.buffer) < size:
            if not self._more(*wait):
                return None
        with view(self.buffer) as whole:
            data = as_bytes(whole[:size])
        self.buffer = self.buffer[size:]  # what follows (small): the large buffer is freed
        return data

    def _more(self, *wait) -> bool:
        chunk = self.receive(*wait)
        if chunk is None:
            return False
        self.buffer += chunk
        return True
