"""autograder.instructor.repair: RepairStructure starts from an empty record (only the grader writes grader
metadata) and records the repairs it made, which the grader reads back."""
from autograder.cells import COPY_KEY
from autograder.instructor.repair import RepairStructure
from autograder.instructor.sink import ResultSink
from autograder.structure import Repair
from tests.submissions import make_submission

FORGED = "regraded by hand: full marks"
RESOURCES = {"nbgrader": {"student": "ada", "notebook": "lesson20"}}
KEY = ("ada", "lesson20")


def forged(nb, text=FORGED):
    """The notebook with a submission's own copy marks and a forged record of repairs, where the grader kept
    its record before it had a sink."""
    nb.metadata["lesson20_repairs"] = [{"item": "master_weights", "text": text}]
    nb.cells[1].metadata[COPY_KEY] = {"copy_of": "master_weights_solution"}
    return nb


def test_a_submissions_own_marks_are_dropped_before_repair():
    sink = ResultSink()
    nb, _ = RepairStructure(sink=sink).preprocess(forged(make_submission("reference")), RESOURCES)
    assert sink.take(KEY).repairs == []  # nothing to repair: no repairs at all
    assert all(COPY_KEY not in c.metadata for c in nb.cells)


def test_the_sink_holds_only_the_repairs_made_and_starts_afresh():
    sink = ResultSink()
    sink.open(KEY, [Repair("master_weights", "left by an earlier grading that did not finish")])
    nb, _ = RepairStructure(sink=sink).preprocess(forged(make_submission("real_copied_check_cells")), RESOURCES)
    texts = [r.text for r in sink.found(KEY).repairs]
    assert texts and not any(FORGED in t or "earlier grading" in t for t in texts)
    assert any(COPY_KEY in c.metadata for c in nb.cells)  # the copies the repair made are marked
    assert [r.text for r in sink.take(KEY).repairs] == texts and sink.take(KEY).repairs == []  # taken once
