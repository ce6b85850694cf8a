"""What code a notebook gives the grader, and in what shape.

* `notebook_cells`: a submission is graded as it ran: every code cell in notebook order, as
  nbgrader's own execution would run it, except nbgrader's test cells (and copies of them);
  the sandbox turns IPython's syntax (magics, `!shell`, `obj?`) into calls that do nothing.
* `repair_structure`: what a student's editing did to the notebook's nbgrader cells (a copied
  cell that duplicates a grade id, a check cell turned into markdown, damaged metadata) is
  undone before grading, and each repair is noted for the feedback.
* `runnable_cells`: the reference's code, from the instructor notebook: its solution cells, plus
  the imports, definitions and literal constants of the other cells (no demos: it runs in the
  grader's own process, once).
"""
import ast
import re
from dataclasses import dataclass

import nbformat

from .items import AUTO_ITEMS, item_of_cell
from .text import clip

DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class CodeCell:
    index: int        # position in the notebook, for messages ("cell 14")
    source: str
    solution: bool    # an nbgrader solution cell (the student's answer), or a copy of one
    item: str = ""    # the item whose solution cell this is (or a copy of), else ""

    @property
    def label(self) -> str:
        return f"<cell {self.index}>"

    def plain(self) -> dict:
        """What the sandbox is sent for this cell."""
        return {"index": self.index, "label": self.label, "source": self.source, "solution": self.solution}


# ---- the submission, as it ran ----

COPY_KEY = "lesson20"  # cell metadata for a cell that lost its nbgrader role in a repair: {"copy_of": grade id}
CHECK_CALL = re.compile(r"""\s*check\(\s*["'](\w+)["']\s*,\s*globals\(\)\s*\)\s*;?\s*""")


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_test_cell(cell) -> bool:
    """An nbgrader test cell (graded, not a solution), or a copy of one: a bare `check("<id>", globals())`."""
    meta = _nbgrader(cell)
    if meta.get("grade") and not meta.get("solution"):
        return True
    return bool(CHECK_CALL.fullmatch(cell.get("source", "")))


def cell_item(cell) -> str:
    """The item a cell's code answers: its solution grade id, or the one it was copied from."""
    meta = _nbgrader(cell)
    grade_id = meta.get("grade_id") if meta.get("solution") else None
    grade_id = grade_id or cell.get("metadata", {}).get(COPY_KEY, {}).get("copy_of", "")
    item = item_of_cell(grade_id)
    return item if grade_id and grade_id != item else ""


def notebook_cells(nb) -> list:
    """Every code cell the student's kernel ran, in order, as the grader runs it."""
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code" or is_test_cell(cell):
            continue
        item = cell_item(cell)
        # IPython syntax is transformed in the sandbox, on the cell's own clock (sandbox/worker.py)
        cells.append(CodeCell(index, _text(cell.get("source", "")), bool(item), item))
    return cells


def _text(source) -> str:
    """A cell's source as one string with \\n line ends (a list of lines, CRLF or CR line ends happen)."""
    if isinstance(source, list):
        source = "".join(source)
    return source.replace("\r\n", "\n").replace("\r", "\n")


@dataclass
class Repair:
    item: str     # the item it concerns ("" for none)
    text: str     # what was repaired, for the student and the instructor (it may quote a grade id)

    def __post_init__(self):
        self.text = clip(self.text, "note")


def repair_structure(nb) -> list:
    """Undo what editing did to the nbgrader cells of `nb` (in place); return the Repairs made.

    The rules: the last cell with a grade id keeps it, as nbgrader's own deduplication keeps it,
    and earlier copies become ordinary cells (a copied solution cell still runs, in notebook order,
    so the last definition wins, as in the student's kernel); an autograded item's solution and
    check cells are code cells; nbgrader metadata that nbgrader cannot read is removed. The
    instructor's version of every grade cell is put back by nbgrader itself (OverwriteCells).
    """
    repairs = []
    auto = {i.id for i in AUTO_ITEMS}
    last = {}
    for index, cell in enumerate(nb.cells):
        meta = cell.get("metadata", {}).get("nbgrader")
        if meta is None:
            continue
        if not isinstance(meta, dict) or ((meta.get("grade") or meta.get("solution") or meta.get("locked"))
                                          and not isinstance(meta.get("grade_id"), str)):
            del cell.metadata["nbgrader"]
            repairs.append(Repair("", f"cell {index} had nbgrader metadata without a grade id: repaired, it was "
                                      "graded as an ordinary cell"))
            continue
        if isinstance(meta.get("grade_id"), str):
            last[meta["grade_id"]] = index
    for index, cell in enumerate(nb.cells):
        grade_id = _nbgrader(cell).get("grade_id")
        if not isinstance(grade_id, str):
            continue
        item = item_of_cell(grade_id)
        if last[grade_id] != index:
            role = "solution" if _nbgrader(cell).get("solution") else "check"
            del cell.metadata["nbgrader"]
            cell.metadata[COPY_KEY] = {"copy_of": grade_id}
            what = ("its code still ran where it stands, and the later copy's definitions win" if role == "solution"
                    else "only the last one is graded")
            repairs.append(Repair(item if item in auto else "",
                                  f"cell {index} is a copy of the {role} cell {grade_id!r} (cell {last[grade_id]}): "
                                  f"repaired, {what}"))
        elif item in auto and cell.get("cell_type") != "code":
            was = cell.get("cell_type")
            cell.cell_type = "code"
            cell.outputs, cell.execution_count = [], None
            cell.pop("attachments", None)
            repairs.append(Repair(item, f"cell {index} ({grade_id!r}) had been turned into {was} "
                                        "and was repaired: it is a code cell again"))
    return repairs + _restore_deleted(nb)


def _restore_deleted(nb) -> list:
    """Autograded items whose solution or check cell the student deleted: an empty solution cell is put
    back at the end (nbgrader places a restored check cell after it), and a deleted check cell is noted
    (nbgrader puts the instructor's back). Code written in other cells is what gets graded."""
    present = {_nbgrader(c).get("grade_id") for c in nb.cells}
    repairs = []
    for item in AUTO_ITEMS:
        if item.solution_cell_id not in present:
            cell = nbformat.v4.new_code_cell("# This exercise's own cell was deleted; the grader put back this empty "
                                             "one. Your code for it elsewhere in the notebook is what is graded.")
            cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "task": False,
                                         "grade_id": item.solution_cell_id, "schema_version": 3}
            nb.cells.append(cell)
            repairs.append(Repair(item.id, f"the exercise's cell {item.solution_cell_id!r} was deleted: repaired "
                                           "with an empty one at the end; your code elsewhere is what is graded"))
        if item.id not in present:
            repairs.append(Repair(item.id, f"the check cell {item.id!r} was deleted: repaired, the exercise is "
                                           "graded as if it were there"))
    return repairs


def strip_magics(source: str) -> str:
    """Blank out IPython-only lines (%magic, !shell, %%cell magic), keeping line numbers."""
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        lines[0] = ""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def _only_defines(tree: ast.Module) -> bool:
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (isinstance(node, DEFINITIONS) or docstring):
            return False
    return True


def _constant(node) -> bool:
    """An expression of literals only (`2.0**-24`, `(1, 2)`, `"b"`): safe to evaluate, needs no state."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant(e) for e in node.elts)
    return False


def _kept(node) -> bool:
    """What the grader takes from a cell it does not run whole: imports, definitions, literal constants."""
    if isinstance(node, DEFINITIONS):
        return True
    return (isinstance(node, ast.Assign) and _constant(node.value)
            and all(isinstance(t, ast.Name) for t in node.targets))


def _definitions_of(source: str, tree: ast.Module) -> str:
    """The kept top-level statements of a cell, each on its original lines (the rest blanked)."""
    lines = [""] * len(source.split("\n"))
    for node in tree.body:
        if _kept(node):
            segment = ast.get_source_segment(source, node) or ""
            for offset, text in enumerate(segment.split("\n")):
                lines[node.lineno - 1 + offset] = text
    return "\n".join(lines)


def runnable_cells(nb) -> list:
    """The code cells a grader executes, in notebook order."""
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        source = strip_magics(cell.get("source", ""))
        solution = bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            if solution:  # run it anyway: the SyntaxError is the student's feedback
                cells.append(CodeCell(index, source, True))
            continue
        if solution or _only_defines(tree):
            cells.append(CodeCell(index, source, solution))
        elif any(_kept(node) for node in tree.body):
            cells.append(CodeCell(index, _definitions_of(source, tree), False))
    return cells


def read_notebook(path) -> "nbformat.NotebookNode":
    """Read a submitted notebook, or raise ValueError with a message a student can act on."""
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as exc:  # broken JSON, wrong schema, binary garbage
        raise ValueError(f"{path.name if hasattr(path, 'name') else path} could not be read as a "
                         f"Jupyter notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
