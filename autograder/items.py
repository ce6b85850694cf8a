"""The graded items of Lesson 20: the one table that names them and gives their points, built from the
exercises' declarations (autograder/exercises/: an auto-graded item's points are its behaviours') and the
written answers below.

Every other place reads this table: the nbgrader grade cells (stamped by
`python -m autograder release`), the check cells, the check modules
(`checks/test_<id>.py`), the reports, grades.json and grades.csv.
"""
from dataclasses import dataclass
from pathlib import Path

from .exercises import EXERCISES

ASSIGNMENT = "lesson20"            # the nbgrader assignment, its notebook's name, and the course id
SOLUTIONS_DIR = "solutions"        # instructor notebooks: solutions/<ASSIGNMENT>/*.ipynb
NOTEBOOK_GLOB = "*.ipynb"          # nbgrader takes the notebooks directly in the assignment folder
SOLUTION_SUFFIX = "_solution"      # grade id of an item's solution cell: <item id>_solution
PACKAGE_DIR = Path(__file__).parent
CHECKS_DIR = PACKAGE_DIR / "checks"                 # the visible checks: checks/test_<item id>.py
HIDDEN_DIR = PACKAGE_DIR / "instructor" / "hidden"  # the hidden checks, shipped to instructors only


@dataclass(frozen=True)
class Item:
    id: str            # nbgrader grade id of the graded cell, also the check module's name
    points: float
    kind: str          # "auto": scored by the checks; "manual": read by an instructor
    names: tuple = ()  # top-level names the student's code must define for this item
    title: str = ""
    given: tuple = ()  # other items' names whose objects the checks hand to this item's code (a scaler)
    code: bool = True  # its names are code that other items' code may call (not an answer, as Q5_ANSWER)

    @property
    def solution_cell_id(self) -> str:
        return f"{self.id}{SOLUTION_SUFFIX}"


# the auto-graded items, one per exercise declaration (autograder/exercises/), then the written answers
ITEMS = tuple(Item(e.id, e.points, "auto", e.names, e.title, e.given, e.code) for e in EXERCISES) + (
    Item("practice_q1", 2, "manual", (), "Practice question 1: why not train entirely in fp16?"),
    Item("practice_q2", 2, "manual", (), "Practice question 2: why an fp32 master copy?"),
    Item("practice_q3", 2, "manual", (), "Practice question 3: what loss scaling does"),
    Item("practice_q4", 2, "manual", (), "Practice question 4: batch 256 on 64-example hardware"),
)

ITEMS_BY_ID = {item.id: item for item in ITEMS}
AUTO_ITEMS = tuple(item for item in ITEMS if item.kind == "auto")
MANUAL_ITEMS = tuple(item for item in ITEMS if item.kind == "manual")


def get_item(item_id: str) -> Item:
    """Return the item with this grade id, or raise a KeyError that lists the valid ids."""
    try:
        return ITEMS_BY_ID[item_id]
    except KeyError:
        valid = ", ".join(ITEMS_BY_ID)
        raise KeyError(f"unknown exercise id {item_id!r}; the ids are: {valid}") from None


def item_of_cell(grade_id: str) -> str:
    """The item id a cell belongs to: its grade id, less the solution suffix."""
    return (grade_id or "").removesuffix(SOLUTION_SUFFIX)


ROOT = Path(__file__).resolve().parents[1]  # the repository (a checkout): solutions/, lessons/, nbgrader_config.py


def solution_notebooks(root) -> list:
    """The instructor notebooks of the assignment under a course root, in a stable order."""
    return sorted((Path(root) / SOLUTIONS_DIR / ASSIGNMENT).glob(NOTEBOOK_GLOB))
