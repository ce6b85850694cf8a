"""Which code of a submission the grader runs."""
import nbformat
import pytest

from autograder.extract import notebook_cells, read_notebook, repair_structure, runnable_cells, strip_magics


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for source, solution in cells:
        cell = nbformat.v4.new_code_cell(source)
        if solution:
            cell.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": f"x{len(nb.cells)}"}
        nb.cells.append(cell)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("text"))
    return nb


def test_solution_cells_definitions_and_imports_run_in_order():
    nb = notebook(("import torch\nDEVICE = pick()\nimport math as m", False),   # imports only
                  ("def helper():\n    return 1", False),                      # definitions: whole cell
                  ("plot(train())", False),                                   # a demo: left out
                  ("def f():\n    return helper()\nprint('hi')", True))       # solution: whole cell
    cells = runnable_cells(nb)
    assert [c.index for c in cells] == [0, 2, 4]
    assert cells[0].source == "import torch\n\nimport math as m" and not cells[0].solution
    assert cells[2].solution and "print('hi')" in cells[2].source


def test_definitions_and_constants_are_taken_from_mixed_cells():
    """A helper written next to a test call still reaches the grader; the call does not."""
    source = "EPS = 2.0**-24\ndef helper(x):\n    return x + EPS\nprint(helper(1))\nN = len([1])"
    cells = runnable_cells(notebook((source, False)))
    assert cells[0].source == "EPS = 2.0**-24\ndef helper(x):\n    return x + EPS\n\n"


def test_magics_are_blanked_keeping_line_numbers():
    assert strip_magics("%%time\nx = 1\n%matplotlib inline\n!pip list") == "\nx = 1\n\n"


def test_broken_solution_cell_still_runs_so_the_student_sees_the_error():
    cells = runnable_cells(notebook(("def f(:\n    pass", True), ("def g(:\n", False)))
    assert [(c.index, c.solution) for c in cells] == [(0, True)]


def test_unreadable_notebook_gives_a_clear_message(tmp_path):
    path = tmp_path / "lesson20.ipynb"
    path.write_text("{ not json")
    with pytest.raises(ValueError, match="could not be read as a Jupyter notebook"):
        read_notebook(path)


# ---- the submission as it ran, and its repaired structure ----

def graded_cell(source, grade_id, solution, cell_type="code"):
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"grade": not solution, "solution": solution, "locked": not solution,
                                 "grade_id": grade_id, "points": 1, "schema_version": 3}
    return cell


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
