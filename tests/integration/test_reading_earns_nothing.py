"""Reading the whole sandbox process earns nothing: the design holds with the audit hook off.

Two halves:
* the census: for each item, a fork made as grading makes it (the untouched student notebook, the stand-ins
  that item's code could use at most) is searched for every line of that item's own solution, through
  everything it can reach (the garbage collector's objects, what they refer to, code constants, every
  frame's locals). None may be there. Its controls: the stand-ins it holds are found, and a fork handed its
  own item's code as a stand-in is caught;
* the attacks: the reading corpus (tests/submissions/hostile_reading.py), the guard corpus's reading
  attacks and issue 44's three doors into trusted sections, graded with the tests' switch that turns the audit
  hook off (session.AUDIT_HOOK_OFF), earn no more than their honest twins; the control, with the reference's
  code planted in the notebook, shows the thief finds what is there to find.
"""
import hashlib
import warnings

import pytest

from autograder.cells import notebook_cells
from autograder.grading import grade_notebook
from autograder.instructor.reference import reference, stand_in_units
from autograder.items import AUTO_ITEMS
from autograder.limits import Limits
from autograder.sandbox import Sandbox, have_bwrap
from autograder.sandbox.session import AUDIT_HOOK_OFF
from autograder.stand_in_plan import plan
from tests.submissions import (MARKERS, SOLUTION_NB, VARIANTS, Replace, Variant, judge, make_submission,
                               make_variant_submission)
from tests.submissions.hostile_reading import CODE_ITEMS, planted

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_bwrap(), reason="bubblewrap is not installed")]
UNITS = stand_in_units()
# the guard corpus's attacks that read (frames, a prop's globals, hooks by hand, a library's file name)
GUARD_READERS = ("hostile_frames_to_probe", "hostile_globals_of_a_prop", "hostile_hooks_by_hand",
                 "hostile_impersonates_library")
HONEST = {"hostile_impersonates_library": (Replace("q5_answer", None, 'Q5_ANSWER = "a"'),)}  # where there is no twin


def digest(line: str) -> str:
    return hashlib.sha256(line.strip().encode()).hexdigest()


def solution_lines(item_id: str) -> set:
    """The lines between an item's solution markers in the instructor notebook (what the student must write)."""
    import nbformat
    nb = nbformat.read(str(SOLUTION_NB), as_version=4)
    lines = set()
    for cell in nb.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") != f"{item_id}_solution":
            continue
        inside = False
        for line in cell.source.splitlines():
            if line.strip() in MARKERS:
                inside = line.strip() == MARKERS[0]
            elif inside and len(line.strip()) >= 12:
                lines.add(line.strip())
    return lines


def census_of(sandbox, item_id: str, setup: dict, forbidden: set, expected: set) -> dict:
    sandbox.use_item(item_id, {**setup, "census": {"forbidden": sorted(map(digest, forbidden)),
                                                   "expected": sorted(map(digest, expected))}})
    sandbox.request("q5_answer", {}, timeout=60)
    return sandbox.census


@pytest.fixture(scope="module")
def stub_sandbox():
    cells = [c.plain() for c in notebook_cells(make_submission("stub"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(), isolate=True)
    sandbox.start()
    yield sandbox
    sandbox.close()


def test_no_fork_can_reach_its_own_items_solution(stub_sandbox):
    code_items = [item.id for item in AUTO_ITEMS if item.code]
    every = ["\n".join(u["names"]) for u in UNITS["units"]]  # the item's code uses every earlier exercise
    # lines the process holds anyway (torch's own docstrings, the notebook's demos): no evidence either way
    everyone = set().union(*(solution_lines(i) for i in code_items))
    common = census_of(stub_sandbox, "underflow_fraction", {}, everyone, set())["forbidden"]
    for item_id in code_items:
        setup = plan(item_id, every, every, UNITS)
        held = set().union(*(solution_lines(u["item"]) for u in setup.get("units", [])), set())
        held = {line for line in held if digest(line) not in common}
        # a line the stand-ins share with the item's own solution (`for start in range(...)`) proves nothing
        own = {line for line in solution_lines(item_id) if digest(line) not in common} - held
        assert own, f"{item_id}: no line of its solution to look for"
        found = census_of(stub_sandbox, item_id, setup, own, held)
        reached = sorted(line for line in own if digest(line) in found["forbidden"])
        assert not reached, f"{item_id}'s fork can reach {len(reached)} lines of its own solution: {reached[:3]}"
        if held:
            assert found["expected"], f"{item_id}'s fork holds stand-ins, yet the census found none of their lines"


def test_the_census_catches_a_fork_handed_its_own_items_code(stub_sandbox):
    own_unit = [u for u in UNITS["units"] if u["item"] == "dynamic_loss_scaler"]
    static = [u for u in UNITS["units"] if u["item"] == "static_loss_scaler"]
    setup = {"imports": UNITS["imports"], "units": static + own_unit, "bind": ["StaticLossScaler", "DynamicLossScaler"]}
    found = census_of(stub_sandbox, "dynamic_loss_scaler", setup, solution_lines("dynamic_loss_scaler"), set())
    assert found["forbidden"], "the census did not see the item's own code, handed to its fork"


def grade_with_the_hook_off(monkeypatch, nb):
    monkeypatch.setenv(AUDIT_HOOK_OFF, "1")
    result = grade_notebook(nb, reference=reference())
    return result, {i: r.score for i, r in result.items.items()}


@pytest.mark.parametrize("name", ["reading_thief_every_route", "reading_rebased_onto_the_answer"])
def test_the_reading_corpus_earns_nothing_with_the_audit_hook_off(monkeypatch, name):
    result, scores = grade_with_the_hook_off(monkeypatch, make_submission(name))
    assert not result.review, "with the audit hook off, nothing should be flagged by it"
    problems = judge(name, result.status, scores)
    assert not problems, f"{name} with the audit hook off: {problems}"


@pytest.mark.parametrize("name", GUARD_READERS)
def test_the_guard_corpus_readers_earn_no_more_than_their_honest_code(monkeypatch, name):
    """With the hook off nothing is set aside, so each is scored on what it does: no more than its honest
    twin (the same code without the attack)."""
    variant = VARIANTS[name]
    honest = make_submission(variant.twin) if variant.twin else make_variant_submission(
        Variant(f"{name}_honest", "buggy", HONEST[name]))
    twin = {i: r.score for i, r in grade_notebook(honest, reference=reference()).items.items()}
    result, scores = grade_with_the_hook_off(monkeypatch, make_submission(name))
    more = {i: (scores[i], twin[i]) for i in scores if scores[i] > twin[i] + 1e-9}
    assert not more, f"{name} with the audit hook off outscores its honest code: {more}"


# issue 44's three doors into the grader's trusted sections (tests/submissions/hostile_round7.py); with the hook on
# the corpus holds them (tests/integration/test_submissions.py)
# (with the hook off a gc callback is ordinary student code, which may rewrite the fork's reports: master_weights
# reads aliasing from the weights after a step, a value, so that earns nothing either)
DOORS = ["round7_door_rebound_ctypes", "round7_door_traceback_property", "round7_door_gc_callback"]


@pytest.mark.parametrize("name", DOORS)
def test_the_doors_into_trusted_sections_earn_nothing_with_the_audit_hook_off(monkeypatch, name):
    """Each door's payload rewrites the fork's reports so that aliasing masters pass: no more than the same
    masters without it."""
    twin = grade_notebook(make_submission(VARIANTS[name].twin), ["master_weights"], reference=reference())
    monkeypatch.setenv(AUDIT_HOOK_OFF, "1")
    result = grade_notebook(make_submission(name), ["master_weights"], reference=reference())
    got, honest = result.items["master_weights"].score, twin.items["master_weights"].score
    assert got <= honest, f"{name} with the audit hook off: master_weights {got:g}, its honest code {honest:g}"


def test_the_control_the_thief_finds_a_planted_answer(monkeypatch):
    source = UNITS["imports"] + "\n".join(u["source"] for u in UNITS["units"])
    result, scores = grade_with_the_hook_off(monkeypatch, make_variant_submission(planted(source)))
    full = {item.id: float(item.points) for item in AUTO_ITEMS if item.id in CODE_ITEMS}
    assert {i: scores[i] for i in full} == full, f"the thief did not find the planted answer: {scores}"
