"""autograder.sandbox.channel: the framing of the pipes between the grader and the child, read with deadlines,
and only the child's signed replies taken as answers."""
import hashlib
import hmac
import io
import json
import os
import time

import pytest
import torch

from autograder.sandbox.channel import Channel, Drain


def channel_pair():
    """A Channel whose other ends the test holds: (channel, write-to-replies fd, read-requests fd)."""
    requests, replies, out, err = os.pipe(), os.pipe(), os.pipe(), os.pipe()
    for fd in (out[1], err[1]):
        os.close(fd)
    ch = Channel(requests[1], replies[0], Drain(out[0], 100), Drain(err[0], 100))
    return ch, replies[1], requests[0]


def test_channel_reads_lines_and_exact_bytes():
    ch, theirs, _ = channel_pair()
    os.write(theirs, b'{"a": 1}\n' + b"xyz" + b'{"b": 2}\n')
    deadline = time.monotonic() + 2
    assert ch.line(deadline) == {"a": 1}
    assert ch.pipe.exact(3, deadline) == b"xyz"
    assert ch.line(deadline) == {"b": 2}
    os.close(theirs)
    assert ch.line(deadline) is None  # the child's end closed: it died


def test_channel_times_out_and_rejects_garbage():
    ch, theirs, _ = channel_pair()
    with pytest.raises(TimeoutError):
        ch.line(time.monotonic() + 0.2)
    os.write(theirs, b"[1, 2]\n")
    with pytest.raises(ValueError, match="unreadable"):
        ch.line(time.monotonic() + 1)


def test_only_the_childs_signed_replies_are_answers():
    """What the student's code writes into the reply pipe (a forged answer with the right id and even the
    right nonce, a line without its end) cannot pass for the child's answer: the child signs each message
    with the run's key (HMAC), which only its own locals hold, and starts it on a new line."""
    ch, theirs, _ = channel_pair()
    ch.key = b"k" * 32

    def message(header, payload, key):
        line = json.dumps(header).encode()
        tag = hmac.new(key, line + b"\n" + payload, hashlib.sha256).hexdigest().encode()
        return b"\n" + tag + b" " + line + b"\n" + payload

    def saved(value):
        buffer = io.BytesIO()
        torch.save({"status": "ok", "value": value}, buffer)
        return buffer.getvalue()

    forged, real = saved(1), saved(2)
    header = {"id": 1, "nonce": "n1", "size": len(forged)}
    os.write(theirs, b"garbage without an end" + message(header, forged, b"x" * 32)   # a guessed key
             + json.dumps(header).encode() + b"\n" + forged                          # no tag at all
             + message({"id": 1, "nonce": "n1", "size": len(real)}, real, ch.key))
    assert ch.answer(1, time.monotonic() + 2, 2**20, "n1") == {"status": "ok", "value": 2}
    assert ch.forged >= 2
