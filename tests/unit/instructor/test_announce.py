"""autograder.instructor.announce: the feedback page opens with the note the pipeline left for it, and nothing
is added without one."""
import nbformat

from autograder.instructor.announce import AnnounceSubmission
from autograder.instructor.sink import ResultSink
from autograder.text import submission_line
from tests.helpers import STUDENT_NB


def resources(student="ada"):
    return {"nbgrader": {"student": student, "notebook": "lesson20"}}


def test_the_note_opens_the_page_once():
    sink, nb = ResultSink(), nbformat.read(str(STUDENT_NB), as_version=4)
    cells = len(nb.cells)
    block = {"time": "2026-12-10T06:03:00Z", "due": "2026-12-10T05:30:00Z", "late_seconds": 1980.0, "penalty": 1.0}
    sink.note(("ada", "lesson20"), submission_line(block))
    step = AnnounceSubmission(sink=sink)
    nb, _ = step.preprocess(nb, resources())
    assert len(nb.cells) == cells + 1
    assert nb.cells[0].source == ("Your submission counts as submitted at 2026-12-10 06:03:00 UTC, 33 min after your "
                                  "due date (2026-12-10 05:30:00 UTC). Late penalty: 1 points off your total.")
    nb, _ = step.preprocess(nb, resources())  # taken: not added twice
    assert len(nb.cells) == cells + 1


def test_without_a_due_date_nothing_is_said():
    sink, nb = ResultSink(), nbformat.read(str(STUDENT_NB), as_version=4)
    sink.note(("ada", "lesson20"), submission_line({"time": "2026-12-10T06:03:00Z", "due": None}))
    assert len(AnnounceSubmission(sink=sink).preprocess(nb, resources())[0].cells) == len(nb.cells)
