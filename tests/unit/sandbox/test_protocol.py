"""autograder.sandbox.protocol: the one framing that the grader (channel.py, session.py) and the child
(worker.py) both use, read back with its own Reader from chunks cut anywhere."""
import hashlib
import hmac
import json

import pytest

from autograder.sandbox.protocol import Reader, authentic, request, signed, untag

KEY = bytes(range(32))


def chunks(data: bytes, size: int):
    """A receive() that hands out `data` `size` bytes at a time, with a b"" (nothing yet) between, then None."""
    parts = [data[i:i + size] for i in range(0, len(data), size)]
    script = [piece for part in parts for piece in (b"", part)]
    return lambda *wait: script.pop(0) if script else None


@pytest.mark.parametrize("size", [1, 3, 64, 10_000])
def test_a_signed_message_reads_back_authentic_whatever_the_chunks(size):
    line, payload = json.dumps({"id": 3, "size": 5}).encode(), b"ab\ncd"
    pipe = Reader(chunks(b"student noise" + signed(KEY, line, payload) + signed(KEY, b"{}", b""), size))
    assert pipe.line() == b"student noise"  # the message's leading newline ends what came before
    head, text = untag(pipe.line())
    assert text == line and pipe.exact(5) == payload and authentic(KEY, head, text, payload)
    assert pipe.line() == b""
    head, text = untag(pipe.line())
    assert text == b"{}" and authentic(KEY, head, text)
    assert pipe.line() is None and pipe.exact(1) is None  # the end of the pipe


def test_the_tag_is_hmac_sha256_of_the_line_and_payload():
    head, text = untag(signed(KEY, b'{"a": 1}', b"xyz").split(b"\n")[1])
    oracle = hmac.new(KEY, b'{"a": 1}\nxyz', hashlib.sha256).hexdigest().encode()
    assert text == b'{"a": 1}' and head == oracle


def test_what_the_key_did_not_sign_is_not_authentic():
    head, text = untag(signed(KEY, b'{"a": 1}', b"xyz").split(b"\n")[1])
    assert authentic(KEY, head, text, b"xyz")
    assert not authentic(KEY, head, text, b"xyZ")
    assert not authentic(KEY, head, b'{"a": 2}', b"xyz")
    assert not authentic(bytes(32), head, text, b"xyz")
    assert not authentic(b"", *untag(signed(b"", b"{}", b"").split(b"\n")[1]))  # no key: nothing is authentic
    assert untag(b'{"a": 1}') == (b"", b'{"a": 1}')  # unsigned: no tag
    assert untag(b"x" * 64) == (b"", b"x" * 64)


def test_the_c_digest_the_worker_passes_gives_the_same_tag():
    from _hashlib import hmac_digest
    assert signed(KEY, b"{}", b"p", hmac_digest) == signed(KEY, b"{}", b"p")


def test_a_request_is_its_json_line_then_its_payload():
    pipe = Reader(chunks(request({"id": 1, "size": 4}, b"\n\n\n\n") + request({"cells": []}), 2))
    header = json.loads(pipe.line())
    assert header == {"id": 1, "size": 4} and pipe.exact(header["size"]) == b"\n\n\n\n"
    assert json.loads(pipe.line()) == {"cells": []} and pipe.line() is None


def test_a_line_longer_than_the_flood_limit_is_refused():
    pipe = Reader(chunks(b"x" * 100 + b"\n", 10), flood=50)
    with pytest.raises(ValueError, match="flooded"):
        pipe.line()
    assert Reader(chunks(b"x" * 100 + b"\n", 10), flood=200).line() == b"x" * 100


def test_the_wait_is_handed_to_receive():
    seen = []
    pipe = Reader(lambda *wait: seen.append(wait) or None)
    assert pipe.line(12.5) is None and pipe.exact(3, 7.0) is None
    assert seen == [(12.5,), (7.0,)]
