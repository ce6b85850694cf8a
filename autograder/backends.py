"""Where the checks' probes run, and how what happened there becomes a message for the student.

The checks call `student.run(probe, **spec)` and get plain data back, or a CheckFailure already
worded for the student. Three backends answer:

* LocalStudent: the student's own kernel (the in-notebook self-check), in this process;
* Reference: the instructor's reference, in this process (a failure there is the course's bug);
* SandboxStudent: a submission being graded, in the sandbox, within a time budget per item and
  for the whole notebook.
"""
import contextlib
import copy
import functools
import hashlib
import io
import os
import time

import torch

from .checks import probes
from .checks.answers import forged
from .checks.read import CheckFailure
from .exercises import FIELDS
from .sandbox import Sandbox, SandboxError
from .text import (check_in_sandbox_failed, clip, could_not_run, item_time_used, not_defined, not_implemented,
                   notebook_time_used, raised, sandbox_stopped, tampered)


# A switch for the tests, never a command-line option: every report in the sandbox's answers is rewritten to the
# reference's for the same request (checks/answers.py), as code that can write the whole sandbox could; what
# still scores then rests on values alone (tests/test_reports.py, tests/integration/test_forged_reports.py).
FORGE_REPORTS = "LESSON20_TEST_FORGE_REPORTS"


def probe_failure(obs: dict, context: str) -> CheckFailure:
    """Word a probe's non-ok answer for the student. context: "kernel" (self-check) or "sandbox"."""
    obs = {k: (clip(v, k) if k in ("name", "call", "type", "message", "where", "status") else v)
           for k, v in obs.items()}
    status = obs.get("status")
    if status == "missing":
        return CheckFailure(not_defined(obs["name"], context), "missing")
    if status == "raised":
        if obs.get("type") == "NotImplementedError":
            return CheckFailure(not_implemented(obs["call"], obs.get("where")), "not_implemented")
        return CheckFailure(raised(obs["call"], obs["type"], obs["message"], obs.get("where")))
    return CheckFailure(obs.get("message") or could_not_run(status), "error")  # probes.run's "error"


def value_key(*parts) -> str:
    """A key for plain data (tensors, numbers, strings, lists, dicts): the SHA-256 of its torch.save bytes."""
    buffer = io.BytesIO()
    torch.save(parts, buffer)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


def recall(store: dict, key, compute):
    """compute() once per key of `store` (an answer that depends only on what the key was made from); each
    caller gets its own deep copy, so a check that changes what it was handed changes nothing for the next."""
    if key not in store:
        store[key] = compute()
    return copy.deepcopy(store[key])


def remembered(oracle):
    """An oracle whose answer depends only on its arguments: computed once per grading process and kept for
    the next submission's checks, which ask the same seeded questions (each caller gets its own copy)."""
    answers = {}

    @functools.wraps(oracle)
    def answer(*args, **kwargs):
        return recall(answers, value_key(args, kwargs), lambda: oracle(*args, **kwargs))
    return answer


class LocalStudent:
    """Runs probes in this process, against a namespace of names -> objects."""

    context = "kernel"
    in_process = True  # nothing measured from outside: a check needing the grader's sandbox waits for grading

    def __init__(self, namespace: dict, device: str = "cpu"):
        self.namespace = namespace
        self.device = device  # where the probes put models and batches: "cuda" for the self-check's smoke run

    def begin_item(self, item_id: str):
        pass

    def end_item(self):
        pass

    def uncharged(self):
        return contextlib.nullcontext()

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        """measure_memory: nothing can be measured from inside the process being measured; ignored."""
        obs = probes.run(self.namespace, probe, spec, self.device)
        if obs["status"] != "ok":
            raise probe_failure(obs, self.context)
        return obs


class Reference(LocalStudent):
    """The instructor's reference: a failure here is a bug in the course, not the student's.

    Its answers depend only on the probe and its spec, so they are kept for the next submission.
    It comes with `units`: its code for the contract names, one unit per item (reference.stand_in_units),
    from which some stand in for a submission's other items while one is graded (stand_in_plan.plan).
    """

    _memo = {}

    def __init__(self, namespace: dict, units: dict = None):
        super().__init__(namespace)
        self.units = units or {}

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        return recall(self._memo, (id(self.namespace), value_key(probe, spec)), lambda: self._answer(probe, spec))

    def _answer(self, probe: str, spec: dict) -> dict:
        obs = probes.run(self.namespace, probe, spec)
        if obs["status"] != "ok":
            raise RuntimeError(f"the reference failed probe {probe}: {obs}")
        return obs


class SandboxStudent:
    """The checks' `student` backend during grading: probes run in the sandbox, with a time budget
    per item (`timeout`) and for all items together (`total_seconds`).

    An item is charged everything its checks take, in the sandbox and here: the request, reading
    the answer back, judging it and wording the message (from begin_item to end_item). Running the
    notebook again after a check ended the sandbox's process is charged to the whole notebook's
    budget, not to the item whose check happened to come next.
    """

    context = "sandbox"
    CRASHES_PER_ITEM = 2  # after this many, the item's remaining checks fail without running again

    def __init__(self, sandbox: Sandbox, timeout: float, total_seconds: float, setups: dict = None,
                 reference: Reference = None):
        """setups: {item: what its fork is handed (stand_in_plan.plan): the reference's code that stands in for
        other items' while its checks run}. Each item's checks run in a fork of their own, one item after
        the other: an item whose checks are done is never taken up again (see stand_in_plan.py for why).
        reference: whose answers replace the reports in the sandbox's when the tests' FORGE_REPORTS is set."""
        self.sandbox = sandbox
        self.forge = reference if os.environ.get(FORGE_REPORTS) else None
        self.setups = setups or {}
        self.done = []        # the items whose checks have run, in order
        self.timeout = timeout
        self.total_seconds = total_seconds
        self.item = None
        self.mark = None      # when the time not yet charged to self.item began (None: between checks)
        self.spent = {}       # item -> seconds its checks took, reloads aside
        self.reloaded = 0.0   # seconds spent running the notebook again after a crash
        self.crashes = {}
        self.failures = {}  # item -> CheckFailure that ended it (timeout, crashes): later checks fail fast
        self.tampered = {}  # item -> what the sandbox's guard caught the code doing during its checks

    def begin_item(self, item_id: str):
        """A check of `item_id` starts: its time counts from here."""
        self._charge()
        self.item, self.mark = item_id, time.monotonic()

    def end_item(self):
        """The check ended (its verdict and message made): charge it, then stop the clock."""
        self._charge()
        self.mark = None

    @contextlib.contextmanager
    def uncharged(self):
        """Time spent here (the reference computing what to compare with) is not the item's."""
        self._charge()
        try:
            yield
        finally:
            self.mark = time.monotonic() if self.mark is not None else None

    def _charge(self):
        now = time.monotonic()
        if self.mark is not None and self.item is not None:
            self.spent[self.item] = self.spent.get(self.item, 0.0) + now - self.mark
        self.mark = now if self.mark is not None else None

    def total_left(self) -> float:
        return self.total_seconds - sum(self.spent.values()) - self.reloaded

    def _fail_fast(self, item: str, text: str, reason: str):
        self.failures[item] = CheckFailure(text, reason)
        raise CheckFailure(text, reason)

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        item = self.item
        if item in self.failures:  # a new exception each time: re-raising one would grow its traceback
            raise CheckFailure(str(self.failures[item]), self.failures[item].reason)
        self._charge()
        what = probe.replace("_", " ")
        total_left = self.total_left()
        item_left = self.timeout - self.spent.get(item, 0.0)
        if total_left <= 0:  # the whole notebook's time is used up
            self._fail_fast(item, notebook_time_used(what, self.total_seconds), "timeout")
        if item_left <= 0:  # its checks (the grader's own work on its answers included) took all its time
            self._fail_fast(item, item_time_used(what, self.timeout), "timeout")
        if self.sandbox.channel is None and self.sandbox.restarts >= self.sandbox.limits.max_restarts:
            self._fail_fast(item, sandbox_stopped(what, self.sandbox.restarts), "crashed")
        if not self.done or self.done[-1] != item:
            if item in self.done:  # its fork would come after forks that held its stand-ins' secrets: never
                raise RuntimeError(f"the checks of {item} came back after another item's: each item's checks "
                                   "must run one after the other")
            self.done.append(item)
        try:
            self.sandbox.use_item(item, self.setups.get(item), seconds=max(min(item_left, total_left), 0.5))
            obs = self.sandbox.request(probe, spec, timeout=max(min(item_left, total_left), 0.5),
                                       within=max(total_left, 0.5), measure_memory=measure_memory)
        except SandboxError as exc:
            reloading = exc.doing == "running your notebook"
            failure = CheckFailure(check_in_sandbox_failed(what, exc, reloading, self.total_seconds, self.timeout),
                                   exc.reason)
            self.crashes[item] = self.crashes.get(item, 0) + 1
            if exc.reason == "timeout" or self.crashes[item] >= self.CRASHES_PER_ITEM:
                self.failures[item] = failure
            raise failure from None
        finally:  # running the notebook again after a crash is the whole notebook's time, not this item's
            self._charge()
            self.spent[item] = self.spent.get(item, 0.0) - self.sandbox.reload_seconds
            self.reloaded += self.sandbox.reload_seconds
        if obs["status"] == "tampered":
            self.tampered.setdefault(item, []).extend(f for f in obs["flags"] if f not in self.tampered.get(item, []))
            raise CheckFailure(tampered(what), "tampered")
        if obs["status"] != "ok":
            raise probe_failure(obs, self.context)
        if self.forge is None:
            return obs
        with self.uncharged():
            return forge_reports(obs, self.forge, probe, spec)


def forge_reports(obs: dict, reference: Reference, probe: str, spec: dict) -> dict:
    """The tests' fault hook: `obs` with every report replaced by the reference's answer to the same request."""
    try:
        return forged(obs, reference.run(probe, **spec), FIELDS)
    except RuntimeError:  # the reference itself cannot answer this request: there is nothing to forge from
        return obs


def plain_problem(p: dict) -> dict:
    """A problem the sandbox reported while loading, as the grader keeps it: known keys, short strings."""
    line = p.get("line")
    return {"cell": p.get("cell") if isinstance(p.get("cell"), int) else -1,
            "line": line if isinstance(line, int) else None,
            "type": clip(p.get("type"), "type"), "message": clip(p.get("message"), "message"),
            "where": clip(p.get("where"), "where")}
