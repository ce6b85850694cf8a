"""The rubric: one consistent table, its scoring rules, and what it does to real submissions.

Real submissions are graded in this process (no sandbox) so that the whole corpus takes about a
minute; tests/integration/test_submissions.py grades the same notebooks through the sandbox.
"""
import contextlib
import functools
import io
import json
import math
import re

import pytest
import torch

from autograder import rubric
from autograder.instructor.reference import runnable_cells
from autograder.instructor.reference import reference_namespace
from autograder.items import AUTO_ITEMS, get_item
from autograder.report import first_failure, item_html, item_text
from autograder.backends import LocalStudent, Reference
from autograder.runner import CHECKS_DIR, EXERCISES_DIR, HIDDEN_DIR, ItemResult, Outcome, check_file, run_checks
from tests.helpers import ROOT
from tests.submissions import VARIANTS, Replace, Variant, apply_edit, make_submission, names
from tests.submissions.buggy import ONE_CAUSE_NAMES, STATIC_USERS, STEP, STEP_PARTS, STEP_TEMPLATE


# ---- the table ----

class _Marks:
    """A pytest plugin: records each collected check's @pytest.mark.behaviour marks."""

    def __init__(self):
        self.found = {False: {}, True: {}}  # hidden? -> {item id: {check function: [the marks' args]}}

    def pytest_collection_modifyitems(self, items):
        for check in items:
            by_item = self.found[HIDDEN_DIR in check.path.parents]
            by_item.setdefault(check.path.stem.removeprefix("test_"), {})[check.originalname] = [
                m.args[0] if len(m.args) == 1 else m.args for m in check.iter_markers("behaviour")]


@functools.cache
def marked(hidden: bool) -> dict:
    """{item id: {check function: the behaviour ids it is marked with}} of the visible or the hidden checks,
    as pytest collects them with the checks' own configuration (checks/pytest.ini), as the runner does."""
    ids = [item.id for item in AUTO_ITEMS]
    marks, files = _Marks(), [check_file(folder, i) for folder in (EXERCISES_DIR, HIDDEN_DIR) for i in ids]
    with contextlib.redirect_stdout(io.StringIO()) as log:
        code = pytest.main([*map(str, files), "--collect-only", "-c", str(CHECKS_DIR / "pytest.ini"),
                            "--rootdir", str(ROOT), "-p", "no:cacheprovider"], plugins=[marks])
    assert code == pytest.ExitCode.OK, log.getvalue()[-3000:]
    return marks.found[hidden]


def behaviour_of(item: str, check: str, hidden: bool) -> str:
    return marked(hidden)[item][check][0]


def checks_of(item: str, behaviour: str) -> list:
    """The checks marked with `behaviour`, visible ones first."""
    return [check for hidden in (False, True)
            for check, behaviours in sorted(marked(hidden).get(item, {}).items()) if behaviours == [behaviour]]


def test_every_auto_item_and_only_those_have_a_rubric():
    assert marked(False) and marked(True)
    assert set(rubric.RUBRIC) == {i.id for i in AUTO_ITEMS} == set(marked(False)) | set(marked(True))


@pytest.mark.parametrize("item", [i.id for i in AUTO_ITEMS])
def test_behaviour_points_add_up_to_the_item(item):
    behaviours = rubric.behaviours(item)
    assert math.isclose(sum(b.points for b in behaviours), get_item(item).points), item
    assert all(b.points > 0 and b.text.strip() and "\n" not in b.text for b in behaviours)
    ids = [b.id for b in behaviours]
    assert len(ids) == len(set(ids)), f"{item}: two behaviours share an id"


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("item", [i.id for i in AUTO_ITEMS])
def test_every_check_is_marked_with_one_behaviour_of_its_item(item, hidden):
    """What the runner refuses at collection (runner.behaviour), read here from every check file."""
    checks = marked(hidden).get(item, {})
    assert hidden or checks, f"{item} has no visible check"
    ids = {b.id for b in rubric.behaviours(item)}
    wrong = {check: behaviours for check, behaviours in checks.items()
             if len(behaviours) != 1 or behaviours[0] not in ids}
    assert not wrong, f"{item}: checks not marked with exactly one of the behaviours {sorted(ids)}: {wrong}"


def test_every_item_says_why_its_central_behaviours_are_the_point():
    assert set(rubric.WHY_CENTRAL) == set(rubric.RUBRIC)
    for item, behaviours in rubric.RUBRIC.items():
        assert any(b.central for b in behaviours), f"{item} has no central behaviour"
        assert rubric.WHY_CENTRAL[item].strip(), item


# central behaviours a visible check cannot decide without giving the answer away
NOT_VISIBLE = {("q5_answer", "right_letter"): "a visible check of the letter would tell the student the answer"}


@pytest.mark.parametrize("item", [i.id for i in AUTO_ITEMS])
def test_every_central_behaviour_has_a_visible_check(item):
    """A visible ✓ must never hide a broken core: each central behaviour is decided in the student's kernel too."""
    visible = {b for behaviours in marked(False).get(item, {}).values() for b in behaviours}
    missing = [b.id for b in rubric.behaviours(item)
               if b.central and b.id not in visible and (item, b.id) not in NOT_VISIBLE]
    assert not missing, f"{item}: central behaviours with no visible check: {missing}"


@pytest.mark.parametrize("item", [i.id for i in AUTO_ITEMS])
def test_every_behaviour_has_a_check(item):
    empty = [b.id for b in rubric.behaviours(item) if not checks_of(item, b.id)]
    assert not empty, f"{item}: behaviours no check is marked with: {empty}"


def test_the_design_doc_shows_the_rubric_as_it_is():
    """docs/grading-design.md's rubric table is generated by release from the registry (instructor/doc_tables.py)."""
    from autograder.instructor import doc_tables
    assert "rubric" not in doc_tables.stale(ROOT), f"{doc_tables.DOC}'s rubric table is stale: run python -m autograder release"
    assert doc_tables.rubric_table() in (ROOT / doc_tables.DOC).read_text()


# ---- the scoring rules, on made-up outcomes ----

def outcomes(item, failing=(), hidden=True, message="wrong"):
    """One passing outcome per check function of `item` (two for each, as if parametrised),
    except that the checks named in `failing` fail their second case."""
    made = []
    for is_hidden, functions in [(False, marked(False)[item]), (True, marked(True).get(item, {}) if hidden else {})]:
        for check in sorted(functions):
            for case in range(2):
                ok = not (check in failing and case == 1)
                made.append(Outcome(f"{check} [{case}]", ok, "" if ok else message, is_hidden, check=check,
                                    behaviour=behaviour_of(item, check, is_hidden)))
    return made


def result(item, *failing, hidden=True):
    return ItemResult(get_item(item), outcomes(item, failing, hidden))


def test_all_checks_passing_earns_every_point():
    for item in AUTO_ITEMS:
        r = result(item.id)
        assert r.score == item.points
        assert all(b["earned"] == b["points"] and b["passed"] == b["total"] > 0 for b in r.behaviours())


def test_one_failing_case_costs_its_behaviour_and_nothing_else():
    r = result("static_loss_scaler", "test_large_finite_gradients_are_not_overflow")  # a hidden check of `overflow`
    judged = {b["id"]: b for b in r.behaviours()}
    assert not judged["overflow"]["central"]
    assert judged["overflow"]["earned"] == 0 and judged["overflow"]["failures"]
    assert judged["overflow"]["passed"] == judged["overflow"]["total"] - 1
    assert r.score == pytest.approx(1 - judged["overflow"]["points"])
    assert all(b["earned"] == b["points"] for b in judged.values() if b["id"] != "overflow")


def test_a_failing_central_behaviour_keeps_at_most_half():
    for item in AUTO_ITEMS:
        for b in rubric.behaviours(item.id):
            if b.central:
                assert result(item.id, checks_of(item.id, b.id)[0]).score <= item.points / 2, (item.id, b.id)


def test_every_behaviour_costs_something():
    for item in AUTO_ITEMS:
        for b in rubric.behaviours(item.id):
            assert result(item.id, checks_of(item.id, b.id)[0]).score < item.points, (item.id, b.id)


def test_an_outcome_of_no_check_counts_against_every_behaviour():
    """The grader's own 'your code ran' failure (a submission that could not start) scores 0."""
    r = ItemResult(get_item("master_weights"), [Outcome("your code ran", False, "it timed out", reason="timeout")])
    assert r.score == 0 and all(b["earned"] == 0 for b in r.behaviours())
    assert ItemResult(get_item("master_weights")).score == 0


def test_visible_checks_alone_score_what_they_check():
    """In the notebook only visible checks run: behaviours that only hidden checks decide are left
    out, and the rest make up the item's points."""
    r = result("mixed_precision_train_step", hidden=False)
    judged = r.behaviours()
    assert any(b["earned"] is None for b in judged) and r.score == 3
    r = result("mixed_precision_train_step", "test_one_clean_step", hidden=False)
    assert 0 < r.score < 3


def test_behaviours_are_plain_data():
    judged = result("accumulate_gradients", "test_matches_full_batch").behaviours()
    assert json.loads(json.dumps(judged)) == judged
    assert set(judged[0]) == {"id", "description", "points", "central", "not_checked", "earned", "passed", "total",
                              "failures"}


# ---- the report ----

def test_report_shows_each_behaviour_with_its_points_and_why_one_fails():
    r = ItemResult(get_item("static_loss_scaler"), outcomes("static_loss_scaler", {"test_unscale_divides_in_place",
                                                                                    "test_fp16_gradients"},
                                                          message="divide by the scale"))
    text = item_text(r)
    # one behaviour of five fails, and it is central (unscale_ divides): 0.7 of the points, capped at half
    assert text.splitlines()[0] == "static_loss_scaler: 4 of 5 behaviours pass, 0.5 of 1 points"
    for b in rubric.behaviours("static_loss_scaler"):
        assert b.text in text
    assert "✗ 0/0.3" in text and "✓ 0.3/0.3" in text
    assert "divide by the scale" in text and "same problem as above" in text and "(hidden check)" in text
    page = item_html(r)
    assert "unscale_ divides every gradient by scale, in place" in page and "0/0.3" in page
    assert "divide by the scale" in page and "lesson20-check-fail" in page


def test_report_says_when_a_central_behaviour_caps_the_item():
    r = result("mixed_precision_train_step", "test_overflow_skips_the_step")
    assert r.score == 1.5
    assert "at most half" in item_text(r) and "at most half" in item_html(r)


def test_report_keeps_one_line_for_code_not_written_yet():
    r = ItemResult(get_item("static_loss_scaler"),
                   [Outcome(o.name, False, "nope", o.hidden, "not_implemented", o.check, o.behaviour)
                    for o in outcomes("static_loss_scaler")])
    assert item_text(r).splitlines()[1].strip().startswith("Not implemented yet")
    assert len(item_text(r).splitlines()) == 2


def test_report_in_the_notebook_says_which_behaviours_the_grader_checks():
    r = result("mixed_precision_train_step", hidden=False)
    text = item_text(r)
    unchecked = [b for b in r.behaviours() if b["earned"] is None]  # no visible check is marked with them
    assert unchecked and all(re.search(rf"–/{b['points']:g} +{re.escape(b['description'])}", text)
                             for b in unchecked), text
    assert "checked only when your notebook is graded" in text
    # the header claims only the points verified here, and says how many wait for grading
    judged = r.behaviours()
    checked = [b for b in judged if b["earned"] is not None]
    waiting = sum(b["points"] for b in judged if b["earned"] is None)
    assert 0 < len(checked) < len(judged)
    assert text.splitlines()[0] == (
        f"mixed_precision_train_step: {len(checked)} of {len(checked)} behaviours checked here pass, "
        f"{sum(b['points'] for b in checked):g} of their {sum(b['points'] for b in checked):g} points; "
        f"{waiting:g} more points are checked only when your notebook is graded")
    assert r.score == get_item("mixed_precision_train_step").points  # the score itself scales (rubric.score)


# ---- the principle, on real submissions ----

EXTRA = {  # mistakes the issue names that the corpus lacks
    "static_scale_loss_divides": Variant(
        "static_scale_loss_divides", "buggy", (Replace("static_loss_scaler", "StaticLossScaler.scale_loss", '''
            def scale_loss(self, loss):
                return loss / self.scale
            '''),), item="static_loss_scaler", also=("dynamic_loss_scaler", "mixed_precision_train_step"),
        doc="divides the loss by the scale", misses=("scale_loss", "the loss is not multiplied by the scale")),
    "step_ignores_micro_batch_size": Variant(
        "step_ignores_micro_batch_size", "buggy", (Replace(
            "mixed_precision_train_step", "mixed_precision_train_step",
            STEP_TEMPLATE.replace("range(0, batch_size, micro_batch_size)", "range(0, batch_size, batch_size)")
            .replace("start:start + micro_batch_size]", "start:start + batch_size]").format(**STEP_PARTS)),),
        item="mixed_precision_train_step", doc="one pass over the whole batch, whatever micro_batch_size says",
                                         misses=("micro_batches", "the step does not micro-batch")),
    "master_is_the_parameter": Variant(
        "master_is_the_parameter", "buggy", (Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                return [p.detach().requires_grad_(True) for p in model.parameters()]
            '''),), item="master_weights", also=("mixed_precision_train_step",),
        doc="masters that are the fp16 parameters' own storage, not fp32 copies",
                                   misses=("separate_copies", "the masters are not separate fp32 copies")),
    "master_fp16_copies": Variant(
        "master_fp16_copies", "buggy", (Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                return [p.detach().clone().requires_grad_(True) for p in model.parameters()]
            '''),), item="master_weights", also=("mixed_precision_train_step",),
        doc="masters that are copies in the model's own dtype (fp16), not fp32",
                              misses=("fp32_leaves", "the masters are not fp32")),
    "step_masters_from_model": Variant(
        "step_masters_from_model", "buggy", (Replace(
            "mixed_precision_train_step", "mixed_precision_train_step",
            STEP_TEMPLATE.format(**{**STEP_PARTS, "zero": "model.zero_grad(set_to_none=True)\n"
                                    "    with torch.no_grad():\n"
                                    "        for m, p in zip(master_params, model_params):\n"
                                    "            m.copy_(p)"})),),
        item="mixed_precision_train_step", doc="copies the fp16 model into the masters at the start of each step",
        misses=("masters_keep_updates", "the masters are rebuilt from the fp16 model")),
}

# each mistake that misses a behaviour says which on itself (Variant.misses): a central one, which must cost it at
# least half the item's points and fail a visible check of it; or one that is not central, whose visible check must
# fail all the same (a ✓ over it misleads)
_MISSES = {name: v for name, v in {**VARIANTS, **EXTRA}.items() if v.misses}
_CENTRAL = {(item, b.id) for item, behaviours in rubric.RUBRIC.items() for b in behaviours if b.central}
CENTRAL_MISSES = {name: v.misses for name, v in _MISSES.items() if (v.item, v.misses[0]) in _CENTRAL}
VISIBLE_MISSES = {name: v.misses for name, v in _MISSES.items() if (v.item, v.misses[0]) not in _CENTRAL}
# Changes torch's process-wide default dtype: only the sandbox keeps that from the checks (test_submissions).
IN_PROCESS_EXCLUDED = {"alt_changes_torch_defaults"}
USERS = {"static_loss_scaler": STATIC_USERS, "dynamic_loss_scaler": STEP, "master_weights": STEP}


def variant(name) -> Variant:
    return EXTRA.get(name) or VARIANTS[name]


def items_touched(v: Variant) -> list:
    """The items whose code a correct variant rewrites, and the items that call that code; every item
    when it adds code of its own (which could shadow anything)."""
    if v.kind == "reference" or not all(isinstance(e, Replace) for e in v.edits):
        return [i.id for i in AUTO_ITEMS]
    return sorted({e.item for e in v.edits} | {u for e in v.edits for u in USERS.get(e.item, ())})


def load(name) -> dict:
    """The names a submission's runnable cells define, executed here."""
    nb = make_submission("reference")
    for edit in variant(name).edits:
        apply_edit(nb, edit)
    namespace = {"__name__": "__submission__"}
    for cell in runnable_cells(nb):
        exec(compile(cell.source, f"{name} {cell.label}", "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def grade():
    reference, graded = Reference(reference_namespace()), {}

    def scores(name) -> dict:
        if name not in graded:
            v = variant(name)
            item_ids = sorted(v.may_lose) if v.kind == "buggy" else items_touched(v)
            dtype = torch.get_default_dtype()
            try:
                results = run_checks(item_ids, LocalStudent(load(name)), reference, include_hidden=True)
            finally:
                torch.set_default_dtype(dtype)
            graded[name] = {i: r.score for i, r in results.items()}
        return graded[name]
    return scores


def test_every_central_behaviour_has_a_mistake_that_misses_it():
    covered = {(variant(name).item, behaviour) for name, (behaviour, _) in CENTRAL_MISSES.items()}
    central = {(item, b.id) for item, behaviours in rubric.RUBRIC.items() for b in behaviours if b.central}
    assert central <= covered, f"central behaviours no corpus mistake misses: {sorted(central - covered)}"
    assert covered <= central, f"CENTRAL_MISSES names behaviours that are not central: {sorted(covered - central)}"
    unknown = {name: v.misses for name, v in _MISSES.items()
               if len(v.misses) != 2 or v.misses[0] not in {b.id for b in rubric.behaviours(v.item)}}
    assert not unknown, f"variants whose misses= names no behaviour of their item: {unknown}"
    assert VISIBLE_MISSES, "no mistake of a behaviour that is not central"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CENTRAL_MISSES))
def test_missing_the_central_behaviour_keeps_at_most_half(grade, name):
    item = get_item(variant(name).item)
    behaviour, how = CENTRAL_MISSES[name]
    assert grade(name)[item.id] <= item.points / 2, f"{name} ({how}: misses {behaviour})"


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n, (b, _) in CENTRAL_MISSES.items() if (variant(n).item, b) not in NOT_VISIBLE]
                         + list(VISIBLE_MISSES))
def test_missing_a_central_behaviour_fails_a_visible_check(name):
    """The student's own check cell, run on a mistake that misses a central behaviour, fails a check of it."""
    item = variant(name).item
    behaviour, how = {**CENTRAL_MISSES, **VISIBLE_MISSES}[name]
    dtype = torch.get_default_dtype()
    try:
        outcomes = run_checks([item], LocalStudent(load(name)))[item].outcomes  # visible checks only
    finally:
        torch.set_default_dtype(dtype)
    failed = {o.behaviour for o in outcomes if not o.passed}
    assert behaviour in failed, f"{name} ({how}) passes every visible check of {behaviour}; failing: {sorted(failed)}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ONE_CAUSE_NAMES)
def test_a_one_cause_mistake_is_named_first(name):
    """Several behaviours of the item fail, and the report leads with the one cause, found by the exercise's
    diagnosis; that message is the item's first, in the report and on the feedback page."""
    v = variant(name)
    dtype = torch.get_default_dtype()
    try:
        result = run_checks([v.item], LocalStudent(load(name)), Reference(reference_namespace()),
                            include_hidden=True)[v.item]
    finally:
        torch.set_default_dtype(dtype)
    assert sum(1 for b in result.behaviours() if b["failures"]) >= 2, f"{name}: fewer than two behaviours fail"
    assert v.cause.lower() in result.diagnosis.lower(), f"{name} ({v.doc}): the diagnosis says {result.diagnosis!r}"
    assert first_failure(result) == result.diagnosis
    assert item_text(result).split("\n")[1].endswith(result.diagnosis)


def test_no_diagnosis_where_the_code_is_right():
    """The reference passes everything, and the diagnosis itself confirms no cause on it."""
    from autograder.checks.released import released
    from autograder.exercises.mixed_precision_train_step.diagnose import diagnose
    assert diagnose(Reference(reference_namespace()), released) == ""


@pytest.mark.slow
@pytest.mark.parametrize("name", names("buggy") + list(EXTRA))
def test_every_real_mistake_loses_something(grade, name):
    v = variant(name)
    scores = grade(name)
    assert scores[v.item] < get_item(v.item).points, f"{name} ({v.doc}) keeps full marks: {scores}"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reference"] + [n for n in names("alternative") if n not in IN_PROCESS_EXCLUDED])
def test_a_correct_answer_keeps_everything(grade, name):
    scores = grade(name)
    assert scores == {i: get_item(i).points for i in scores}
