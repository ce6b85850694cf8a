"""autograder.sandbox.child: its messages without json, and the census of what a fork can reach (the child
itself runs in tests/unit/sandbox/test_session.py)."""
import hashlib
import json

import torch

from autograder.sandbox import isolation, worker

PARTS = worker.Parts(str(isolation.HERE), str(isolation.HERE / "guard.py"))


def make_child():
    return PARTS.child.Child((0, 1, 2, 3), torch, PARTS, [], [], isolated=False)


def test_a_plain_line_carries_only_our_own_values_and_the_flag():
    line = make_child().plain_line({"id": 3, "nonce": "ab12", "size": 99, "item_done": "master_weights",
                                    "evil": 'x", "flags": []', "clean": True})
    message = json.loads(line)
    assert message == {"id": 3, "nonce": "ab12", "item_done": "master_weights", "clean": True, "size": 0,
                       "flags": ["rebinding what the grader's replies rely on"]}


def test_the_census_finds_reachable_lines_and_only_those():
    secret = "self.scale *= self.backoff_factor  # a line only this test holds"
    kept = {"deep": [("x", secret)]}  # noqa: F841  (reachable from this frame's locals)
    digest = hashlib.sha256(secret.strip().encode()).hexdigest()
    absent = hashlib.sha256(" ".join(["nobody"] * 3 + ["wrote", "this"]).encode()).hexdigest()  # the line is not kept
    found = PARTS.child.census({"forbidden": [absent], "expected": [digest]})
    assert found == {"forbidden": [], "expected": [digest]}
