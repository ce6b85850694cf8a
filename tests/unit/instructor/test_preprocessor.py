"""autograder.instructor.preprocessor: GradeOutOfProcess on a tiny notebook (one sandbox start for the file):
each known test cell gets its report and its score, an unknown test cell an error (never full marks), and
the whole result, with the repairs RepairStructure put in the sink, goes into the sink for the pipeline, and
the student's record holds what export reads."""
import pytest
from nbformat.v4 import new_code_cell, new_notebook

from autograder.instructor.preprocessor import GradeOutOfProcess
from autograder.instructor.sink import ResultSink
from autograder.instructor.state import item_records
from autograder.instructor.quiz_key import PRACTICE_5_ANSWER
from autograder.items import get_item
from autograder.limits import Limits
from autograder.structure import Repair

RIGHT, WRONG, UNKNOWN = "q5_answer", "underflow_fraction", "not_an_exercise"
KEY = ("ada", "lesson20")
REPAIRED = "the check cell was copied: repaired in this test"


def cell(source, grade_id, points=None):
    """A solution cell (no points) or a test cell (points), with nbgrader's metadata."""
    grade = points is not None
    meta = {"grade": grade, "solution": not grade, "locked": grade, "grade_id": grade_id, "schema_version": 3}
    return new_code_cell(source, metadata={"nbgrader": meta | ({"points": points} if grade else {})})


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    nb = new_notebook(cells=[
        cell(f"Q5_ANSWER = {PRACTICE_5_ANSWER!r}", f"{RIGHT}_solution"),
        cell(f'check("{RIGHT}", globals())', RIGHT, get_item(RIGHT).points),
        cell("def underflow_fraction(values, dtype=None):\n    return -1.0", f"{WRONG}_solution"),
        cell(f'check("{WRONG}", globals())', WRONG, get_item(WRONG).points),
        cell("assert True", UNKNOWN, 2)], metadata={"language_info": {"name": "python"}})  # as Jupyter saves it
    resources = {"nbgrader": {"student": "ada", "notebook": "lesson20"}, "metadata": {"path": str(out / "none")}}
    sink = ResultSink()
    sink.open(KEY, [Repair(UNKNOWN, REPAIRED)])  # as RepairStructure leaves it (a cell no report shows)
    sink.open(("bob", "lesson20"), [Repair(RIGHT, "bob's repair")])
    nb, resources = GradeOutOfProcess(limits=Limits.for_timeout(30), sink=sink).preprocess(nb, resources)
    cells = {c.metadata.nbgrader.grade_id: c for c in nb.cells}
    found = sink.take(KEY)
    assert sink.take(KEY).result is None  # taken once
    return cells, found.result


def score(cell) -> float:
    results = [o for o in cell.outputs if o.output_type == "execute_result"]
    assert len(results) == 1, cell.outputs  # nbgrader reads the first execute_result as the score
    return float(results[0].data["text/plain"])


def report(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def test_each_test_cell_gets_its_report_and_its_score(graded):
    cells, _ = graded
    assert score(cells[RIGHT]) == get_item(RIGHT).points
    assert 0 <= score(cells[WRONG]) < get_item(WRONG).points
    assert report(cells[RIGHT]).startswith(RIGHT) and report(cells[WRONG]).startswith(WRONG)
    assert "returned -1.0" in report(cells[WRONG])  # the failing check says what came back
    assert not any(o.output_type == "error" for c in (cells[RIGHT], cells[WRONG]) for o in c.outputs)
    assert cells[f"{RIGHT}_solution"].outputs == []  # solution cells are not run by nbgrader here


def test_an_unknown_test_cell_gets_an_error_not_full_marks(graded):
    cells, _ = graded
    [output] = cells[UNKNOWN].outputs
    assert output.output_type == "error" and output.ename == "UnknownTest" and UNKNOWN in output.evalue


def test_the_result_is_handed_over_once_and_holds_each_items_score_and_report(graded):
    cells, result = graded
    assert result.status == "graded"
    assert set(result.items) == {RIGHT, WRONG}  # the items graded, not the unknown cell
    for item_id, item in item_records(result).items():  # as the student's record keeps them
        assert item["max_score"] == get_item(item_id).points
        assert item["score"] == score(cells[item_id])
        assert sum(b["score"] for b in item["rubric"].values()) >= item["score"]
        assert result.report(item_id) == report(cells[item_id]).rstrip("\n")


def test_the_repairs_from_the_sink_reach_the_result_and_its_reason(graded):
    cells, result = graded
    texts = [r.text for r in result.repairs]  # the sink's first, then what the grader found in this tiny notebook
    assert texts[0] == REPAIRED and not any("bob" in t for t in texts)  # ada's, not bob's
    assert REPAIRED in result.reason


def test_a_score_below_full_carries_the_first_thing_its_report_asks_to_fix(graded):
    """For the feedback page's summary (page_summary.py): the failing check's own message, which the report holds,
    on the score's output; nothing on a full score. nbgrader reads only the output's text."""
    from autograder.instructor.preprocessor import FIRST_MESSAGE
    cells, result = graded
    [wrong] = [o for o in cells[WRONG].outputs if o.output_type == "execute_result"]
    [right] = [o for o in cells[RIGHT].outputs if o.output_type == "execute_result"]
    fix = wrong.metadata[FIRST_MESSAGE]
    assert fix and fix in report(cells[WRONG]) and "returned -1.0" in fix
    assert fix == result.first_message(WRONG) and FIRST_MESSAGE not in right.metadata
