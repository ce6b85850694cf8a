"""A corpus of submissions to Lesson 20, built from the notebooks rather than kept as copies.

A submission starts as the released student notebook (`lessons/`) with every solution cell
filled in from the instructor notebook (`solutions/`), markers removed: the reference, as a
student would hand it in. A variant then states only what it changes: one function or
method of a solution cell, a whole cell, a few lines added, or a new cell.

    make_submission("accumulate_divides_by_count")  -> nbformat notebook
    write_class(folder, ["reference", "stub", ...]) -> folder/<student>/lesson20/lesson20.ipynb

Kinds: "reference" and "stub" (the untouched student notebook), "buggy" (a common mistake;
`item` must lose points, and only items in `also` may lose some too), "alternative" (valid
but written differently: full marks), "hostile" (tries to cheat or to harm the grader: see
hostile.py for what each one must be held to), "realistic" (correct, in a notebook as messy as
real ones are: scratch cells, magics, copied or deleted cells, no cell ids, huge outputs, CRLF:
full marks; see realistic.py; honest.py: correct code whose graded functions use habits an audit hook may
mistake for an attack, full marks and no review flags).
"""
import ast
import copy
import functools
import random
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
ASSIGNMENT = "lesson20"
SOLUTION_NB = ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
STUDENT_NB = ROOT / "lessons" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
MARKERS = ("### BEGIN SOLUTION", "### END SOLUTION")


# ---- edits: what a variant changes ----

@dataclass(frozen=True)
class Replace:
    """Replace `name` (a top-level def or class, or "Class.method") in an item's solution cell;
    with name=None, replace the whole cell."""
    item: str
    name: str
    source: str


@dataclass(frozen=True)
class Append:
    """Add lines at the end (or, with first=True, at the start) of an item's solution cell."""
    item: str
    source: str
    first: bool = False


@dataclass(frozen=True)
class NewCell:
    """A new cell (code unless `cell_type` says "markdown" or "raw") right after the cell with grade id
    `after` (an item's test cell, say), or with cell id `after` ("cell-01", the setup cell)."""
    after: str
    source: str
    solution: bool = False  # marked as an nbgrader solution cell
    cell_type: str = "code"


@dataclass(frozen=True)
class ReplaceCell:
    """Replace the source (and optionally the points) of any cell with nbgrader grade id `grade_id`,
    a test cell say, as a student who edits what they should not."""
    grade_id: str
    source: str
    points: float = None


# Notebook-level edits: what Jupyter, a student's editor or a file copy does to the cells themselves.
# A cell is named by its nbgrader grade id or else by its cell id; with copies, the first such cell
# (Replace and Append edit the last one: list them before a CopyCell of the same cell).

@dataclass(frozen=True)
class CopyCell:
    """Copy and paste `cell` (Jupyter keeps its metadata, nbgrader's included, and gives the copy a new
    cell id), right after `after` (default: the cell itself), or right above the cell itself with
    above=True; `source` replaces the copy's source."""
    cell: str
    after: str = ""
    above: bool = False
    source: str = None


@dataclass(frozen=True)
class ToMarkdown:
    """Turn a code cell into markdown, as the M key does: same id and metadata, no outputs."""
    cell: str


@dataclass(frozen=True)
class DeleteCell:
    cell: str


@dataclass(frozen=True)
class MoveCell:
    """Cut `cell` and paste it right after `after` (same id and metadata)."""
    cell: str
    after: str


@dataclass(frozen=True)
class Outputs:
    """What running the cell left stored in it: nbformat outputs (dicts) and its execution count."""
    cell: str
    outputs: tuple
    execution_count: int = None


@dataclass(frozen=True)
class ExecutionCounts:
    """Every code cell run once, in a shuffled order (the counts of cells run out of order)."""
    seed: int = 0


@dataclass(frozen=True)
class DropCellIds:
    """No cell ids: an nbformat 4.4 notebook, as Jupyter before 2021 and many other tools save them
    (Colab still writes 4.0)."""
    minor: int = 4


@dataclass(frozen=True)
class LineEndings:
    """Every line of these cells ends with `newline` (CRLF: pasted from a Windows editor)."""
    cells: tuple
    newline: str = "\r\n"


@dataclass(frozen=True)
class TabIndent:
    """Each leading group of four spaces in these cells becomes a tab (an editor set to indent with tabs)."""
    cells: tuple


@dataclass(frozen=True)
class Metadata:
    """Merge into a cell's metadata, every cell's with cell="*", or the notebook's with cell=None."""
    cell: str
    metadata: dict = field(default_factory=dict)


NOTEBOOK_EDITS = (CopyCell, ToMarkdown, DeleteCell, MoveCell, Outputs, ExecutionCounts, DropCellIds, LineEndings,
                  TabIndent, Metadata)


@dataclass(frozen=True)
class Variant:
    name: str
    kind: str                    # reference, stub, buggy, alternative, hostile, realistic
    edits: tuple = ()
    item: str = ""               # buggy: the item it breaks; hostile: the item it attacks
    also: tuple = ()             # buggy: items whose code calls the broken code: they may lose points when
    #                              graded in process with the student's own code (the self-check, tests/test_rubric.py);
    #                              the grader gives them the reference's code instead, and they keep every point
    doc: str = ""
    # hostile only: exact scores expected per item (items not named: `rest`), and the status
    expect: dict = field(default_factory=dict)  # item -> score, or "less" (below full marks)
    rest: str = "full"           # "full", "zero" or "any"
    status: str = "graded"
    twin: str = ""               # an honest variant whose scores this one must not exceed
    flagged: tuple = ()          # hostile only: items it must be set aside for review on ("*": every item)
    limits: dict = field(default_factory=dict)  # limits.Limits overrides to grade it with
    # buggy, held-out ones (unseen.py): a word a good first failure message would contain, its synonyms, and
    # whether the mistake misses the exercise's whole point (the item should keep at most half its points)
    cause: str = ""
    synonyms: tuple = ()
    core: bool = False
    # buggy: (the behaviour of `item` this mistake misses, how): a central one it must cost (tests/test_rubric.py
    # derives CENTRAL_MISSES and VISIBLE_MISSES from it, tests/recipe.py asks one for each central behaviour)
    misses: tuple = ()

    @property
    def may_lose(self) -> set:
        return {self.item, *self.also} if self.item else set()


def _body(source: str) -> str:
    return textwrap.dedent(source).strip("\n")


def _locate(tree: ast.Module, name: str):
    """The node named `name` ("f" or "Class.method") in a parsed cell."""
    scope, node = tree.body, None
    for part in name.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part), None)
        if node is None:
            raise KeyError(f"{name!r} is not defined in this cell")
        scope = node.body
    return node


def replace_definition(cell_source: str, name: str, new_source: str) -> str:
    """`cell_source` with the def or class `name` (decorators included) swapped for `new_source`."""
    node = _locate(ast.parse(cell_source), name)
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    lines = cell_source.split("\n")
    indent = " " * node.col_offset
    new_lines = [indent + ln if ln.strip() else "" for ln in _body(new_source).split("\n")]
    return "\n".join(lines[:first - 1] + new_lines + lines[node.end_lineno:])


def find_cell(nb, name: str):
    """The first cell whose nbgrader grade id, or else whose cell id, is `name`."""
    for key in (lambda c: c.metadata.get("nbgrader", {}).get("grade_id"), lambda c: c.get("id")):
        found = next((c for c in nb.cells if key(c) == name), None)
        if found is not None:
            return found
    raise KeyError(f"no cell has grade id or cell id {name!r}")


def _reindent(source: str) -> str:
    """Four leading spaces -> one tab, for every whole group of four."""
    out = []
    for line in source.split("\n"):
        stripped = line.lstrip(" ")
        groups = (len(line) - len(stripped)) // 4
        out.append("\t" * groups + line[4 * groups:])
    return "\n".join(out)


def apply_notebook_edit(nb, edit) -> None:
    if isinstance(edit, CopyCell):
        original = find_cell(nb, edit.cell)
        cell = copy.deepcopy(original)
        if "id" in cell:
            cell["id"] = nbformat.v4.new_code_cell()["id"]
        if edit.source is not None:
            cell.source = _body(edit.source)
        where = original if edit.above else find_cell(nb, edit.after or edit.cell)
        index = nb.cells.index(where) + (0 if edit.above else 1)
        nb.cells.insert(index, cell)
    elif isinstance(edit, ToMarkdown):
        cell = find_cell(nb, edit.cell)
        cell.cell_type = "markdown"
        cell.pop("outputs", None)
        cell.pop("execution_count", None)
    elif isinstance(edit, DeleteCell):
        nb.cells.remove(find_cell(nb, edit.cell))
    elif isinstance(edit, MoveCell):
        cell = find_cell(nb, edit.cell)
        nb.cells.remove(cell)
        nb.cells.insert(nb.cells.index(find_cell(nb, edit.after)) + 1, cell)
    elif isinstance(edit, Outputs):
        cell = find_cell(nb, edit.cell)
        cell.outputs = [nbformat.from_dict(o) for o in edit.outputs]
        cell.execution_count = edit.execution_count
    elif isinstance(edit, ExecutionCounts):
        code = [c for c in nb.cells if c.cell_type == "code"]
        counts = list(range(1, len(code) + 1))
        random.Random(edit.seed).shuffle(counts)
        for cell, count in zip(code, counts):
            cell.execution_count = count
            for output in cell.get("outputs", []):
                if "execution_count" in output:
                    output.execution_count = count
    elif isinstance(edit, DropCellIds):
        nb.nbformat_minor = edit.minor
        for cell in nb.cells:
            cell.pop("id", None)
    elif isinstance(edit, LineEndings):
        for name in edit.cells:
            cell = find_cell(nb, name)
            cell.source = cell.source.replace("\r\n", "\n").replace("\n", edit.newline)
    elif isinstance(edit, TabIndent):
        for name in edit.cells:
            cell = find_cell(nb, name)
            cell.source = _reindent(cell.source)
    elif isinstance(edit, Metadata):
        targets = ([nb.metadata] if edit.cell is None else [c.metadata for c in nb.cells] if edit.cell == "*"
                   else [find_cell(nb, edit.cell).metadata])
        for target in targets:
            target.update(copy.deepcopy(edit.metadata))
    else:
        raise TypeError(f"unknown edit {edit!r}")


def apply_edit(nb, edit) -> None:
    if isinstance(edit, NOTEBOOK_EDITS):
        apply_notebook_edit(nb, edit)
        return
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in nb.cells}
    if isinstance(edit, NewCell):
        index = nb.cells.index(cells[edit.after] if edit.after in cells else find_cell(nb, edit.after)) + 1
        cell = getattr(nbformat.v4, f"new_{edit.cell_type}_cell")(_body(edit.source))
        if edit.solution:
            cell.metadata["nbgrader"] = {"grade": False, "grade_id": f"extra_{index}", "locked": False,
                                         "schema_version": 3, "solution": True, "task": False}
        nb.cells.insert(index, cell)
        return
    if isinstance(edit, ReplaceCell):
        cell = cells[edit.grade_id]
        cell.source = _body(edit.source)
        if edit.points is not None:
            cell.metadata["nbgrader"]["points"] = edit.points
        return
    cell = cells[f"{edit.item}_solution"]
    if isinstance(edit, Replace):
        cell.source = _body(edit.source) if edit.name is None else replace_definition(cell.source, edit.name,
                                                                                       edit.source)
    elif isinstance(edit, Append):
        cell.source = (_body(edit.source) + "\n" + cell.source) if edit.first else (
            cell.source.rstrip("\n") + "\n\n" + _body(edit.source))
    else:
        raise TypeError(f"unknown edit {edit!r}")


# ---- the notebooks ----

def _without_markers(source: str) -> str:
    return "\n".join(ln for ln in source.split("\n") if ln.strip() not in MARKERS)


@functools.lru_cache(maxsize=None)
def _reference_submission():
    """The released notebook with each solution cell holding the instructor's code (markers removed)."""
    student = nbformat.read(str(STUDENT_NB), as_version=4)
    instructor = nbformat.read(str(SOLUTION_NB), as_version=4)
    answers = {c.metadata["nbgrader"]["grade_id"]: c for c in instructor.cells
               if c.metadata.get("nbgrader", {}).get("solution")}
    for cell in student.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if not cell.metadata.get("nbgrader", {}).get("solution"):
            continue
        if cell.cell_type == "code":
            cell.source = _without_markers(answers[grade_id].source)
        else:  # written answers are graded by hand; any text will do here
            cell.source = "Half precision loses small values; the master copy and loss scaling keep them."
    return student


def _all_variants() -> dict:
    from .alternatives import ALTERNATIVES
    from .buggy import BUGGY
    from .hostile import HOSTILE
    from .hostile_decoding import HOSTILE_DECODING
    from .hostile_forging import HOSTILE_FORGING
    from .hostile_guard import HOSTILE_GUARD
    from .hostile_html import HOSTILE_HTML
    from .hostile_leak import HOSTILE_LEAK
    from .hostile_oracle import HOSTILE_ORACLE
    from .honest import HONEST
    from .hostile_reading import HOSTILE_READING
    from .hostile_round5 import HOSTILE_ROUND5
    from .magics import MAGICS
    from .gpu import GPU
    from .contract import CONTRACT_BUGS
    from .hostile_round6 import REDTEAM_ROUND6
    from .hostile_round7 import HOSTILE_ROUND7
    from .hostile_round8 import HOSTILE_ROUND8
    from .hostile_redteam import HOSTILE_REDTEAM
    from .realistic import REALISTIC
    everything = [Variant("reference", "reference", doc="the instructor's code, as a student would submit it"),
                  Variant("stub", "stub", doc="the released student notebook, untouched"),
                  *BUGGY, *ALTERNATIVES, *HOSTILE, *HOSTILE_GUARD, *HOSTILE_DECODING, *HOSTILE_ORACLE, *REALISTIC,
                  *HOSTILE_HTML, *HOSTILE_REDTEAM, *HONEST, *HOSTILE_READING, *HOSTILE_ROUND5, *MAGICS, *CONTRACT_BUGS, *REDTEAM_ROUND6,
                  *HOSTILE_ROUND7, *HOSTILE_ROUND8,
                  *GPU, *HOSTILE_FORGING, *HOSTILE_LEAK]
    by_name = {}
    for v in everything:
        if v.name in by_name:
            raise ValueError(f"two variants are named {v.name!r}")
        by_name[v.name] = v
    return by_name


VARIANTS = _all_variants()


def names(kind: str = None) -> list:
    """Variant names, all or of one kind, in a stable order."""
    return [n for n, v in VARIANTS.items() if kind is None or v.kind == kind]


def make_submission(name: str):
    """The notebook a student would submit for variant `name` (an nbformat node, a fresh copy)."""
    return make_variant_submission(VARIANTS[name])


def make_variant_submission(variant: Variant):
    """The notebook a student would submit for `variant`, one of VARIANTS or not (the held-out ones)."""
    if variant.kind == "stub":
        return nbformat.read(str(STUDENT_NB), as_version=4)
    nb = copy.deepcopy(_reference_submission())
    for edit in variant.edits:
        apply_edit(nb, edit)
    return nb


def grade_variant_notebook(variant: Variant, nb=None):
    """In a grading process: grade_notebook on `variant`'s submission (or on `nb`, the same read back from a
    file), under its Limits, with the reference; returns (the result, its seconds)."""
    import time

    from autograder.grading import grade_notebook
    from autograder.instructor.reference import reference
    from autograder.limits import Limits
    started = time.monotonic()
    nb = make_variant_submission(variant) if nb is None else nb
    result = grade_notebook(nb, limits=Limits.for_timeout(**variant.limits), reference=reference())
    return result, time.monotonic() - started


def failed_messages(result) -> dict:
    """item -> [(check, message)] of each check that did not pass, after the cause its diagnosis found, which the
    report puts first (runner.diagnose)."""
    return {i: [("the cause found first", r.diagnosis)] * bool(r.diagnosis)
            + [(o.name, o.message) for o in r.outcomes if not o.passed] for i, r in result.items.items()}


def write_class(folder, variant_names, student_ids=None) -> list:
    """Write folder/<student>/lesson20/lesson20.ipynb for each variant (student id = variant name
    unless given); return the notebook paths."""
    folder = Path(folder)
    paths = []
    for i, name in enumerate(variant_names):
        student = student_ids[i] if student_ids else name
        path = folder / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(make_submission(name), str(path))
        paths.append(path)
    return paths


# ---- what each kind of variant must score ----

def full_marks() -> dict:
    from autograder.items import AUTO_ITEMS
    return {item.id: float(item.points) for item in AUTO_ITEMS}


def judge(name: str, status: str, scores: dict, twin_scores: dict = None, review: dict = None) -> list:
    """What is wrong with how variant `name` was graded (status, {item: score}); [] if nothing.

    twin_scores: the scores of the hostile variant's honest twin, when it has one.
    review: {item: tamper flags} of the items set aside for review, when the caller knows them: exactly
    the items the variant names in `flagged` (none for anything but a hostile variant).
    """
    variant, full = VARIANTS[name], full_marks()
    problems = []
    if review is not None:
        want = set(full) if "*" in variant.flagged else set(variant.flagged)
        got_flagged = {item for item, flags in review.items() if flags}
        # "*": set aside somewhere (every item if caught while the notebook ran, else the items whose checks caught it)
        if ("*" in variant.flagged and not got_flagged) or ("*" not in variant.flagged and got_flagged != want):
            problems.append(f"set aside for review: {sorted(got_flagged)} ({sorted({f for v in review.values() for f in v})[:3]}), "
                            f"expected {sorted(want)}")
    if variant.kind != "hostile" and status != "graded":
        problems.append(f"status {status!r} instead of 'graded'")
    for item, points in full.items():
        got = scores.get(item)
        if got is None:
            problems.append(f"{item}: no score")
            continue
        if variant.kind in ("reference", "alternative", "realistic") and got != points:
            problems.append(f"{item}: {got:g} instead of full marks ({points:g})")
        elif variant.kind == "stub" and got != 0:
            problems.append(f"{item}: {got:g} instead of 0 for the untouched student notebook")
        elif variant.kind == "buggy":
            if item == variant.item and got >= points:
                problems.append(f"{item}: full marks for a submission that breaks it ({variant.doc})")
            elif item != variant.item and got != points:  # graded alone: the reference stands in for it elsewhere
                problems.append(f"{item}: {got:g} of {points:g}, but the mistake is in {variant.item} only (each "
                                "item is graded with the reference's code standing in for the other exercises')")
        elif variant.kind == "hostile":
            twin = (twin_scores or {}).get(item)
            want = variant.expect.get(item)
            if twin is not None and got > twin + 1e-9:
                problems.append(f"{item}: {got:g}, more than its honest twin {variant.twin} ({twin:g})")
            if want == "less":
                if got >= points:
                    problems.append(f"{item}: full marks; it should lose points")
            elif want is not None:
                if abs(got - want) > 1e-9:
                    problems.append(f"{item}: {got:g} instead of {want:g}")
            elif variant.rest == "zero" and got != 0:
                problems.append(f"{item}: {got:g} instead of 0")
            elif item in (review or {}) and review[item]:
                pass  # set aside for review: scored 0 until an instructor grades it
            elif variant.rest == "full" and got != points and not (twin is not None and twin < points):
                problems.append(f"{item}: {got:g} instead of full marks ({points:g})")
    if variant.kind == "hostile" and status != variant.status:
        problems.append(f"status {status!r} instead of {variant.status!r}")
    return problems
