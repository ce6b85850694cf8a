"""Reading a notebook, and which of its code cells a submission is graded by."""
import nbformat
import pytest

from autograder.cells import notebook_cells, read_notebook


def graded_cell(source, grade_id, solution, cell_type="code"):
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"grade": not solution, "solution": solution, "locked": not solution,
                                 "grade_id": grade_id, "points": 1, "schema_version": 3}
    return cell


def test_unreadable_notebook_gives_a_clear_message(tmp_path):
    path = tmp_path / "lesson20.ipynb"
    path.write_text("{ not json")
    with pytest.raises(ValueError, match="could not be read as a Jupyter notebook"):
        read_notebook(path)


def test_every_code_cell_runs_in_order_but_the_check_cells():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%matplotlib inline\nDEVICE = pick()"),
                graded_cell("def f():\n    return DEVICE", "q5_answer_solution", True),
                graded_cell('check("q5_answer", globals())', "q5_answer", False),
                nbformat.v4.new_code_cell('check("q5_answer", globals())'),   # a copy that lost its metadata
                nbformat.v4.new_code_cell("x = 1\r\ny = 2"),
                nbformat.v4.new_markdown_cell("text")]
    cells = notebook_cells(nb)
    assert [(c.index, c.solution, c.item) for c in cells] == [(0, False, ""), (1, True, "q5_answer"), (4, False, "")]
    assert cells[0].source.splitlines() == ["%matplotlib inline", "DEVICE = pick()"]  # transformed in the sandbox
    assert cells[2].source.splitlines() == ["x = 1", "y = 2"]
