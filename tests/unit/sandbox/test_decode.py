"""autograder.sandbox.decode: an answer from the child is read back bounded, or refused with its cause."""
import io
import resource
import struct
import time
import zipfile
from collections import OrderedDict

import pytest
import torch

from autograder.sandbox.decode import MAX_DEPTH, MAX_NODES, MAX_TEXT, Refused, read_answer, stored_zip

LIMIT = 64 * 2**20


def saved(value) -> bytes:
    buffer = io.BytesIO()
    torch.save(value, buffer)
    return buffer.getvalue()


def forged(pickled: bytes) -> bytes:
    """A torch.save archive whose data.pkl is `pickled`: what a child that writes its own bytes can send."""
    source = zipfile.ZipFile(io.BytesIO(saved(0)))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as archive:
        for member in source.infolist():
            archive.writestr(member.filename, pickled if member.filename.endswith("data.pkl") else source.read(member))
    return out.getvalue()


def text(s: str) -> bytes:
    encoded = s.encode()
    return b"X" + struct.pack("<I", len(encoded)) + encoded  # BINUNICODE


def refused(payload: bytes) -> str:
    with pytest.raises(Refused) as caught:
        read_answer(payload, LIMIT)
    return str(caught.value)


def test_what_a_probe_sends_is_read_back_unchanged():
    answer = {"status": "ok", "result": {"type": "float", "value": 0.25},
              "grads": [torch.randn(3, 4), None, torch.zeros(0)], "names": ["0.weight", "0.weight"],
              "same_objects": [True, False], "steps": [{"state": [{}, {}], "shape": []}, {"shape": []}],
              "dtypes": [torch.float16], "device": torch.device("cpu"), "empty": [(), ()],
              "ordered": OrderedDict(a=1), "big": 2**100, "view": torch.arange(10.0)[2:5]}
    back = read_answer(saved(answer), LIMIT)
    assert back.keys() == answer.keys() and torch.equal(back["grads"][0], answer["grads"][0])
    assert back["names"] == answer["names"] and back["big"] == 2**100 and back["view"].tolist() == [2.0, 3.0, 4.0]


def test_a_tensor_that_stores_less_than_it_claims_is_refused():
    message = refused(saved({"status": "ok", "value": torch.zeros(1).expand(10**9)}))
    assert "claims 1,000,000,000 elements but stores 1" in message and "expand" in message
    overlapping = torch.zeros(100).as_strided((100, 100), (0, 1))  # 10^4 elements claimed from a storage of 100
    assert "claims 10,000 elements but stores 100" in refused(saved({"status": "ok", "value": overlapping}))


def test_shared_or_self_containing_containers_are_refused_at_once():
    bomb = []
    for _ in range(30):  # 2^30 leaves once written out; a few hundred bytes pickled
        bomb = [bomb, bomb]
    started = time.monotonic()
    assert "the same list more than once" in refused(saved({"status": "ok", "value": bomb}))
    assert time.monotonic() - started < 5  # not a timed test of speed: a walk of 2^30 nodes would take hours
    box = []
    box.append(box)
    assert "the same list more than once" in refused(saved({"status": "ok", "value": box}))
    shared = {"k": 1}
    assert "the same dict more than once" in refused(saved({"status": "ok", "a": shared, "b": shared}))
    t = torch.zeros(3)
    assert "the same tensor more than once" in refused(saved({"status": "ok", "a": [t, t]}))


def test_deep_nesting_is_refused_without_recursion():
    depth = 10**5  # the pickler cannot write this (recursion), so the bytes are made by hand, as a forger would
    pickled = b"\x80\x02}" + text("status") + text("ok") + b"s" + text("value") + b"]" * depth + b"a" * (depth - 1)
    message = refused(forged(pickled + b"s."))
    assert f"nested more than {MAX_DEPTH} levels" in message


def test_long_strings_and_integers_are_refused_before_loading():
    assert "a string of 100,000,000 characters" in refused(forged(b"\x80\x02" + b"X" + struct.pack("<I", 10**8)))
    assert "a string of" in refused(saved({"status": "ok", "value": "x" * (MAX_TEXT + 1)}))
    assert "an integer of 2,001 bits" in refused(saved({"status": "ok", "value": 1 << 2000}))


def test_too_many_values_are_refused_before_loading():
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    message = refused(saved({"status": "ok", "value": {i: None for i in range(10**6)}}))
    assert f"more than {MAX_NODES:,} values" in message
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KiB: no 10^6-key dict built
    assert f"more than {MAX_NODES:,} values" in refused(saved({"status": "ok", "value": [0.5] * (MAX_NODES + 1)}))


def test_only_plain_objects_are_read():
    sparse = torch.sparse_coo_tensor(torch.tensor([[0, 5]]), torch.tensor([1.0, 2.0]), (10**9,))
    assert "not plain data" in refused(saved({"status": "ok", "value": sparse}))
    assert "not plain data" in refused(saved({"status": "ok", "value": torch.nn.Parameter(torch.zeros(2))}))
    assert "not plain data" in refused(saved({"status": "ok", "value": {1, 2}}))


def test_tensors_together_may_not_claim_more_than_the_answer_limit():
    storage = torch.zeros(200)
    payload = saved({"status": "ok", "value": [storage[:], storage[:]]})  # two views of one storage: 800 bytes sent
    sent = sum(m.file_size for m in zipfile.ZipFile(io.BytesIO(payload)).infolist())
    assert sent < 1600
    with pytest.raises(Refused, match=f"claim more than {sent:,} bytes together"):
        read_answer(payload, sent)


def test_garbage_is_a_protocol_error_not_a_crash():
    for payload in (b"garbage", forged(b"\x80\x02\xff\xff"), forged(b"\x80\x04\x95")):
        with pytest.raises(ValueError):
            read_answer(payload, LIMIT)


def test_stored_zip_accepts_torch_save_only():
    buffer = io.BytesIO()
    torch.save({"status": "ok"}, buffer)
    assert stored_zip(buffer.getvalue(), 2**20)
    assert not stored_zip(buffer.getvalue(), 10)
    assert not stored_zip(b"garbage", 2**20)
