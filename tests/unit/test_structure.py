"""Repairing what editing did to a notebook's nbgrader cells, and what the repaired notebook runs."""
import nbformat

from autograder.cells import notebook_cells
from autograder.structure import repair_structure
from tests.unit.test_cells import graded_cell


def saved_notebook():
    """An empty notebook as Jupyter saves one: with its kernel's language_info."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.7"}
    return nb


def test_copies_lose_their_grade_id_and_the_last_one_keeps_it():
    nb = saved_notebook()
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
    nb = saved_notebook()
    nb.cells = [graded_cell('check("q5_answer", globals())', "q5_answer", False, "markdown"),
                nbformat.v4.new_code_cell("x = 1")]
    nb.cells[1].metadata["nbgrader"] = {"grade": True, "solution": False}
    repairs = [r for r in repair_structure(nb) if "was deleted" not in r.text]
    assert nb.cells[0].cell_type == "code" and nb.cells[0].outputs == []
    assert "nbgrader" not in nb.cells[1].metadata
    assert [r.item for r in repairs] == ["", "q5_answer"] and "turned into markdown" in repairs[1].text


def test_deleted_exercise_cells_are_put_back_or_noted():
    from autograder.items import AUTO_ITEMS
    nb = saved_notebook()
    nb.cells = [graded_cell("Q5_ANSWER = 'b'", "q5_answer_solution", True)]
    repairs = repair_structure(nb)
    added = [c.metadata["nbgrader"]["grade_id"] for c in nb.cells[1:]]
    assert added == [i.solution_cell_id for i in AUTO_ITEMS if i.id != "q5_answer"]
    assert all(c.source.startswith("#") for c in nb.cells[1:])  # empty: they define nothing
    deleted_checks = {r.item for r in repairs if "check cell" in r.text}
    assert deleted_checks == {i.id for i in AUTO_ITEMS}
    assert {c.item for c in notebook_cells(nb)} == {i.id for i in AUTO_ITEMS}


def damaged(change):
    """The reference notebook with one piece of its metadata damaged by `change(nb)`."""
    from tests.helpers import SOLUTION_NB, read
    nb = read(SOLUTION_NB)
    change(nb)
    return nb


def _grade_cell(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_damaged_metadata_is_put_back_and_noted():
    from tests.helpers import SOLUTION_NB, read
    reference = read(SOLUTION_NB)
    assert [r for r in repair_structure(read(SOLUTION_NB)) if "was deleted" not in r.text] == []
    cases = {
        "language_info": lambda nb: nb.metadata.__setitem__("language_info", {"name": "Python 3"}),
        "no language_info": lambda nb: nb.metadata.pop("language_info"),
        "points": lambda nb: _grade_cell(nb, "dynamic_loss_scaler").metadata.nbgrader.__setitem__("points", "lots"),
        "nan points": lambda nb: _grade_cell(nb, "master_weights").metadata.nbgrader.__setitem__(
            "points", float("nan")),
        "bool points": lambda nb: _grade_cell(nb, "q5_answer").metadata.nbgrader.__setitem__("points", True),
        "grade id": lambda nb: _grade_cell(nb, "q5_answer_solution").metadata.nbgrader.__setitem__(
            "grade_id", "../q5_answer_solution"),
        "cell id": lambda nb: _grade_cell(nb, "q5_answer").__setitem__("id", "../../etc"),
    }
    for what, change in cases.items():
        nb = damaged(change)
        repairs = [r for r in repair_structure(nb) if "was deleted" not in r.text]
        assert len(repairs) == 1 and "repaired" in repairs[0].text, (what, repairs)
        nbformat.validate(nb)  # the schema holds again
        assert nb.metadata.language_info["name"] == reference.metadata.language_info["name"], what
        for cell, ref_cell in zip(nb.cells, reference.cells):
            assert cell.metadata.get("nbgrader") == ref_cell.metadata.get("nbgrader"), what
        assert len({c.id for c in nb.cells}) == len(nb.cells)


def test_an_unknown_odd_grade_id_makes_an_ordinary_cell():
    nb = saved_notebook()
    nb.cells = [graded_cell("x = 1", "<script>", True)]
    repairs = repair_structure(nb)
    assert "nbgrader" not in nb.cells[0].metadata
    assert "'<script>'" in repairs[0].text and "ordinary cell" in repairs[0].text
