"""autograder.instructor.announce: the feedback page's notes say when the submission counts as submitted, once,
and nothing is added without a due date."""
import nbformat

from autograder.instructor.announce import AnnounceSubmission
from autograder.instructor.page_summary import NOTES
from autograder.instructor.sink import ResultSink
from autograder.text import submission_line
from tests.helpers import STUDENT_NB


def resources(student="ada"):
    return {"nbgrader": {"student": student, "notebook": "lesson20"}}


def test_the_note_is_on_the_page_once():
    sink, nb = ResultSink(), nbformat.read(str(STUDENT_NB), as_version=4)
    cells = len(nb.cells)
    block = {"time": "2026-12-10T06:03:00Z", "due": "2026-12-10T05:30:00Z", "late_seconds": 1980.0, "penalty": 1.0}
    sink.note(("ada", "lesson20"), submission_line(block))
    step, res = AnnounceSubmission(sink=sink), resources()
    nb, res = step.preprocess(nb, res)
    assert len(nb.cells) == cells  # the notebook is left as it is: the note is the page's
    assert res[NOTES] == ["Your submission counts as submitted at 2026-12-10 06:03:00 UTC, 33 min after your "
                          "due date (2026-12-10 05:30:00 UTC). Late penalty: 1 points off your total."]
    nb, res = step.preprocess(nb, res)  # taken: not added twice
    assert len(res[NOTES]) == 1


def test_without_a_due_date_nothing_is_said():
    sink, nb = ResultSink(), nbformat.read(str(STUDENT_NB), as_version=4)
    sink.note(("ada", "lesson20"), submission_line({"time": "2026-12-10T06:03:00Z", "due": None}))
    assert NOTES not in AnnounceSubmission(sink=sink).preprocess(nb, resources())[1]
