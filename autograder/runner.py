"""Run the pytest checks of some items against one student's code and collect the outcomes.

The checks ask a *backend* to run probes: `LocalStudent` calls code in this process (the
student's own kernel, or the trusted reference); `sandbox.SandboxStudent` calls code in an
isolated process. Either way the verdict is computed here, from plain data.
"""
import contextlib
import copy
import hashlib
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

from . import rubric
from .checks import probes
from .checks.expect import CheckFailure
from .items import Item, get_item

CHECKS_DIR = Path(__file__).parent / "checks"
HIDDEN_DIR = Path(__file__).parent / "instructor" / "hidden"


@dataclass
class Outcome:
    name: str        # a title for the student, from the check's docstring and parameters
    passed: bool
    message: str = ""
    hidden: bool = False
    reason: str = ""  # CheckFailure.reason, when the failure was about the code's state, not its logic
    check: str = ""   # the check function it came from (parametrised cases share it); see rubric.py


@dataclass
class ItemResult:
    item: Item
    outcomes: list = field(default_factory=list)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    def behaviours(self) -> list:
        """Per behaviour of the item's rubric: points, earned, checks passed of total, failing checks."""
        return rubric.judge(self.item, self.outcomes)

    @property
    def score(self) -> float:
        """The points of the rubric's behaviours whose checks all pass (see rubric.py)."""
        return rubric.score(self.item, self.behaviours())


def _short(obs: dict) -> dict:
    """A probe's answer with its text fields cut short: in the sandbox, they are whatever the code wrote."""
    limits = {"name": 100, "call": 300, "type": 80, "message": 400, "where": 300, "status": 40}
    return {k: (str(v)[:limits[k]] if k in limits else v) for k, v in obs.items()}


def probe_failure(obs: dict, context: str) -> CheckFailure:
    """Word a probe's non-ok status for the student."""
    obs = _short(obs)
    status = obs.get("status")
    if status == "missing":
        name = obs["name"]
        hint = ("Run the cell that defines it, and check the spelling."
                if context == "kernel" else
                "Your notebook must define it at the top level of the exercise's solution cell.")
        return CheckFailure(f"{name} is not defined. {hint}", "missing")
    if status == "raised":
        where = f" ({obs['where']})" if obs.get("where") else ""
        if obs.get("type") == "NotImplementedError":
            return CheckFailure(f"{obs['call']} is not implemented yet: it raised NotImplementedError{where}. "
                                "Replace the `raise NotImplementedError(...)` line with your code.",
                                "not_implemented")
        return CheckFailure(f"{obs['call']} raised {obs['type']}: {obs['message']}{where}")
    return CheckFailure(obs.get("message") or f"the check could not run your code ({status})", status or "")


class LocalStudent:
    """Runs probes in this process, against a namespace of names -> objects."""

    context = "kernel"

    def __init__(self, namespace: dict):
        self.namespace = namespace

    def begin_item(self, item_id: str):
        pass

    def run(self, probe: str, **spec) -> dict:
        obs = probes.run(self.namespace, probe, spec)
        if obs["status"] != "ok":
            raise probe_failure(obs, self.context)
        return obs


class Reference(LocalStudent):
    """The instructor's reference: a failure here is a bug in the course, not the student's.

    Its answers depend only on the probe and its spec, so they are kept for the next submission.
    """

    _memo = {}

    def run(self, probe: str, **spec) -> dict:
        buffer = io.BytesIO()
        torch.save((probe, spec), buffer)
        key = (id(self.namespace), hashlib.sha256(buffer.getvalue()).hexdigest())
        if key not in self._memo:
            obs = probes.run(self.namespace, probe, spec)
            if obs["status"] != "ok":
                raise RuntimeError(f"the reference failed probe {probe}: {obs}")
            self._memo[key] = obs
        return copy.deepcopy(self._memo[key])


def _title(item: pytest.Item) -> str:
    doc = (getattr(item, "function", None).__doc__ or "").strip().splitlines()
    title = doc[0].rstrip(".") if doc else item.originalname.replace("test_", "").replace("_", " ")
    params = getattr(item, "callspec", None)
    return f"{title} [{params.id}]" if params else title


def _student_message(excinfo) -> str:
    if excinfo is None:
        return ""
    exc = excinfo.value
    if isinstance(exc, AssertionError):
        # pytest's assertion rewriting appends the failing expression; the student gets our words only
        text = str(exc).split("\nassert ")[0].strip()
        return text or "a check failed"
    return f"internal error in the check ({type(exc).__name__}: {exc}); please tell your instructor"


class _Collector:
    """A pytest plugin: gives the checks their fixtures and records each outcome."""

    def __init__(self, student, reference):
        self._student, self._reference = student, reference
        self.outcomes = []  # (item id, Outcome)

    @pytest.fixture
    def student(self):
        return self._student

    @pytest.fixture
    def reference(self):
        if self._reference is None:
            pytest.skip("hidden checks need the reference")
        return self._reference

    def pytest_runtest_setup(self, item):
        self._student.begin_item(_item_id(item))

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                return
            hidden = HIDDEN_DIR in Path(str(item.path)).parents
            reason = getattr(call.excinfo.value, "reason", "") if call.excinfo else ""
            self.outcomes.append((_item_id(item), Outcome(_title(item), report.passed,
                                                          _student_message(call.excinfo), hidden, reason,
                                                          item.originalname)))


def _item_id(item: pytest.Item) -> str:
    return Path(str(item.path)).stem.removeprefix("test_")


def check_files(item_ids, include_hidden: bool) -> list:
    files = []
    for item_id in item_ids:
        files.append(CHECKS_DIR / f"test_{item_id}.py")
        hidden = HIDDEN_DIR / f"test_{item_id}.py"
        if include_hidden:
            if not hidden.exists():
                raise FileNotFoundError(f"hidden checks for {item_id} are not installed here ({hidden}); "
                                        "they ship with the instructor's copy of the course, not the student package")
            files.append(hidden)
    return files


def run_checks(item_ids, student, reference=None, include_hidden=False) -> dict:
    """Run the checks of `item_ids` (visible, plus hidden if asked) -> {item id: ItemResult}."""
    items = [get_item(i) for i in item_ids]
    results = {item.id: ItemResult(item) for item in items}
    collector = _Collector(student, reference)
    args = [str(f) for f in check_files([i.id for i in items], include_hidden)]
    args += ["-c", str(CHECKS_DIR / "pytest.ini"), "--rootdir", str(CHECKS_DIR.parent.parent),
             "-p", "no:cacheprovider", "-q", "--capture=no", "-W", "ignore", "--tb=native",
             # plugins the checks do not need, which would cost each submission a second (gc.collect, logging)
             "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:logging",
             "-p", "no:faulthandler"]
    saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the checks need no third-party plugin
    try:
        with contextlib.redirect_stdout(io.StringIO()) as log:
            code = pytest.main(args, plugins=[collector])
    finally:
        if saved is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the checks could not run (pytest exit code {code}):\n{log.getvalue()[-3000:]}")
    for item_id, outcome in collector.outcomes:
        results[item_id].outcomes.append(outcome)
    return results
