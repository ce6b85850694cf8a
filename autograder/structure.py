"""A notebook's nbgrader structure, repaired: what a student's editing did to its nbgrader cells (a copied
cell that duplicates a grade id, a check cell turned into markdown, damaged metadata) is undone before
grading, and each repair is noted for the feedback.
"""
import re
from dataclasses import dataclass

import nbformat

from .cells import COPY_KEY, nbgrader_meta
from .items import AUTO_ITEMS, item_of_cell
from .text import clip

# identifiers, not HTML: nbgrader's grade ids and nbformat's cell ids, as those tools write them
GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
NAME = re.compile(r"[\w.+-]{1,40}")  # a language_info value (a pygments lexer name, say)


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
        grade_id = nbgrader_meta(cell).get("grade_id")
        if not isinstance(grade_id, str):
            continue
        item = item_of_cell(grade_id)
        if last[grade_id] != index:
            role = "solution" if nbgrader_meta(cell).get("solution") else "check"
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
    present = {nbgrader_meta(c).get("grade_id") for c in nb.cells}
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


# The grader's own metadata. Only the grader writes it: whatever a submitted notebook holds under these
# keys is a forgery ("regraded by hand: full marks") and is dropped before anything reads it.
REPAIRS_KEY = "lesson20_repairs"  # notebook: the repairs RepairStructure made before nbgrader saw the notebook
# COPY_KEY (cells.py), in a cell: the cell is a copy that a repair took nbgrader's role from


def drop_grader_metadata(nb) -> None:
    """Remove, in place, whatever the notebook holds under the grader's own metadata keys."""
    nb.get("metadata", {}).pop(REPAIRS_KEY, None)
    for cell in nb.get("cells", []):
        if isinstance(cell.get("metadata"), dict):
            cell.metadata.pop(COPY_KEY, None)


def recorded_repairs(nb) -> list:
    """The repairs RepairStructure recorded in the notebook (it drops a submission's own record first)."""
    found = nb.get("metadata", {}).get(REPAIRS_KEY, [])
    known = {i.id for i in AUTO_ITEMS}
    return [Repair(r.get("item") if r.get("item") in known else "", clip(r.get("text"), "note"))
            for r in (found if isinstance(found, list) else []) if isinstance(r, dict)]
