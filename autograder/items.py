"""The graded items of Lesson 20: the one table that names them and gives their points, built from the
exercises' declarations (autograder/exercises/: an auto-graded item's points are its behaviours') and the
written answers below.

Every other place reads this table: the nbgrader grade cells (stamped by
`python -m autograder release`), the check cells, the check modules
(`exercises/<id>/test_<id>.py`), the reports, grades.json and grades.csv.
"""
from pathlib import Path
from typing import Union

from .exercise import SOLUTION_SUFFIX, Exercise, WrittenAnswer
from .exercises import EXERCISES

ASSIGNMENT = "lesson20"            # the nbgrader assignment, its notebook's name, and the course id
SOLUTIONS_DIR = "solutions"        # instructor notebooks: solutions/<ASSIGNMENT>/*.ipynb
NOTEBOOK_GLOB = "*.ipynb"          # nbgrader takes the notebooks directly in the assignment folder
PACKAGE_DIR = Path(__file__).parent
CHECKS_DIR = PACKAGE_DIR / "checks"        # what every exercise's checks share (pytest.ini, expected.pt, harness)
EXERCISES_DIR = PACKAGE_DIR / "exercises"  # each exercise's student side: <id>/test_<id>.py, its visible checks
HIDDEN_DIR = PACKAGE_DIR / "instructor" / "exercises"  # its instructor side: <id>/test_<id>.py, its hidden checks


def check_file(folder: Path, item_id: str) -> Path:
    """An exercise's checks in one of the two folders (EXERCISES_DIR: visible; HIDDEN_DIR: hidden)."""
    return folder / item_id / f"test_{item_id}.py"


# the items, each declared once: the auto-graded exercises (autograder/exercises/), then the written answers;
# an item is an Exercise or a WrittenAnswer (exercise.py), which share id, points, title, kind, names and given
Item = Union[Exercise, WrittenAnswer]
ITEMS = tuple(EXERCISES) + (
    WrittenAnswer("practice_q1", 2, "Practice question 1: why not train entirely in fp16?"),
    WrittenAnswer("practice_q2", 2, "Practice question 2: why an fp32 master copy?"),
    WrittenAnswer("practice_q3", 2, "Practice question 3: what loss scaling does"),
    WrittenAnswer("practice_q4", 2, "Practice question 4: batch 256 on 64-example hardware"),
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
