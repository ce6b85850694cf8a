"""No point rests on what a probe reports: only on values the student's code computes.

A probe runs in the student's process, so whatever it observes there (aliasing, dtypes, flags, recorded calls
and batch sizes, which exception) the student's code could rewrite. checks/answers.py and each exercise's
`fields` declare which answer fields are such reports (merged in autograder.exercises.FIELDS). Three things hold it, all graded in this process (no sandbox):

* every field of every answer the checks read is declared, and no field declared a value holds a flag the
  probe computed (a bool or a string that is not the code's own returned value);
* every check fails when every value in its answers is wrong and every report right: a check that still
  passes rests on reports (allowed only for the small shares answers.SMALL_SHARES names);
* the fault hook (backends.forge_reports, which the grader applies under backends.FORGE_REPORTS) rewrites every
  report of a buggy submission's answers to the reference's: no behaviour of the corpus's mistakes earns more
  than without it, but the small shares.

tests/integration/test_forged_reports.py grades the forging attacks through the sandbox, guard off, hook on.
"""
import functools

import pytest
import torch

from autograder.backends import LocalStudent, Reference, forge_reports
from autograder.checks import answers
from autograder.exercises import FIELDS
from autograder.instructor.reference import reference_namespace
from autograder.items import AUTO_ITEMS
from autograder.runner import run_checks
from tests.submissions import names
from tests.test_rubric import EXTRA, IN_PROCESS_EXCLUDED, load, variant


@functools.cache
def reference() -> Reference:
    return Reference(reference_namespace())


class Recording(LocalStudent):
    """The reference's code as the student, recording every answer the checks read."""

    def __init__(self, namespace: dict):
        super().__init__(namespace)
        self.answers = []  # (probe, answer)

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        obs = super().run(probe, **spec)
        self.answers.append((probe, obs))
        return obs


class Garbling(LocalStudent):
    """The reference's code as the student, every value of its answers made wrong, every report left right."""

    def __init__(self, namespace: dict):
        super().__init__(namespace)
        self.generator = torch.Generator().manual_seed(0)

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        return self.garbled(super().run(probe, **spec))

    def garbled(self, value, key: str = ""):
        if isinstance(value, dict):
            return {k: self.garbled(v, k) if answers.kind(k, FIELDS) == "value" else v for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.garbled(v, key) for v in value)
        if isinstance(value, torch.Tensor):
            if value.dtype == torch.bool:
                return ~value
            if not value.is_floating_point():
                return value + 1
            noise = torch.rand(value.shape, generator=self.generator, dtype=torch.float64) + 0.5
            return (value.double() + noise * (value.double().abs() + 1)).to(value.dtype)
        if isinstance(value, (bool, int, float)):  # a wrong number, and no longer a Python scalar
            noise = float(torch.rand((), generator=self.generator)) + 0.5
            return torch.tensor(float(value) + noise * (abs(float(value)) + 1))
        if isinstance(value, str):
            return value + "?"
        return torch.zeros(1) if value is None and key in ("grads", "master_grads", "model_grads") else value


class Forging(LocalStudent):
    """A submission's code as the student, every report of its answers rewritten to the reference's."""

    def run(self, probe: str, measure_memory: bool = False, **spec) -> dict:
        return forge_reports(super().run(probe, **spec), reference(), probe, spec)


@functools.cache
def recorded() -> list:
    student = Recording(reference_namespace())
    run_checks([i.id for i in AUTO_ITEMS], student, reference(), include_hidden=True)
    assert len(student.answers) > 100, "the checks read fewer answers than they do"
    return student.answers


def test_every_field_of_every_answer_is_declared():
    unknown = sorted({f"{probe}: {key} (in {inside or 'the answer'})" for probe, answer in recorded()
                      for key, inside, _ in answers.fields(answer, FIELDS) if key not in FIELDS})
    assert not unknown, ("fields no declaration names (autograder/checks/answers.py SHARED, or the `fields` of the "
                         "exercise whose probe returns it, autograder/exercises/<id>/__init__.py: a value the code "
                         f"computes, or a report the probe makes): {unknown}")


def test_no_field_declared_a_value_holds_a_flag_the_probe_computed():
    """A bool or a string in a value field is a report in disguise, unless it is the code's own returned value
    (a described value's "value"): what the probe concludes about an object is a report."""
    def flags(value, key):
        if isinstance(value, (bool, str)):
            return [key]
        if isinstance(value, (list, tuple)):
            return [f for v in value for f in flags(v, key)]
        return []
    found = sorted({f"{probe}: {key}" for probe, answer in recorded()
                    for key, _, value in answers.fields(answer, FIELDS)
                    if answers.kind(key, FIELDS) == "value" and key != "value" and not isinstance(value, dict)
                    and flags(value, key)})
    assert not found, f"value fields that hold bools or strings the probe made: {found}"


def test_the_declaration_names_small_shares_of_real_behaviours():
    from autograder import rubric
    for (item, behaviour), why in answers.SMALL_SHARES.items():
        b = next((b for b in rubric.behaviours(item) if b.id == behaviour), None)
        assert b is not None and not b.central and why.strip(), (item, behaviour)
        assert b.points <= 0.3, f"{item}.{behaviour}: {b.points} points is not a small share"


def test_the_design_doc_names_each_small_share():
    from tests.helpers import ROOT
    readme = (ROOT / "docs" / "grading-design.md").read_text()
    missing = [f"{item}.{behaviour}" for item, behaviour in answers.SMALL_SHARES
               if f"`{item}`" not in readme or f"`{behaviour}`" not in readme]
    assert answers.SMALL_SHARES and not missing, f"small shares docs/grading-design.md does not name: {missing}"


def test_every_check_fails_when_every_value_is_wrong_and_every_report_right():
    results = run_checks([i.id for i in AUTO_ITEMS], Garbling(reference_namespace()), reference(),
                         include_hidden=True)
    passed = [f"{item}: {o.name} ({o.behaviour})" for item, r in results.items() for o in r.outcomes
              if o.passed and (item, o.behaviour) not in answers.SMALL_SHARES and (item, o.check) not in answers.GUIDES]
    assert not passed, ("checks that pass on wrong values with right reports (a point resting on reports): "
                        + "; ".join(passed))


def earned(results: dict) -> dict:
    return {(item, b["id"]): b["earned"] for item, r in results.items() for b in r.behaviours()}


@pytest.mark.slow
@pytest.mark.parametrize("name", names("buggy") + list(EXTRA))
def test_rewriting_every_report_raises_no_score(name):
    """The fault hook on a mistake: no behaviour earns more than without it, but the named small shares."""
    v = variant(name)
    if name in IN_PROCESS_EXCLUDED:
        pytest.skip("graded in the sandbox only")
    items = sorted(v.may_lose)
    dtype = torch.get_default_dtype()
    try:
        plain = earned(run_checks(items, LocalStudent(load(name)), reference(), include_hidden=True))
        forging = earned(run_checks(items, Forging(load(name)), reference(), include_hidden=True))
    finally:
        torch.set_default_dtype(dtype)
    # a guide's behaviour is decided in the sandbox by the memory it measures, which runs in no process here
    guided = {(item, behaviour) for (item, _), behaviour in answers.GUIDES.items()}
    rose = {k: (plain[k], forging[k]) for k in plain if (forging[k] or 0) > (plain[k] or 0)
            and k not in answers.SMALL_SHARES and k not in guided}
    assert not rose, f"{name} ({v.doc}): behaviours that earn more with every report forged: {rose}"


def test_each_guide_has_a_measured_check_of_its_behaviour_beside_it():
    """A check that rests on a report (answers.GUIDES) decides no point alone: its behaviour has a hidden check
    that reads the grader's own measurement of the call's memory."""
    import ast
    from autograder.items import HIDDEN_DIR, check_file
    for (item, check), behaviour in answers.GUIDES.items():
        tree = ast.parse(check_file(HIDDEN_DIR, item).read_text())
        measured = [f.name for f in tree.body if isinstance(f, ast.FunctionDef)
                    and any(isinstance(d, ast.Call) and getattr(d.func, "attr", "") == "behaviour"
                            and d.args and getattr(d.args[0], "value", None) == behaviour for d in f.decorator_list)
                    and "assert_one_graph_at_a_time" in ast.unparse(f)]
        assert measured, f"{item}.{check} rests on a report, and no hidden check of {behaviour} measures memory"
