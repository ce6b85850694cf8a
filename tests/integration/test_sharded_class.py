"""A sharded class is one class: four students graded in two shards (`grade --shard I/2`) into one gradebook, then
`export --from` the shards into one folder, where every student's feedback page is, formgrader (nbgrader's own
API, as formgrader reads it, with that folder's nbgrader_config.py) lists the whole class, and nbgrader's
release_feedback releases every page. Cheap variants: three stubs and one reference."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from autograder.instructor.course import feedback_page
from autograder.instructor.gradebook import COURSE_ID
from autograder.instructor.staging import select_students
from autograder.items import ASSIGNMENT
from tests.graded_class import COURSE_ENV, grade, write_class
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB

pytestmark = pytest.mark.slow
SHARDS = 2

# formgrader's list of submissions, as its handlers ask nbgrader's API for it, from the folder it is started in
FORMGRADER_LIST = """
import json
from nbgrader.apps.api import NbGraderAPI
from nbgrader.apps.baseapp import NbGrader
from nbgrader.coursedir import CourseDirectory
app = NbGrader()
app.initialize([])
api = NbGraderAPI(CourseDirectory(config=app.config), config=app.config)
print(json.dumps({s["student"]: s["autograded"] for s in api.get_submissions("lesson20")}))
"""


def handed_in(student: str, notebook: Path) -> dict:
    """A submission as `nbgrader collect` leaves it: the notebook, its timestamp and its secret."""
    return {f"{ASSIGNMENT}/{ASSIGNMENT}.ipynb": notebook,
            f"{ASSIGNMENT}/timestamp.txt": "2026-01-15 09:30:00.000000 UTC",
            f"{ASSIGNMENT}/submission_secret.txt": f"secret-of-{student}"}


def autograder(*args, cwd=ROOT) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "autograder", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env=COURSE_ENV)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_a_class_graded_in_shards_is_one_class_after_export(tmp_path):
    students = {"ada": SOLUTION_NB, "bo": STUDENT_NB, "cy": STUDENT_NB, "di": STUDENT_NB}
    submitted = write_class(tmp_path / "submitted", {s: handed_in(s, nb) for s, nb in students.items()})
    shards = [select_students(submitted, shard=(i, SHARDS)) for i in range(1, SHARDS + 1)]
    assert all(shards) and sorted(sum(shards, [])) == sorted(students), shards  # both shards hold someone
    db_url = f"sqlite:///{tmp_path / 'class.db'}"  # the one gradebook (PostgreSQL on a cluster)
    for i in range(1, SHARDS + 1):
        grade(submitted, tmp_path / f"shard-{i}", "--shard", f"{i}/{SHARDS}", "--db-url", db_url)
    out = tmp_path / "all"
    done = autograder("export", "--out", out, "--db-url", db_url, "--from",
                      *(tmp_path / f"shard-{i}" for i in range(1, SHARDS + 1)))
    assert f"Copied {len(students)} students'" in done.stdout, done.stdout

    grades = json.loads((out / "grades.json").read_text())["students"]
    assert set(grades) == set(students) and grades["ada"]["total"] > 0 and grades["bo"]["total"] == 0
    for student in students:  # each page is the shard's, as export wrote it again
        page = feedback_page(out, student)
        shard = next(i for i, names in enumerate(shards, 1) if student in names)
        assert page.read_bytes() == feedback_page(tmp_path / f"shard-{shard}", student).read_bytes(), student
        assert (page.parent / "submission_secret.txt").read_text() == f"secret-of-{student}"

    config = (out / "nbgrader_config.py").read_text()
    assert repr(db_url) in config and "shard-" not in config
    listed = subprocess.run([sys.executable, "-c", FORMGRADER_LIST], cwd=out, capture_output=True, text=True,
                            timeout=300, env=COURSE_ENV)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert json.loads(listed.stdout.splitlines()[-1]) == {s: True for s in students}  # every one, autograded

    exchange = tmp_path / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)  # as nbgrader asks of an exchange
    released = subprocess.run([sys.executable, "-m", "nbgrader", "release_feedback", ASSIGNMENT,
                               f"--Exchange.root={exchange}", "--GuardedReleaseFeedback.allow_reference_leak=True"],
                              cwd=out, capture_output=True, text=True, timeout=300, env=COURSE_ENV)
    assert released.returncode == 0, released.stdout + released.stderr
    pages = sorted(p.read_bytes() for p in (exchange / COURSE_ID / "feedback").glob("*.html"))
    assert pages == sorted(feedback_page(out, s).read_bytes() for s in students)
