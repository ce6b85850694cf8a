"""A correct notebook whose metadata a student (or a tool) damaged keeps full marks: nbformat's schema and
nbgrader's steps would fail it (language_info without a name, points of "lots", a cell id holding `../`),
so each is put back before them and the feedback says so. One class, graded once by `grade`.
"""
import html
import json
import re

import pytest

from autograder.items import ASSIGNMENT
from tests.helpers import SOLUTION_NB
from tests.integration.test_grade_cli import FULL, grade

pytestmark = pytest.mark.slow


def grade_cell(nb, grade_id):
    return next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)


def nbgrader_of(grade_id):
    return lambda nb: grade_cell(nb, grade_id)["metadata"]["nbgrader"]


def setter(where, key, value):
    return lambda nb: where(nb).__setitem__(key, value)


# name -> (the damage, words of the repair note, the item whose feedback shows it or None)
DAMAGED = {
    "lang-name": (setter(lambda nb: nb["metadata"], "language_info", {"name": "Python 3", "version": "3.11.7"}),
                  "language_info was {'name': 'Python 3'", None),
    "lang-missing": (lambda nb: nb["metadata"].pop("language_info"), "language_info was missing", None),
    "lang-text": (setter(lambda nb: nb["metadata"], "language_info", "python"), "language_info was 'python'", None),
    "points-text": (setter(nbgrader_of("underflow_fraction"), "points", "lots"), "had 'lots' for its points",
                    "underflow_fraction"),
    "points-nan": (setter(nbgrader_of("static_loss_scaler"), "points", float("nan")), "had nan for its points",
                   "static_loss_scaler"),
    "points-inf": (setter(nbgrader_of("dynamic_loss_scaler"), "points", float("inf")), "had inf for its points",
                   "dynamic_loss_scaler"),
    "points-negative": (setter(nbgrader_of("master_weights"), "points", -2), "had -2 for its points",
                        "master_weights"),
    "points-bool": (setter(nbgrader_of("q5_answer"), "points", True), "had True for its points", "q5_answer"),
    "gradeid-path": (setter(nbgrader_of("token_accumulation_solution"), "grade_id",
                            "../token_accumulation_solution"), "grade id '../token_accumulation_solution'",
                     "token_accumulation"),
    "gradeid-odd": (setter(nbgrader_of("accumulate_gradients"), "grade_id", "accumulate gradients<>&'"),
                    "grade id \"accumulate gradients<>&'\"", "accumulate_gradients"),
    "cellid-path": (setter(lambda nb: grade_cell(nb, "mixed_precision_train_step_solution"), "id", "../../etc"),
                    "had the id '../../etc'", "mixed_precision_train_step"),
    "cellid-odd": (setter(lambda nb: nb["cells"][0], "id", "a b;c"), "had the id 'a b;c'", None),
    "cellid-duplicate": (lambda nb: nb["cells"][3].__setitem__("id", nb["cells"][2]["id"]),
                         f"cell 3 had the id {json.loads(SOLUTION_NB.read_text())['cells'][2]['id']!r}", None),
}


# the students: each notebook holds damages to different fields (a few, so that every note fits the reason)
STUDENTS = {
    "a": ["lang-name", "points-text", "gradeid-path"],
    "b": ["lang-missing", "points-nan", "gradeid-odd"],
    "c": ["lang-text", "points-inf", "cellid-path"],
    "d": ["cellid-odd", "points-negative", "points-bool"],
    "e": ["cellid-duplicate"],
    "intact": [],
}
STUDENT_OF = {damage: student for student, damages in STUDENTS.items() for damage in damages}


def test_every_damage_is_graded():
    assert sorted(STUDENT_OF) == sorted(DAMAGED)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("damaged")
    for student, damages in STUDENTS.items():
        nb = json.loads(SOLUTION_NB.read_text())
        for damage in damages:
            DAMAGED[damage][0](nb)
        path = base / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(nb, indent=1))
    grade(base / "submitted", base / "out", "--jobs", "2")
    return base / "out", json.loads((base / "out" / "grades.json").read_text())["students"]


def feedback_text(out, student) -> str:
    page = (out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    return html.unescape(re.sub(r"<[^>]+>", "", page))


def test_an_intact_notebook_has_nothing_repaired(graded):
    out, rows = graded
    assert rows["intact"]["total"] == FULL and "repaired" not in rows["intact"]["reason"]
    assert "Your notebook's structure" not in feedback_text(out, "intact")


@pytest.mark.parametrize("damage", sorted(DAMAGED))
def test_damaged_metadata_is_repaired_and_noted_with_full_marks(graded, damage):
    out, rows = graded
    _, words, item = DAMAGED[damage]
    student = STUDENT_OF[damage]
    row = rows[student]
    assert (row["status"], row["total"]) == ("graded", FULL), row["reason"]
    assert all(e["score"] == e["max_score"] for e in row["items"].values())
    assert "repaired" in row["reason"] and words in row["reason"], row["reason"]
    if item:  # a repair in an exercise's cells is shown above that exercise's report
        text = feedback_text(out, student)
        assert re.search(rf"Your notebook's structure: [^\n]*{re.escape(words)}", text), text[:2000]
