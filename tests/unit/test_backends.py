"""autograder.backends: how probe answers and sandbox failures are worded, and the time budgets."""
from typing import get_args

import pytest
import torch

from autograder.backends import LocalStudent, Reference, SandboxStudent, probe_failure, remembered
from autograder.checks.read import CheckFailure, CheckReason
from autograder.limits import Limits
from autograder.sandbox import SandboxError
from autograder.sandbox.errors import SandboxReason
from autograder.text import sandbox_failure


def test_missing_name_in_kernel_and_sandbox():
    kernel = probe_failure({"status": "missing", "name": "foo"}, "kernel")
    assert kernel.reason == "missing" and "Run the cell that defines it" in str(kernel)
    graded = probe_failure({"status": "missing", "name": "foo"}, "sandbox")
    assert "foo is not defined" in str(graded) and "top level of the exercise's solution cell" not in str(graded)


def test_raised_and_not_implemented():
    stub = probe_failure({"status": "raised", "call": "f(x)", "type": "NotImplementedError", "message": "",
                          "where": "line 3 in f(): raise"}, "sandbox")
    assert stub.reason == "not_implemented" and "f(x) is not implemented yet" in str(stub)
    bug = probe_failure({"status": "raised", "call": "f(x)", "type": "KeyError", "message": "'k'" * 1000,
                         "where": ""}, "sandbox")
    assert str(bug).startswith("f(x) raised KeyError") and len(str(bug)) < 600


def test_sandbox_failures_read_as_what_happened():
    timeout = SandboxError("timeout", "out of time", "loading your notebook's code", cell=12)
    assert sandbox_failure(timeout) == ("took longer than it may while loading your notebook's code: cell 12 was "
                                        "still running when the time ran out")
    killed = SandboxError("crashed", "the child ended", "running loss_scaler", status=-9, died=True)
    assert "running loss_scaler: it was killed (out of memory" in sandbox_failure(killed)
    exited = SandboxError("crashed", "the child ended", "running q5_answer", status=3, tail="boom", died=True)
    assert sandbox_failure(exited).endswith("it exited with code 3. Last message: boom")
    assert sandbox_failure(SandboxError("crashed", "the sandbox could not start your code")) == \
        "the sandbox could not start your code"


class FakeSandbox:
    """Answers each request from a script: an answer dict, or a SandboxError to raise; a request after
    one that ended the child first "reloads" for `reload` seconds of a fake clock. Records each request's
    (timeout, within)."""

    def __init__(self, script, clock=None, reload=0.0, answer_seconds=0.0):
        self.script, self.limits, self.channel, self.restarts = list(script), Limits(max_restarts=2), object(), 1
        self.reload_seconds, self.clock, self.reload, self.answer_seconds = 0.0, clock, reload, answer_seconds
        self.asked, self.items = [], []

    def use_item(self, item, setup=None, seconds=None):
        if not self.items or self.items[-1][0] != item:
            self.items.append((item, setup))

    def request(self, probe, spec, timeout, within=None, measure_memory=False):
        self.asked.append((timeout, within))
        self.reload_seconds = 0.0
        if self.channel is None:
            self.channel = object()
            self.reload_seconds = self.reload
            self.clock.now += self.reload
        if self.clock is not None:
            self.clock.now += self.answer_seconds
        step = self.script.pop(0)
        if isinstance(step, Exception):
            self.channel = None
            raise step
        return step


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr("autograder.backends.time.monotonic", fake)
    return fake


def test_judging_and_wording_an_answer_are_charged_to_its_item(clock):
    """Time spent in the grader on an answer (after the request returned) counts against the item."""
    ok = {"status": "ok"}
    student = SandboxStudent(FakeSandbox([ok, ok], clock), timeout=5, total_seconds=100)
    student.begin_item("x")
    student.run("p")
    clock.now += 6  # the check judges the answer and words its message for 6 s
    student.end_item()
    assert student.spent["x"] == pytest.approx(6)
    student.begin_item("x")
    with pytest.raises(CheckFailure, match="used up its 5 s") as failed:
        student.run("p")
    assert failed.value.reason == "timeout"
    student.begin_item("y")  # another item still has its own time
    assert student.run("p") == ok


def test_reloading_after_a_crash_is_charged_to_the_notebook_not_the_item(clock):
    crash = SandboxError("crashed", "c", "running p", status=-9, died=True)
    ok = {"status": "ok"}
    sandbox = FakeSandbox([crash, ok, ok], clock, reload=30.0, answer_seconds=1.0)
    student = SandboxStudent(sandbox, timeout=5, total_seconds=40)
    student.begin_item("x")
    with pytest.raises(CheckFailure):
        student.run("p")
    student.end_item()
    student.begin_item("y")
    student.run("p")  # reloads for 30 s: not y's time, but the notebook's
    student.end_item()
    assert student.spent["y"] == pytest.approx(1.0) and student.reloaded == pytest.approx(30.0)
    assert student.total_left() == pytest.approx(40 - 1 - 1 - 30)
    student.begin_item("z")
    student.run("p")
    timeout, within = sandbox.asked[-1]
    assert within == pytest.approx(8) and timeout == pytest.approx(5)  # a reload may only use what is left


def test_a_timeout_ends_the_item_and_later_checks_fail_fast():
    student = SandboxStudent(FakeSandbox([SandboxError("timeout", "t", "running p")]), timeout=5, total_seconds=15)
    student.begin_item("x")
    with pytest.raises(CheckFailure) as first:
        student.run("p")
    assert first.value.reason == "timeout" and "5 s in all" in str(first.value)
    with pytest.raises(CheckFailure) as second:
        student.run("p")  # no request is made: the script is empty
    assert str(second.value) == str(first.value)


def test_crashes_past_the_restart_limit_skip_the_rest():
    crash = SandboxError("crashed", "c", "running p", status=-11, died=True)
    sandbox = FakeSandbox([crash])
    sandbox.restarts = 2
    student = SandboxStudent(sandbox, timeout=5, total_seconds=15)
    student.begin_item("x")
    with pytest.raises(CheckFailure, match="segmentation fault"):
        student.run("p")
    student.begin_item("y")
    with pytest.raises(CheckFailure, match="stopped the sandbox 2 times"):
        student.run("p")


def test_local_student_and_reference():
    assert LocalStudent({"Q5_ANSWER": "b"}).run("q5_answer")["answer"]["value"] == "b"
    with pytest.raises(CheckFailure, match="Q5_ANSWER is not defined"):
        LocalStudent({}).run("q5_answer")
    ref = Reference({"Q5_ANSWER": "c"})
    first = ref.run("q5_answer")
    first["answer"]["value"] = "changed"  # a check that edits an answer does not change the next one
    assert ref.run("q5_answer")["answer"]["value"] == "c"
    with pytest.raises(RuntimeError, match="reference failed"):
        Reference({}).run("q5_answer")


def test_the_references_own_time_is_not_charged(clock):
    ok = {"status": "ok"}
    student = SandboxStudent(FakeSandbox([ok], clock), timeout=5, total_seconds=100)
    student.begin_item("x")
    with student.uncharged():
        clock.now += 60  # the reference computing what to compare with
    clock.now += 1
    student.end_item()
    assert student.spent["x"] == pytest.approx(1)


def test_every_reason_a_check_fails_for_is_a_check_reason(clock):
    """Each way the backends fail a check, once: its reason is a word of CheckReason."""
    reasons = {}

    def fail(why, student, probe="q5_answer"):
        with pytest.raises(CheckFailure) as failure:
            student.run(probe)
        reasons[why] = failure.value.reason

    def sandboxed(*script):
        student = SandboxStudent(FakeSandbox(script, clock), timeout=5, total_seconds=15)
        student.begin_item("x")
        return student

    fail("not defined", LocalStudent({}))
    fail("the probe broke", LocalStudent({}), probe="no_such_probe")
    for raised in ("NotImplementedError", "KeyError"):
        obs = {"status": "raised", "call": "f()", "type": raised, "message": ""}
        reasons[raised] = probe_failure(obs, "sandbox").reason
    for reason in get_args(SandboxReason):
        fail(reason, sandboxed(SandboxError(reason, "d", "running p")))
    fail("tampered", sandboxed({"status": "tampered", "flags": ["f"]}))
    stopped = sandboxed()
    stopped.sandbox.channel, stopped.sandbox.restarts = None, stopped.sandbox.limits.max_restarts
    fail("stopped too often", stopped)
    late = sandboxed()
    clock.now += 6
    fail("out of its time", late)
    assert set(reasons.values()) >= {"missing", "error", "not_implemented", "", "tampered", "timeout", "crashed"}
    assert {why: r for why, r in reasons.items() if r not in get_args(CheckReason)} == {}


def test_each_item_gets_its_own_setup_and_an_item_never_comes_back():
    """The items' checks go to the sandbox one item after the other, each with its own stand-ins; an item
    taken up again after another's is the grader's own bug, never silently graded."""
    sandbox = FakeSandbox([{"status": "ok"}] * 4)
    student = SandboxStudent(sandbox, timeout=60, total_seconds=180, setups={"b": {"units": ["x"]}})
    for item in ("a", "a", "b"):
        student.begin_item(item)
        student.run("probe")
        student.end_item()
    assert sandbox.items == [("a", None), ("b", {"units": ["x"]})]
    student.begin_item("a")
    with pytest.raises(RuntimeError, match="came back"):
        student.run("probe")


def test_an_oracle_answers_once_per_question_and_each_caller_gets_its_own_copy():
    calls = []

    @remembered
    def doubled(values, factor=2.0):
        calls.append(1)
        return [values * factor]
    first = doubled(torch.ones(3), factor=2.0)
    first[0].add_(100)  # a check that changes what it was handed changes nothing for the next one
    again = doubled(torch.ones(3), factor=2.0)
    assert torch.equal(again[0], torch.full((3,), 2.0)) and len(calls) == 1
    assert torch.equal(doubled(torch.ones(3), factor=3.0)[0], torch.full((3,), 3.0)) and len(calls) == 2
    assert torch.equal(doubled(torch.zeros(3))[0], torch.zeros(3)) and len(calls) == 3
