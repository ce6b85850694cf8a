"""Plain `nbgrader autograde`, with the repository's nbgrader_config.py, scores through GradeOutOfProcess:
edited or deleted test cells change nothing, and warnings from correct code cost nothing."""
import os
import subprocess
import sys

import nbformat
import pytest
from nbgrader.api import Gradebook

from autograder.items import AUTO_ITEMS
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB, read

pytestmark = pytest.mark.slow
FULL = {i.id: float(i.points) for i in AUTO_ITEMS}


def edited():
    nb = read(SOLUTION_NB)
    for cell in nb.cells:
        if cell.source.startswith('check("accumulate_gradients"'):
            cell.source = "print('all good')"          # a student rewrote the check cell
        if cell.source.startswith('check("q5_answer"'):
            cell.source = "99"                          # ...or made it return a big score
    return nb


def deleted():
    nb = read(SOLUTION_NB)
    nb.cells = [c for c in nb.cells if not c.source.startswith(('check("master_weights"', 'check("q5_answer"'))]
    return nb


def noisy():
    nb = read(SOLUTION_NB)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "underflow_fraction_solution":
            cell.source = ("import sys, warnings\nprint('debug output', file=sys.stderr)\n"
                           "warnings.warn('a harmless warning')\n" + cell.source.replace(
                               "    nonzero = values != 0", "    warnings.warn('inside');  nonzero = values != 0"))
    return nb


def nbgrader(*args, tmp):
    cmd = [sys.executable, "-m", "nbgrader", *args, f"--CourseDirectory.db_url=sqlite:///{tmp / 'gb.db'}",
           f"--CourseDirectory.release_directory={tmp / 'release'}",
           f"--CourseDirectory.submitted_directory={tmp / 'submitted'}",
           f"--CourseDirectory.autograded_directory={tmp / 'autograded'}"]
    # nbgrader creates a new gradebook by calling `alembic`, which lives next to this interpreter
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("course")
    students = {"edited": edited(), "deleted": deleted(), "noisy": noisy(), "stub": read(STUDENT_NB)}
    for name, nb in students.items():
        folder = tmp / "submitted" / name / "lesson20"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "lesson20.ipynb")
    nbgrader("generate_assignment", "lesson20", "--force", tmp=tmp)
    nbgrader("autograde", "lesson20", tmp=tmp)
    with Gradebook(f"sqlite:///{tmp / 'gb.db'}") as gb:
        return {name: {g.name: g.score for g in gb.find_submission_notebook("lesson20", "lesson20", name).grades
                       if g.name in FULL} for name in students}


@pytest.mark.parametrize("student", ["edited", "deleted", "noisy"])
def test_correct_code_keeps_full_marks(scores, student):
    assert scores[student] == FULL


def test_untouched_stubs_score_zero(scores):
    assert scores["stub"] == {i: 0.0 for i in FULL}
