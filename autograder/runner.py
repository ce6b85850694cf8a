"""Run the pytest checks of some items against one student's code, collect the outcomes, score them.

The checks get three fixtures: `student` and `reference`, backends (backends.py) that run probes
wherever the code lives and hand back plain data, and `expected`, the oracles' values for the visible
checks' inputs (expected(oracle, *args, **kwargs): as released, or computed live by the release itself).
Whichever backend is used, the verdict is computed here, in this process. Each check names the rubric
behaviour it decides with `@pytest.mark.behaviour(id)`; a check without one, or naming a behaviour its
item's rubric (rubric.py) lacks, stops the run at collection.
"""
import contextlib
import importlib
import importlib.util
import io
import os
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from . import rubric
from .checks.read import CheckFailure, CheckReason
from .checks.released import released
from .checks.harness import usual_defaults
from .items import CHECKS_DIR, EXERCISES_DIR, HIDDEN_DIR, Item, check_file, get_item
from .text import CHECK_FAILED, internal_error

# a check that calls pytest.skip with a reason starting so could not check its behaviour on this grading machine
# (a protection it needs is missing: instructor/protections.py): recorded as "not checked", never as passed. Run
# in process (a backend that is `in_process`: the self-check, `check --all`), it is an ordinary skip: such a
# check is made only when the notebook is graded
NOT_CHECKED = "not checked: "


@dataclass
class Outcome:
    name: str        # a title for the student, from the check's docstring and parameters
    passed: bool
    message: str = ""
    hidden: bool = False
    reason: CheckReason = ""  # CheckFailure.reason, when the failure was about the code's state, not its logic
    check: str = ""   # the check function it came from (parametrised cases share it)
    behaviour: str = ""  # the rubric behaviour its check is marked with (rubric.py), "" for none


@dataclass
class ItemResult:
    item: Item
    outcomes: list = field(default_factory=list)
    review: list = field(default_factory=list)  # tamper flags: the item is not awarded automatically
    notes: list = field(default_factory=list)   # what the feedback says of how it was graded (stand-ins)
    said: list = field(default_factory=list)    # what its passing checks asked to show after them (Q5's feedback)
    diagnosis: str = ""  # the one cause its exercise's diagnosis confirmed, when several behaviours fail (diagnose)

    @property
    def passed(self) -> int:
        return sum(o.passed for o in self.outcomes)

    def behaviours(self) -> list:
        """Per behaviour of the item's rubric: points, earned, checks passed of total, failing checks."""
        return rubric.judge(self.item, self.outcomes)

    @property
    def score(self) -> float:
        """The points of the rubric's behaviours whose checks all pass (see rubric.py); 0 for an item set
        aside for review, which an instructor grades by hand."""
        return 0.0 if self.review else rubric.score(self.item, self.behaviours())


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
        return text or CHECK_FAILED
    return internal_error(exc)


class _Collector:
    """A pytest plugin: gives the checks their fixtures and records each outcome."""

    def __init__(self, student, reference, expected):
        self._student, self._reference, self._expected = student, reference, expected
        self.outcomes = []  # (item id, Outcome)
        self.notes = []     # (item id, text): what a check that passed asked to show with the grade
        self.diagnoses = {}  # item id -> the cause its exercise's diagnosis found ("" for none)

    @pytest.fixture
    def student(self):
        return self._student

    @pytest.fixture
    def reference(self):
        if self._reference is None:
            pytest.skip("hidden checks need the reference")
        return _Uncharged(self._reference, self._student)

    @pytest.fixture
    def expected(self):
        return self._expected

    def pytest_runtest_setup(self, item):
        self._student.begin_item(_item_id(item))

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_teardown(self, item, nextitem):
        self._student.end_item()  # the check's verdict and message are made: its time is charged
        item_id = _item_id(item)
        if nextitem is None or _item_id(nextitem) != item_id:  # its item's last check: diagnose before the next
            # item's, whose fork may not come back
            result = ItemResult(get_item(item_id), [o for i, o in self.outcomes if i == item_id])
            self.diagnoses[item_id] = diagnose(result, self._student, self._expected)

    @pytest.hookimpl(wrapper=True)
    def pytest_pycollect_makeitem(self, collector, name, obj):
        made = yield
        for check in made if isinstance(made, list) else [made]:
            if isinstance(check, pytest.Function):
                behaviour(check)  # a check that decides no behaviour of its item fails here, at collection
        return made

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        report = (yield).get_result()
        if report.when == "call" or (report.when == "setup" and not report.passed):
            message = _student_message(call.excinfo)
            if report.skipped:
                why = str(getattr(call.excinfo.value, "msg", "")) if call.excinfo else ""
                if not why.startswith(NOT_CHECKED) or getattr(self._student, "in_process", False):
                    return
                reason, message = "not_checked", why[len(NOT_CHECKED):]
            else:
                reason = getattr(call.excinfo.value, "reason", "") if call.excinfo else ""
            item_id, check = _item_id(item), item.originalname
            hidden = HIDDEN_DIR in Path(str(item.path)).parents
            self.outcomes.append((item_id, Outcome(_title(item), report.passed, message, hidden, reason, check,
                                                   behaviour(item))))
            # record_property("note", text) in a check: shown with the item's grade (the feedback of Q5's letter)
            self.notes += [(item_id, value) for key, value in item.user_properties if key == "note" and report.passed]


class _Uncharged:
    """The reference as the checks see it: the time it takes is not charged to the student's item."""

    def __init__(self, reference, student):
        self._reference, self._student = reference, student

    def run(self, probe: str, **spec) -> dict:
        with self._student.uncharged():
            return self._reference.run(probe, **spec)


def _item_id(item: pytest.Item) -> str:
    return Path(str(item.path)).stem.removeprefix("test_")


def behaviour(check: pytest.Function) -> str:
    """The id in the check's @pytest.mark.behaviour(id), or a collection error when that is not one of
    its item's behaviours in rubric.py."""
    item_id, mark = _item_id(check), check.get_closest_marker("behaviour")
    ids = [b.id for b in rubric.behaviours(item_id)]
    if mark is not None and len(mark.args) == 1 and mark.args[0] in ids:
        return mark.args[0]
    problem = (f"has no @pytest.mark.behaviour(id) naming the behaviour of {item_id} it decides" if mark is None else
               f"is marked @pytest.mark.behaviour({', '.join(map(repr, mark.args))}), not a behaviour of {item_id}")
    raise pytest.Collector.CollectError(f"{check.path}: check {check.originalname} {problem}; the behaviours of "
                                        f"{item_id} (autograder/rubric.py): {', '.join(ids)}")


def check_files(item_ids, include_hidden: bool) -> list:
    files = []
    for item_id in item_ids:
        files.append(check_file(EXERCISES_DIR, item_id))
        hidden = check_file(HIDDEN_DIR, item_id)
        if include_hidden:
            if not hidden.exists():
                raise FileNotFoundError(f"hidden checks for {item_id} are not installed here ({hidden}); "
                                        "they ship with the instructor's copy of the course, not the student package")
            files.append(hidden)
    return files


def run_checks(item_ids, student, reference=None, include_hidden=False, expected=None) -> dict:
    """Run the checks of `item_ids` (visible, plus hidden if asked) -> {item id: ItemResult}.

    `expected(oracle, *args, **kwargs)` gives the checks the oracles' values (their fixture `expected`, and the
    exercises' diagnoses); None reads them from the release (checks.released), as the self-check and grading do."""
    items = [get_item(i) for i in item_ids]
    results = {item.id: ItemResult(item) for item in items}
    collector = _Collector(student, reference, released if expected is None else expected)
    args = [str(f) for f in check_files([i.id for i in items], include_hidden)]
    args += ["-c", str(CHECKS_DIR / "pytest.ini"), "--rootdir", str(EXERCISES_DIR.parent.parent),
             "-p", "no:cacheprovider", "-q", "--capture=no", "-W", "ignore", "--tb=native",
             # plugins the checks do not need, which would cost each submission a second (gc.collect, logging)
             "-p", "no:unraisableexception", "-p", "no:threadexception", "-p", "no:logging",
             "-p", "no:faulthandler"]
    saved = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # the checks need no third-party plugin
    try:
        with contextlib.redirect_stdout(io.StringIO()) as log, usual_defaults(), one_thread():  # on the CPU
            code = pytest.main(args, plugins=[collector])
            for item_id, outcome in collector.outcomes:
                results[item_id].outcomes.append(outcome)
            for item_id, text in collector.diagnoses.items():
                results[item_id].diagnosis = text
    finally:
        if saved is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = saved
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the checks could not run (pytest exit code {code}):\n{log.getvalue()[-3000:]}")
    for item_id, note in collector.notes:
        results[item_id].said.append(str(note))
    return results


@contextlib.contextmanager
def one_thread():
    """torch computes on one thread of this process while the checks run, as it does in the sandbox, then as before.
    The checks' models and batches are a few hundred numbers: more threads only wait on each other, and beside other
    grading processes (`grade --jobs N`, a busy kernel) each OpenMP thread spins for a core the others need."""
    import torch
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def diagnose(result: ItemResult, student, expected) -> str:
    """What the item's exercise diagnosis (exercises/<id>/diagnose.py) finds, when two or more of its behaviours fail
    on the code's logic: the one cause its telling scenarios confirm, which the report puts first; "" otherwise.
    It runs after the checks, charged to the item, and a probe that fails leaves it silent."""
    name = f"{__package__}.exercises.{result.item.id}.diagnose"
    failing = [b for b in result.behaviours() if b["failures"] and not any(f["reason"] for f in b["failures"])]
    if len(failing) < 2 or importlib.util.find_spec(name) is None:
        return ""
    student.begin_item(result.item.id)
    try:
        return importlib.import_module(name).diagnose(student, expected)
    except CheckFailure:
        return ""
    finally:
        student.end_item()
