"""Repairing what editing did to a notebook's nbgrader cells, and what the repaired notebook runs."""
import nbformat

from autograder.cells import notebook_cells
from autograder.structure import repair_structure
from tests.unit.test_cells import graded_cell


def test_copies_lose_their_grade_id_and_the_last_one_keeps_it():
    nb = nbformat.v4.new_notebook()
    nb.cells = [graded_cell("Q5_ANSWER = 'a'", "q5_answer_solution", True),
                graded_cell('check("q5_answer", globals())', "q5_answer", False),
                graded_cell("Q5_ANSWER = 'b'", "q5_answer_solution", True),
                graded_cell('check("q5_answer", globals())', "q5_answer", False)]
    repairs = [r for r in repair_structure(nb) if "was deleted" not in r.text]
    assert [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells[:4]] == [
        None, None, "q5_answer_solution", "q5_answer"]
    assert len(repairs) == 2 and all(r.item == "q5_answer" and "copy" in r.text for r in repairs)
    cells = notebook_cells(nb)  # both solution copies run, in order: the last definition wins
    assert [(c.index, c.item) for c in cells if c.item == "q5_answer"] == [(0, "q5_answer"), (2, "q5_answer")]
    before = nbformat.writes(nb)
    again = repair_structure(nb)  # repairing twice changes nothing (a deleted check cell is only noted again)
    assert nbformat.writes(nb) == before and all("check cell" in r.text and "deleted" in r.text for r in again)


def test_markdown_check_cells_and_broken_metadata_are_repaired():
    nb = nbformat.v4.new_notebook()
    nb.cells = [graded_cell('check("q5_answer", globals())', "q5_answer", False, "markdown"),
                nbformat.v4.new_code_cell("x = 1")]
    nb.cells[1].metadata["nbgrader"] = {"grade": True, "solution": False}
    repairs = [r for r in repair_structure(nb) if "was deleted" not in r.text]
    assert nb.cells[0].cell_type == "code" and nb.cells[0].outputs == []
    assert "nbgrader" not in nb.cells[1].metadata
    assert [r.item for r in repairs] == ["", "q5_answer"] and "turned into markdown" in repairs[1].text


def test_deleted_exercise_cells_are_put_back_or_noted():
    from autograder.items import AUTO_ITEMS
    nb = nbformat.v4.new_notebook()
    nb.cells = [graded_cell("Q5_ANSWER = 'b'", "q5_answer_solution", True)]
    repairs = repair_structure(nb)
    added = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells[1:]]
    assert added == [i.solution_cell_id for i in AUTO_ITEMS if i.id != "q5_answer"]
    assert all(c.source.startswith("#") for c in nb.cells[1:])  # empty: they define nothing
    deleted_checks = {r.item for r in repairs if "check cell" in r.text}
    assert deleted_checks == {i.id for i in AUTO_ITEMS}
    assert {c.item for c in notebook_cells(nb)} == {i.id for i in AUTO_ITEMS}
