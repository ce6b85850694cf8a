"""autograder.instructor.repair: RepairStructure starts from an empty record (only the grader writes grader
metadata) and records the repairs it made, which the grader reads back."""
from autograder.cells import COPY_KEY
from autograder.structure import REPAIRS_KEY, recorded_repairs
from autograder.instructor.repair import RepairStructure
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
