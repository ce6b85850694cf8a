"""Only the grader writes grader metadata: RepairStructure starts from an empty record, and what the
grader stores about a submission is clipped."""
from autograder.cells import COPY_KEY
from autograder.structure import Repair
from autograder.grading import REPAIRS_KEY, SHOWN, drop_grader_metadata, recorded_repairs
from autograder.instructor.repair import RepairStructure
from autograder.instructor.state import StudentRecord, load_state, save_state
from autograder.text import LIMITS
from tests.submissions import make_submission

FORGED = "regraded by hand: full marks"


def forged(nb, text=FORGED):
    nb.metadata[REPAIRS_KEY] = [{"item": "master_weights", "text": text}]
    nb.cells[1].metadata[COPY_KEY] = {"copy_of": "master_weights_solution"}
    return nb


def test_a_submissions_own_record_is_dropped_before_repair():
    nb, _ = RepairStructure().preprocess(forged(make_submission("reference")), {})
    assert REPAIRS_KEY not in nb.metadata  # nothing to repair: no record at all
    assert all(COPY_KEY not in c.metadata for c in nb.cells)


def test_the_record_holds_only_the_repairs_made():
    nb = forged(make_submission("real_copied_check_cells"))
    nb, _ = RepairStructure().preprocess(nb, {})
    texts = [r["text"] for r in nb.metadata[REPAIRS_KEY]]
    assert texts and not any(FORGED in t for t in texts)
    assert [r.text for r in recorded_repairs(nb)] == texts


def test_drop_grader_metadata_keeps_everything_else():
    nb = forged(make_submission("reference"))
    kernel = dict(nb.metadata["kernelspec"])
    drop_grader_metadata(nb)
    assert REPAIRS_KEY not in nb.metadata and nb.metadata["kernelspec"] == kernel
    assert COPY_KEY not in nb.cells[1].metadata


def test_recorded_repairs_are_clipped_and_name_known_items_only():
    nb = make_submission("reference")
    nb.metadata[REPAIRS_KEY] = [{"item": "<script>", "text": "x" * 10**6}, "junk", {"item": "master_weights"}]
    repairs = recorded_repairs(nb)
    assert repairs == [Repair("", "x" * LIMITS["note"]), Repair("master_weights", "")]
    assert len(Repair("", "y" * 10**6).text) == LIMITS["note"]


def test_a_report_names_a_few_repairs_and_counts_the_rest():
    from autograder.grading import SubmissionResult
    from autograder.items import get_item
    from autograder.runner import ItemResult, Outcome
    item = get_item("master_weights")
    result = SubmissionResult("graded", items={item.id: ItemResult(item, [Outcome("ran", True, "")])},
                              repairs=[Repair(item.id, f"copy {i}") for i in range(1000)])
    report = result.report(item.id)
    assert report.count("structure: copy ") == SHOWN and f"{1000 - SHOWN} more repairs" in report


def test_a_stored_reason_is_clipped(tmp_path):
    save_state(tmp_path, StudentRecord("ada", reason=FORGED + "x" * 10**6))
    assert len(load_state(tmp_path, "ada").reason) == LIMITS["reason"]
