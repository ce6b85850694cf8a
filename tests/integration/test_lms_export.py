"""`python -m autograder export --format canvas|moodle --roster FILE` on the graded class (tests/graded_class.py).

The LMS files are read back as Canvas and Moodle read them (tests/unit/instructor/test_lms.py) and must carry
the totals of the grades.json that the same `export` wrote; `--format csv` (the default) writes grades.csv as
it always did."""
import csv
import io
import json
import subprocess
import sys

import pytest

from autograder.instructor.staging import usable_id
from autograder.items import ASSIGNMENT
from autograder.instructor.messages import refused_id_cell
from tests.helpers import ROOT
from tests.unit.instructor.test_lms import canvas_rows, moodle_rows

pytestmark = pytest.mark.slow
ROSTER = ("student_id,Student,SIS User ID,SIS Login ID,username,email\n"
          "ref,Ref,S1,ref@uni.edu,ref1,ref@uni.edu\n"
          "stub,Stub,S2,,stub2,stub@uni.edu\n"
          "cy,Cy,,cy@uni.edu,cy3,cy@uni.edu\n"
          "dee,Dee,S4,dee@uni.edu,dee4,dee@uni.edu\n"
          "zed,Zed,S9,zed@uni.edu,zed9,zed@uni.edu\n")  # enrolled, never submitted


def export(out, *extra):
    return subprocess.run([sys.executable, "-m", "autograder", "export", "--out", str(out), "--no-feedback", *extra],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_canvas_and_moodle_files_carry_the_exported_totals_and_list_who_is_missing(graded_copy, tmp_path):
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER)
    done = export(graded_copy, "--format", "canvas", "--roster", str(roster))
    assert done.returncode == 0, done.stdout + done.stderr
    students = json.loads((graded_copy / "grades.json").read_text())["students"]
    taken = canvas_rows((graded_copy / "canvas.csv").read_text())
    totals = {s["sis_user_id"] or s["sis_login_id"]: float(s["grades"][ASSIGNMENT]) for s in taken["students"]}
    assert totals == {"S1": students["ref"]["total"], "S2": students["stub"]["total"],
                      "cy@uni.edu": students["cy"]["total"], "S4": students["dee"]["total"]}
    listed = {row[0]: row[2] for row in csv.reader(io.StringIO((graded_copy / "canvas-unmatched.csv").read_text()))}
    assert "no submission" in listed["zed"]
    enrolled = {line.split(",")[0] for line in ROSTER.splitlines()[1:]}
    for student in set(students) - enrolled:  # a refused folder name is listed quoted (refused_id_cell)
        assert "not in the roster" in listed[student if usable_id(student) else refused_id_cell(student)]
    assert "'zed' (S9): in the roster, but no submission" in done.stdout, done.stdout
    assert "'ada': graded, but not in the roster" in done.stdout, done.stdout

    done = export(graded_copy, "--format", "moodle", "--roster", str(roster))
    assert done.returncode == 0, done.stdout + done.stderr
    stored = moodle_rows((graded_copy / "moodle.csv").read_text(), "Username", {"ref1", "stub2", "cy3", "dee4"},
                         {ASSIGNMENT: "lesson", f"Feedback: {ASSIGNMENT}": "feedback"})
    assert {u: v["lesson"] for u, v in stored.items()} == {
        "ref1": students["ref"]["total"], "stub2": students["stub"]["total"], "cy3": students["cy"]["total"],
        "dee4": students["dee"]["total"]}


def test_the_default_format_writes_grades_csv_as_before_and_a_bad_roster_writes_nothing(graded_copy, tmp_path):
    before = (graded_copy / "grades.csv").read_bytes()
    done = export(graded_copy, "--format", "csv")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (graded_copy / "grades.csv").read_bytes() == before
    assert not list(graded_copy.glob("canvas*.csv")) and not list(graded_copy.glob("moodle*.csv"))
    roster = tmp_path / "roster.csv"
    roster.write_text("name,sis_user_id\nref,S1\n")
    (graded_copy / "grades.json").unlink()
    done = export(graded_copy, "--format", "canvas", "--roster", str(roster))
    assert done.returncode != 0 and "needs student_id" in done.stderr and "nothing was written" in done.stderr
    assert not (graded_copy / "grades.json").exists() and not (graded_copy / "canvas.csv").exists()
    done = export(graded_copy, "--roster", str(roster))
    assert done.returncode != 0 and "--format canvas or moodle" in done.stderr
