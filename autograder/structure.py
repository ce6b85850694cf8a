"""A notebook's nbgrader structure, repaired: what a student's editing did to its nbgrader cells (a copied
cell that duplicates a grade id, a check cell turned into markdown, damaged metadata) is undone before
grading, and each repair is noted for the feedback.
"""
import math
import re
from dataclasses import dataclass

import nbformat
from nbformat.v4.nbbase import random_cell_id

from .cells import COPY_KEY, nbgrader_meta
from .items import AUTO_ITEMS, ITEMS, ITEMS_BY_ID, item_of_cell
from .text import bounded_repr, clip

# identifiers, not HTML: nbgrader's grade ids and nbformat's cell ids, as those tools write them
GRADE_ID = re.compile(r"[A-Za-z0-9_-]{1,100}")
CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
NAME = re.compile(r"[\w.+-]{1,40}")  # a language_info value (a pygments lexer name, say)
LANGUAGE_INFO = {"name": "python"}  # the lesson's, as the instructor notebook has it
# every grade id of the lesson: the items' (check cells, written answers) and the autograded items' solution cells
GRADE_IDS = {i.id for i in ITEMS} | {i.solution_cell_id for i in AUTO_ITEMS}


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
    repairs = repair_metadata(nb)
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


def repair_metadata(nb) -> list:
    """Put back, in place, metadata that nbformat's schema or nbgrader cannot take: the notebook's language_info,
    cell ids, grade ids and points. A known grade id gets the instructor's points (items.ITEMS); a grade id
    that is one of the lesson's with odd characters added (`../q5_answer`) is that one again."""
    repairs = []
    info = nb.get("metadata", {}).get("language_info")
    if not (isinstance(info, dict) and isinstance(info.get("name"), str) and NAME.fullmatch(info["name"])):
        nb.metadata["language_info"] = dict(LANGUAGE_INFO)
        was = "missing" if info is None else f"{bounded_repr(info)}"
        repairs.append(Repair("", f"the notebook's language_info was {was}: repaired, it is {LANGUAGE_INFO} again"))
    present = {nbgrader_meta(c).get("grade_id") for c in nb.cells}
    for index, cell in enumerate(nb.cells):
        cell_id = cell.get("id")
        if cell_id is not None and not (isinstance(cell_id, str) and CELL_ID.fullmatch(cell_id)):
            cell["id"] = random_cell_id()
            repairs.append(Repair(_item(cell), f"cell {index} had the id {bounded_repr(cell_id)}, which is not a "
                                               "cell id (letters, digits, - and _): repaired with a new one"))
        meta = nbgrader_meta(cell)
        grade_id = meta.get("grade_id")
        if isinstance(grade_id, str) and not GRADE_ID.fullmatch(grade_id):
            known = _known_grade_id(grade_id, present)
            if known:
                meta["grade_id"] = known
                present.add(known)
                repairs.append(Repair(_item(cell), f"cell {index} had the grade id {bounded_repr(grade_id)}: "
                                                   f"repaired, it is {known!r} again"))
            else:
                del cell.metadata["nbgrader"]
                repairs.append(Repair("", f"cell {index} had the grade id {bounded_repr(grade_id)}, which is not "
                                          "one of the lesson's: repaired, it was graded as an ordinary cell"))
                continue
        repairs += _repair_points(index, cell, meta)
    return repairs


def _repair_points(index: int, cell, meta: dict) -> list:
    """A grade cell's points: the instructor's for a known grade id, else 0 where they are not a number."""
    if not isinstance(meta.get("grade_id"), str) or (not meta.get("grade") and "points" not in meta):
        return []  # no grade id: repair_structure makes it an ordinary cell
    points = meta.get("points")
    item = ITEMS_BY_ID.get(meta.get("grade_id"))
    valid = isinstance(points, (int, float)) and not isinstance(points, bool) and math.isfinite(points) \
        and points >= 0
    right = float(item.points) if item and meta.get("grade") else (points if valid else 0)
    if valid and points == right:
        return []
    meta["points"] = right
    return [Repair(_item(cell), f"cell {index} had {bounded_repr(points)} for its points: repaired, "
                                f"it is worth {right:g} again")]


def _known_grade_id(grade_id: str, present: set) -> str:
    """The lesson's grade id that `grade_id` is with odd characters added, if no other cell has it; else ""."""
    def letters(text):
        return re.sub(r"[^a-z0-9]", "", text.lower())
    found = [g for g in GRADE_IDS if letters(g) == letters(grade_id.rsplit("/", 1)[-1])]
    return found[0] if len(found) == 1 and found[0] not in present else ""


def _item(cell) -> str:
    """The autograded item a cell belongs to, for the feedback ("" for none)."""
    item = item_of_cell(nbgrader_meta(cell).get("grade_id"))
    return item if item in {i.id for i in AUTO_ITEMS} else ""


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


# The grader's own metadata. Only the grader writes it: whatever a submitted notebook holds under this
# key is a forgery ("a copy: grade the other cell") and is dropped before anything reads it.
# COPY_KEY (cells.py), in a cell: the cell is a copy that a repair took nbgrader's role from. The repairs
# themselves travel in the grading's result (instructor/sink.py), not in the notebook.


def drop_grader_metadata(nb) -> None:
    """Remove, in place, whatever the notebook holds under the grader's own metadata key."""
    for cell in nb.get("cells", []):
        if isinstance(cell.get("metadata"), dict):
            cell.metadata.pop(COPY_KEY, None)
