"""autograder.sandbox.loading: a cell that ends the child is reported and left out of the next run."""
import warnings

from autograder.limits import Limits
from autograder.sandbox import Sandbox
from autograder.sandbox.loading import stopped_cells


def test_a_cell_that_ends_the_process_is_left_out_of_a_fresh_run():
    cells = [{"index": 1, "label": "<cell 1>", "source": "X = 'b'", "solution": False},
             {"index": 2, "label": "<cell 2>", "source": "import os\nos._exit(3)", "solution": False},
             {"index": 5, "label": "<cell 5>", "source": "Q5_ANSWER = X", "solution": True}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(cell_seconds=20, notebook_seconds=40), isolate=False)
    try:
        problems = sandbox.start()
        assert [(p["cell"], p["type"], p["message"]) for p in problems] == [(2, "ProcessDied", "exit code 3")]
        assert sandbox.request("q5_answer", {}, timeout=30)["answer"]["value"] == "b"
    finally:
        sandbox.close()


def test_only_whole_cell_numbers_are_taken_as_stopped_cells():
    """The child's word, signed but written by a process the student's code may have taken over: a cell that is
    a list (unhashable) or a bool is not a cell, and must not make grading the submission raise."""
    problems = [{"type": "CellTimeout", "cell": 3}, {"type": "CellTimeout", "cell": [1]},
                {"type": "CellTimeout", "cell": True}, {"type": "NameError", "cell": 4}]
    assert stopped_cells(problems) == {3}
