"""autograder.instructor.progress: a bar on a terminal; elsewhere (a Slurm log, a pipe) one line per student."""
import io

from autograder.instructor.progress import AUTO_POINTS, Bar, Lines, Silent, progress_display
from autograder.instructor.state import StudentRecord


class Terminal(io.StringIO):
    def isatty(self):
        return True


def record(student, status="graded", scores=(), seconds=None, reason=""):
    items = {f"item{i}": {"score": s, "max_score": 2.0} for i, s in enumerate(scores)}
    return StudentRecord(student, "f", status, reason, items, seconds=seconds)


def test_a_terminal_gets_tqdms_bar():
    stream = Terminal()
    bar = progress_display(2, stream=stream)
    assert isinstance(bar, Bar)
    bar.update(record("ada", seconds=1.0))
    bar.close()
    assert "grading" in stream.getvalue() and "\r" in stream.getvalue()  # redrawn in place


def test_a_log_file_gets_one_line_per_student_with_status_score_and_seconds():
    stream = io.StringIO()
    lines = progress_display(12, stream=stream)
    assert isinstance(lines, Lines)
    lines.update(record("ada", scores=(2.0, 1.5), seconds=7.234))
    lines.update(record("bob\nsecond line\x1b[2J", "failed", seconds=0.01, reason="no lesson20/\nfolder"))
    lines.update(record("cy", "error", reason="its grading process died 2 times"))
    lines.close()
    assert stream.getvalue().splitlines() == [
        f"[ 1/12] ada: graded, 3.5 of {AUTO_POINTS:g} points, 7.2 s",
        f"[ 2/12] 'bob second line\\x1b[2J': failed, 0 of {AUTO_POINTS:g} points, 0.0 s (no lesson20/ folder)",
        f"[ 3/12] cy: error, 0 of {AUTO_POINTS:g} points, time not recorded (its grading process died 2 times)",
    ]
    assert "\r" not in stream.getvalue()


def test_quiet_shows_nothing():
    stream = Terminal()
    silent = progress_display(3, enabled=False, stream=stream)
    assert isinstance(silent, Silent)
    silent.update(record("ada"))
    silent.close()
    assert stream.getvalue() == ""
