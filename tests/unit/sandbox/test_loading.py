"""autograder.sandbox.loading: a cell that ends the child is reported and left out of the next run."""
import warnings

from autograder.limits import Limits
from autograder.sandbox import Sandbox


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
