"""The channel to one submission's child: its pipes, read and written with protocol.py's framing, and what
it writes to stdout and stderr."""
import json
import os
import select
import threading
import time

from .decode import read_answer
from .protocol import Reader, authentic, untag


class Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first `limit` bytes (so a flood cannot block or fill memory)."""

    def __init__(self, fd: int, limit: int):
        super().__init__(daemon=True)
        self.fd, self.limit, self.kept = fd, limit, bytearray()
        self.start()

    def run(self):
        try:
            while chunk := os.read(self.fd, 1 << 16):
                self.kept += chunk[:max(self.limit - len(self.kept), 0)]
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def tail(self) -> str:
        """The last line kept (the caller shortens it for whatever it shows)."""
        lines = bytes(self.kept[-600:]).decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else ""

class ItemMessages:
    """What the child says about the items' forks (a mixin of Channel: it reads with Channel.line)."""

    def template_message(self, kind: str, deadline: float, nonce: str = None):
        """The child's next message of this kind ("forked", "item_done"), signed with its own key (and carrying
        `nonce`, if given); what else comes first is skipped as forged. None if the child died."""
        while True:
            message = self.line(deadline, lenient=True)
            if message is None:
                return None
            if kind in message and (nonce is None or message.get("nonce") == nonce) \
                    and self.authentic(key=self.template_key):
                return message
            self.forged += 1

    def item_ready(self, deadline: float, nonce: str):
        """The item's fork's word that it holds its stand-ins, signed with the item's key; None if it died."""
        while True:
            message = self.line(deadline, lenient=True)
            if message is None:
                return None
            if "item_done" in message and self.authentic(key=self.template_key):
                self.fork_ended = message
                return None
            if message.get("item_ready") is True and message.get("nonce") == nonce and self.authentic():
                return message
            self.forged += 1

    def hello(self, deadline: float, nonce: str):
        """Read the child's progress ({"cell": i}, kept in .cell) until its hello, which must carry the
        nonce the grader sent; None if it died first."""
        while True:
            message = self.line(deadline, lenient=True)
            if message is None:
                return None
            if "ready" in message and message.get("nonce") == nonce and self.authentic():
                break
            if "cell" in message and "ready" not in message:
                self.cell = message["cell"] if isinstance(message["cell"], int) else None
            else:
                self.forged += 1
        self.cell = None
        if message.get("ready") is not True:
            raise ValueError("the sandbox did not start properly")
        return message


class Channel(ItemMessages):
    """One submission's child: the request and reply pipes (protocol.py's framing), and the drains of its
    stdout and stderr."""

    def __init__(self, requests: int, replies: int, out: Drain, err: Drain):
        self.requests, self.replies, self.out, self.err = requests, replies, out, err
        self.pipe = Reader(self.receive, flood=2**20)  # the reply pipe, read with its deadline
        self.cell = None  # the cell the child last said it was starting, while it runs the notebook
        self.forged = 0   # replies without the request's nonce: written by the student's code, and skipped
        self.key = b""    # the HMAC key of whoever answers now (the child, or an item's fork): only its messages carry it
        self.template_key = b""  # the child's own key, which it signs its messages about the items' forks with
        self.fork_ended = None   # the child's word that the item's fork ended while a request waited for it
        self.raw, self.tag = b"", b""  # the last line read: its JSON text, and the tag before it
        os.set_blocking(requests, False)

    def send(self, data: bytes, deadline: float) -> bool:
        """Write everything before the deadline; False if the child closed its end (it died)."""
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            _, writable, _ = select.select([], [self.requests], [], min(left, 1.0))
            if writable:
                try:
                    view = view[os.write(self.requests, view):]
                except BlockingIOError:
                    continue
                except OSError:
                    return False
        return True

    def receive(self, deadline: float):
        """What the reply pipe has (waiting at most until the deadline, b"" if nothing came); None at its end."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        ready, _, _ = select.select([self.replies], [], [], min(left, 1.0))
        if not ready:
            return b""
        return os.read(self.replies, 1 << 20) or None

    def line(self, deadline: float, lenient: bool = False):
        """The next JSON line as a dict; None if the child died; raises TimeoutError or ValueError.
        lenient: an unreadable line is {} (the student's code may write anything into the pipe)."""
        line = b""
        while not line.strip():  # the child starts every message on a new line: empty lines come between
            line = self.pipe.line(deadline)
            if line is None:
                return None
        self.tag, self.raw = untag(line)
        try:
            message = json.loads(self.raw)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict):
            if lenient:
                return {}
            raise ValueError("the sandbox sent an unreadable message")
        return message

    def authentic(self, payload: bytes = b"", key: bytes = None) -> bool:
        """Whether the last line (and the payload after it) came from the child's own code: it carries the
        HMAC, under this run's key (default: the current one), that the grader sent. Student code in the same
        process may own the pipe (dup2) and read every request, but never the key."""
        return authentic(self.key if key is None else key, self.tag, self.raw, payload)

    def answer(self, request_id: int, deadline: float, limit: int, nonce: str):
        """The child's plain-data answer to request `request_id`, whose reply must carry `nonce`; None if it
        died first. ValueError if it broke the protocol: out of turn, too large, or refused by
        decode.read_answer (decode.Refused). A reply with tamper flags has no answer:
        {"status": "tampered", "flags": [...]}."""
        while True:
            reply = self.line(deadline, lenient=True)
            if reply is None:
                return None
            size = reply.get("size", 0)
            if not isinstance(size, int) or size < 0:
                raise ValueError("the sandbox answered out of turn")
            ours = reply.get("id") == request_id and reply.get("nonce") == nonce
            if size > limit:
                raise ValueError("the answer was too large to read back" if ours else "the sandbox answered out of turn")
            if "item_done" in reply and not size and self.authentic(key=self.template_key):
                self.fork_ended = reply  # the item's fork died; the child lives on
                return None
            raw, tag = self.raw, self.tag
            payload = self.pipe.exact(size, deadline)
            if payload is None:
                return None
            self.raw, self.tag = raw, tag
            if ours and self.authentic(payload):
                break
            self.forged += 1  # written by the student's code: skipped, its bytes with it
        flags = reply.get("flags")
        if isinstance(flags, list) and flags:
            return {"status": "tampered", "flags": [str(f)[:200] for f in flags[:20]]}
        answer = read_answer(payload, limit)  # plain data, bounded, or Refused (a ValueError)
        if not isinstance(answer, dict) or "status" not in answer:
            raise ValueError("the answer had the wrong shape")
        return answer

    def close(self):
        for fd in (self.requests, self.replies):
            try:
                os.close(fd)
            except OSError:
                pass

    def join_drains(self):
        for drain in (self.out, self.err):
            drain.join(timeout=2)

