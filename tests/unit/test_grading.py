"""autograder.grading: what the grader keeps about a submission (its own metadata, clipped) and how a
submission's report reads. grade_notebook itself starts a sandbox: tests/integration/test_sandbox.py and
tests/integration/test_submissions.py run it."""
from autograder.cells import COPY_KEY
from autograder.structure import Repair
from autograder.grading import SHOWN, SubmissionResult, problem_text
from autograder.structure import drop_grader_metadata
from autograder.items import get_item
from autograder.runner import ItemResult, Outcome
from autograder.text import LIMITS
from tests.submissions import make_submission


def test_drop_grader_metadata_keeps_everything_else():
    nb = make_submission("reference")
    nb.cells[1].metadata[COPY_KEY] = {"copy_of": "master_weights_solution"}
    nb.cells[2].metadata["keep"] = 1
    kernel, cells = dict(nb.metadata["kernelspec"]), len(nb.cells)
    drop_grader_metadata(nb)
    assert nb.metadata["kernelspec"] == kernel and len(nb.cells) == cells and nb.cells[2].metadata["keep"] == 1
    assert COPY_KEY not in nb.cells[1].metadata


def test_repairs_are_clipped():
    assert len(Repair("", "y" * 10**6).text) == LIMITS["note"]


def test_a_report_names_a_few_repairs_and_counts_the_rest():
    item = get_item("master_weights")
    result = SubmissionResult("graded", items={item.id: ItemResult(item, [Outcome("ran", True, "")])},
                              repairs=[Repair(item.id, f"copy {i}") for i in range(1000)])
    report = result.report(item.id)
    assert report.count("structure: copy ") == SHOWN and f"{1000 - SHOWN} more repairs" in report


def test_an_error_names_its_cell_and_line_and_what_happened_next():
    raised = problem_text({"cell": 4, "line": 2, "type": "ZeroDivisionError", "message": "division by zero"})
    assert "cell 4 (line 2)" in raised and "ZeroDivisionError: division by zero" in raised
    timeout = problem_text({"cell": 3, "type": "CellTimeout", "message": "ran past 2 s"})
    assert "cell 3 ran past 2 s" in timeout and "the cells after it still ran" in timeout
    died = problem_text({"cell": 2, "type": "ProcessDied", "message": "exit code 3"})
    assert "cell 2" in died and "exit code 3" in died and "run again without that cell" in died


def test_the_notebooks_own_repairs_head_the_first_items_report_only():
    first, second = get_item("underflow_fraction"), get_item("static_loss_scaler")
    result = SubmissionResult("graded", items={i.id: ItemResult(i, [Outcome("ran", True, "")]) for i in (first, second)},
                              repairs=[Repair("", "the notebook's language_info was missing: repaired")])
    assert "language_info" in result.report(first.id) and "language_info" not in result.report(second.id)


def test_a_sandbox_that_breaks_unexpectedly_while_loading_is_still_closed(monkeypatch):
    """Whatever start() raises, the sandbox is closed before the error goes up: a child left running would
    share the sandbox (its /tmp, its processes, its memory cgroup) with the next student of the grading process."""
    import pytest

    from autograder import grading
    closed = []

    class Breaks:
        def __init__(self, *args, **kwargs):
            pass

        def start(self):
            raise TypeError("unhashable type: 'list'")

        def close(self):
            closed.append(True)

    monkeypatch.setattr(grading, "Sandbox", Breaks)
    with pytest.raises(TypeError):
        grading.grade_notebook(make_submission("reference"))
    assert closed == [True]


def test_the_first_message_is_the_first_thing_the_report_asks_to_fix():
    """Set aside for review, then an error in the item's own cells, then its checks' first failure: the order the
    report itself gives them."""
    item = get_item("static_loss_scaler")
    failing = ItemResult(item, [Outcome("unscale", False, "divide in place")])
    result = SubmissionResult("graded", items={item.id: failing})
    assert result.first_message(item.id) == "divide in place" and "divide in place" in result.report(item.id)
    error = {"cell": 4, "line": 2, "type": "NameError", "message": "name 'x' is not defined", "item": item.id}
    result.problems.append(error)
    assert result.first_message(item.id) == problem_text(error) and problem_text(error) in result.report(item.id)
    failing.review.append("reading the interpreter's frames")
    assert "reading the interpreter's frames" in result.first_message(item.id)
    assert result.first_message(item.id) in result.report(item.id)
