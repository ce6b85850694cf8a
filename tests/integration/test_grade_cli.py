"""`python -m autograder grade` on a small class: the files it writes, resuming, re-running, subsets.

The class is tests/graded_class.py's, graded once for the run (the browser tests of the instructor's pages
read it too); that first run is killed part-way, so the grades every test reads come from a resumed run.
"""
import ast
import csv
import hashlib
import html
import io
import json
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import get_args

import pytest

from autograder.instructor.staging import parse_shard, select_students, usable_id
from autograder.instructor.state import StudentStatus
from autograder.items import ASSIGNMENT, AUTO_ITEMS, HIDDEN_DIR, ITEMS, check_file
from tests.graded_class import CLASS, EXPECTED, FULL, PARTIAL, counts, grade, grade_command, write_class
from tests.helpers import ROOT

pytestmark = pytest.mark.slow


def snapshot(out: Path) -> dict:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(out.rglob("*")) if p.is_file()}


@pytest.fixture
def graded(graded_class):
    """The shared class (tests/graded_class.py), graded into OUT by a run killed part-way, then resumed."""
    return graded_class


def test_an_interrupted_run_resumes_without_regrading(graded):
    before = graded["before"]
    assert 1 <= len(before) < len(CLASS), "the first run was not interrupted part-way"
    assert counts(graded["resumed"]) == (len(CLASS) - len(before), len(before))
    for name, data in before.items():  # students finished before the kill were not graded again
        assert (graded["out"] / "state" / name).read_bytes() == data
    assert graded["helpers"], "the grading processes were not seen"
    assert not graded["leftover"], f"processes outlived the killed run: {graded['leftover']}"


def test_grades_json_has_every_student_and_every_autograded_item(graded):
    doc = graded["grades"]
    assert set(doc) - {"set_aside"} == {"assignment", "students"}
    assert doc["assignment"] == ASSIGNMENT
    assert set(doc["students"]) == set(CLASS)
    auto = {item.id: float(item.points) for item in AUTO_ITEMS}
    for student, row in doc["students"].items():
        # the contract, plus the per-behaviour detail of the autograded items under its own key
        assert set(row) - {"rubric"} == {"status", "reason", "items", "total", "max_total", "submission"}, student
        assert set(row["submission"]) == {"time", "source", "due", "late_seconds", "penalty"}, student
        assert row["status"] in get_args(StudentStatus), student
        for grade_id, behaviours in row.get("rubric", {}).items():
            assert grade_id in auto
            assert sum(b["max_score"] for b in behaviours.values()) == pytest.approx(auto[grade_id])
        assert set(row["items"]) == set(auto), f"{student}: only autograded items before manual grading"
        for grade_id, entry in row["items"].items():
            assert set(entry) == {"score", "max_score"}
            assert isinstance(entry["score"], float) and entry["max_score"] == auto[grade_id]
        assert row["total"] == sum(e["score"] for e in row["items"].values())
        assert row["max_total"] == sum(auto.values()) == FULL
    ref = doc["students"]["ref"]["rubric"]
    assert set(ref) == set(auto), "the reference's rubric detail is missing"
    assert all(b["score"] == b["max_score"] for item in ref.values() for b in item.values())


@pytest.mark.parametrize("student", sorted(EXPECTED))
def test_each_submission_gets_a_status_and_a_reason(graded, student):
    status, total, words = EXPECTED[student]
    row = graded["grades"]["students"][student]
    if total is PARTIAL:  # a mistake in one exercise: some points, not all
        assert row["status"] == status and 0 < row["total"] < FULL, row
    else:
        assert (row["status"], row["total"]) == (status, total), row
    assert words in row["reason"]
    if total == FULL:
        assert all(e["score"] == e["max_score"] for e in row["items"].values())
    if status == "failed":
        assert all(e["score"] == 0.0 for e in row["items"].values())


def test_grades_csv_has_one_row_per_student_and_a_column_per_grade_id(graded):
    lines = list(csv.reader(io.StringIO((graded["out"] / "grades.csv").read_text())))
    assert lines[0] == ["student_id", *(item.id for item in ITEMS), "total", "review", "submitted_at", "late_seconds",
                        "penalty"]
    rows = {}
    for cells in lines[1:]:
        assert not cells[0].startswith(("=", "+", "-", "@", "\t", "\r")), cells[0]  # no formula in a spreadsheet
        student = cells[0] if usable_id(cells[0]) else ast.literal_eval(cells[0].rpartition(" (not graded")[0])
        rows[student] = cells
    assert set(rows) == set(CLASS) and len(lines) == len(CLASS) + 1
    for student, row in graded["grades"]["students"].items():
        cells, tail = rows[student][:-3], rows[student][-3:]
        assert float(cells[-2]) == row["total"] and cells[-1] == " ".join(sorted(row.get("review", {})))
        submission = row["submission"]  # no due date in the course: nothing late, no penalty
        assert tail == [submission["time"] or "", "0.0", "0.0"], (student, tail)
        for item, cell in zip(ITEMS, cells[1:-2]):
            expected = row["items"].get(item.id, {}).get("score", "")
            assert (float(cell) if cell else "") == expected, (student, item.id)


def _hidden_code_lines() -> set:
    """Lines of code of the hidden checks: not docstrings, comments or message text, which students may see."""
    lines = set()
    for path in (check_file(HIDDEN_DIR, item.id) for item in AUTO_ITEMS):
        source = path.read_text()
        text_only = set()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
                text_only.update(range(node.lineno, node.end_lineno + 1))
        for number, line in enumerate(source.splitlines(), 1):
            line = line.strip()
            if number not in text_only and len(line) >= 25 and not line.startswith(("#", '"', "'", 'f"', "f'")):
                lines.add(line)
    return lines


def test_feedback_for_every_student_without_the_hidden_checks(graded):
    feedback = graded["out"] / "feedback"
    secret = _hidden_code_lines()
    assert len(secret) > 20
    for student in CLASS:
        pages = list((feedback / student / ASSIGNMENT).glob("*.html"))
        assert pages, f"no feedback for {student}"
        text = html.unescape(re.sub(r"<[^>]+>", "", pages[0].read_text()))
        leaked = [line for line in secret if line in text]
        assert not leaked, f"hidden check source in {student}'s feedback: {leaked[:3]}"
        row = graded["grades"]["students"][student]
        if row["status"] == "graded":  # nbgrader's feedback, with our report in each test cell
            for grade_id, entry in row["items"].items():
                assert re.search(rf"{grade_id}: \d+ of \d+ behaviours pass, {entry['score']:g} of "
                                 rf"{entry['max_score']:g} points", text), (student, grade_id)
        else:
            assert "could not be graded" in text and EXPECTED[student][2] in text


def test_feedback_goes_back_through_nbgraders_exchange(graded, tmp_path):
    """`nbgrader release_feedback`, run in OUT, finds the feedback, the gradebook and the submission."""
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    exchange.chmod(0o777)  # as nbgrader asks of an exchange
    done = subprocess.run([sys.executable, "-m", "nbgrader", "release_feedback", ASSIGNMENT, "--student", "ref",
                           f"--Exchange.root={exchange}"], cwd=graded["out"], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    released = list((exchange / "lesson20" / "feedback").glob("*.html"))
    assert len(released) == 1 and "accumulate_gradients" in released[0].read_text()


def test_gradebook_holds_per_cell_scores(graded):
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(f"sqlite:///{graded['out'] / 'gradebook.db'}", course_id="lesson20") as gb:
        assert sorted(s.id for s in gb.students) == sorted(s for s in CLASS if usable_id(s))
        for student in ("ref", "stub", "renamed", "x-broken", "x-nofolder", "linked"):
            scores = {g.name: g.score for g in gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student).grades}
            for item in AUTO_ITEMS:
                expected = item.points if EXPECTED[student][1] == FULL else 0.0
                assert scores[item.id] == expected, (student, item.id)
        with pytest.raises(MissingEntry):
            gb.find_student("bad id")


def gradebook_scores(out: Path) -> dict:
    """{student: {autograded item: (its score in nbgrader's gradebook, formgrader's manual score)}}."""
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="lesson20") as gb:
        return {s.id: {g.name: (g.score, g.manual_score)
                       for g in gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, s.id).grades
                       if g.name in {i.id for i in AUTO_ITEMS}} for s in gb.students}


def test_export_from_the_records_is_the_gradebook_after_grading_and_after_an_override(graded, tmp_path):
    """grades.json's autograded scores come from the students' records; nbgrader's gradebook, which the test
    cells fed, holds the same, to its precision; an instructor's score in formgrader replaces the grader's,
    in grades.json and on the student's feedback page, which `export` writes again (a page it cannot make
    leaves the one there)."""
    for student, scores in gradebook_scores(graded["out"]).items():
        row = graded["grades"]["students"][student]["items"]
        for item, (score, _) in scores.items():
            assert abs(row[item]["score"] - score) < 1e-4, (student, item, row[item]["score"], score)
    out = tmp_path / "out"
    shutil.copytree(graded["out"], out)
    item = AUTO_ITEMS[0]
    pages = {s: out / "feedback" / s / ASSIGNMENT / f"{ASSIGNMENT}.html" for s in ("stub", "ref", "renamed")}
    before = {s: page.read_bytes() for s, page in pages.items()}
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{out / 'gradebook.db'}", course_id="lesson20") as gb:  # formgrader's override
        gb.find_grade(item.id, ASSIGNMENT, ASSIGNMENT, "stub").manual_score = item.points
        gb.find_grade(item.id, ASSIGNMENT, ASSIGNMENT, "renamed").manual_score = 0.0
        gb.db.commit()
    broken = out / "autograded" / "renamed" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    broken.chmod(0o644)
    broken.write_text(broken.read_text()[:2000])  # its page cannot be made again: nbgrader fails part-way
    from autograder.instructor.course import pages_lock
    from autograder.instructor.files import file_lock
    with file_lock(pages_lock(out), shared=True):  # a grade still running there: export waits for it, and says so
        proc = subprocess.Popen([sys.executable, "-m", "autograder", "export", "--out", str(out)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killer = threading.Timer(120, proc.kill)  # a hang fails the test instead of stalling it
        killer.daemon = True
        killer.start()
        first = proc.stderr.readline()
        assert "a `grade` is running in" in first and proc.poll() is None, first
    stdout, stderr = proc.communicate(timeout=120)
    killer.cancel()
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, first + stderr)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "renamed: no feedback:" in done.stderr and "page from `grade` is left as it was" in done.stderr
    graded_students = sum(r["status"] == "graded" for r in graded["grades"]["students"].values())
    assert f"feedback pages of {graded_students - 1} graded students again" in done.stdout  # all but renamed
    rows = json.loads((out / "grades.json").read_text())["students"]
    row = rows["stub"]
    assert row["items"][item.id]["score"] == gradebook_scores(out)["stub"][item.id][0] == item.points
    assert row["overridden"] == {item.id: graded["grades"]["students"]["stub"]["items"][item.id]["score"]}
    assert rows["renamed"]["items"][item.id]["score"] == 0.0  # the grades are written all the same
    # the page a student is handed back carries the score given by hand; the others' pages are as `grade` wrote them
    text = html.unescape(re.sub(r"<[^>]+>", "", pages["stub"].read_text()))
    assert f"{ASSIGNMENT}: {round(row['total'], 2):g} of " in text, text[:3000]
    assert re.search(rf"{re.escape(item.title)}\s*{item.points:g} / {item.points:g}", text)  # its summary row
    # ref's page, made again with nothing new, is the one `grade` wrote; renamed's, which failed, is left
    assert pages["ref"].read_bytes() == before["ref"] and pages["renamed"].read_bytes() == before["renamed"]
    assert not list(out.glob(".feedback-*")), "the folder the pages were made in is left behind"
    pages["stub"].write_text("as the instructor left it")
    done = subprocess.run([sys.executable, "-m", "autograder", "export", "--out", str(out), "--no-feedback"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "feedback pages" not in done.stdout, done.stdout + done.stderr
    assert pages["stub"].read_text() == "as the instructor left it"


def test_running_again_changes_nothing(graded):
    out = graded["out"]
    before = snapshot(out)
    output = grade(graded["submitted"], out, "--jobs", "2")
    assert counts(output) == (0, len(CLASS))
    assert snapshot(out) == before


def test_a_resubmission_is_regraded_and_old_scores_do_not_survive(graded, tmp_path):
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    shutil.copytree(graded["submitted"], submitted, symlinks=True)
    shutil.copytree(graded["out"], out)
    (submitted / "ref" / "lesson20" / "lesson20.ipynb").write_text("{ not a notebook")
    output = grade(submitted, out, "--jobs", "1")
    assert counts(output) == (1, len(CLASS) - 1)
    row = json.loads((out / "grades.json").read_text())["students"]["ref"]
    assert (row["status"], row["total"]) == ("failed", 0.0)
    assert "could not be graded" in (out / "feedback" / "ref" / ASSIGNMENT / "lesson20.html").read_text()
    assert not (out / "autograded" / "ref").exists()


def test_students_and_shards_select_the_right_subsets(graded, tmp_path):
    submitted = graded["submitted"]
    assert select_students(submitted, ["x-*"]) == ["x-broken", "x-nofolder"]
    assert select_students(submitted, ["r*", "bad*"]) == ["bad id", "ref", "renamed"]
    shards = [select_students(submitted, shard=(i, 3)) for i in (1, 2, 3)]
    assert sorted(sum(shards, [])) == sorted(CLASS), "shards must partition the class"
    with pytest.raises(ValueError):
        parse_shard("0/2")
    # through the command line, on the cheap (unreadable) submissions: a proper subset of those
    picked = ["x-*", "bad*"]
    index, count = next((i, n) for n in (2, 3, 4, 5) for i in range(1, n + 1)
                        if 0 < len(select_students(submitted, picked, (i, n))) < 3)
    expected = select_students(submitted, picked, (index, count))
    out = tmp_path / "out"
    output = grade(submitted, out, "--students", *picked, "--shard", f"{index}/{count}")
    assert counts(output) == (len(expected), 0)
    assert sorted(json.loads((out / "grades.json").read_text())["students"]) == expected
    assert sorted(p.stem for p in (out / "state").glob("*.json")) == expected
    bad = subprocess.run(grade_command(submitted, out, "--shard", "3/2"), capture_output=True, text=True)
    assert bad.returncode != 0 and "--shard takes i/n" in bad.stderr


def test_a_run_whose_output_is_not_a_terminal_prints_one_line_per_student_and_the_reports_path(tmp_path):
    """As in a Slurm job's log: no bar redrawn with carriage returns, but one line per finished student with
    its status, score and seconds; and at the end, where the class report is."""
    students = {name: CLASS[name] for name in ("stub", "x-broken", "bad id")}
    submitted, out = write_class(tmp_path / "submitted", students), tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submitted), "--out", str(out),
                           "--jobs", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600)  # pipes: no TTY
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "\r" not in proc.stderr and "Warning" not in proc.stderr  # nothing but the log's own lines
    line = re.compile(r"\[(\d)/3\] (.+?): (\w+), ([\d.]+) of (\d+) points, ([\d.]+) s(?: \((.+)\))?$")
    seen = {}
    for text in proc.stderr.splitlines():
        found = line.match(text)
        if found:
            done, student, status, score, points, seconds, reason = found.groups()
            seen[student] = (int(done), status, float(score), float(points), float(seconds), reason or "")
    assert sorted(seen) == sorted(students), proc.stderr
    assert sorted(done for done, *_ in seen.values()) == [1, 2, 3]
    grades = json.loads((out / "grades.json").read_text())["students"]
    for student, (_, status, score, points, _seconds, reason) in seen.items():
        row = grades[student]
        assert (status, score, points) == (row["status"], row["total"], FULL), student
        assert EXPECTED[student][2] in reason and (reason == "") == (status == "graded"), student
    assert seen["stub"][4] > 1 and seen["x-broken"][4] < 1  # the stub ran in the sandbox; the broken one did not
    assert f"Class report: {out / 'report.html'}" in proc.stdout
    assert "bad id" in (out / "report.html").read_text()


def test_a_garbage_or_missing_timestamp_never_fails_a_correct_notebook(tmp_path):
    """Issue 44: a garbage timestamp.txt beside a correct notebook failed it, 0/14, with `AttributeError:
    'CourseDirectory' object has no attribute 'fail'`; the time that counts is staged in its place."""
    from tests.submissions import write_class as write_variants
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    write_variants(submitted, ["reference", "reference", "reference"], ["garbage", "none", "binary"])
    (submitted / "garbage" / ASSIGNMENT / "timestamp.txt").write_text("not a time at all")
    (submitted / "binary" / ASSIGNMENT / "timestamp.txt").write_bytes(b"\xff\xfe\x00" * 100)
    grade(submitted, out, "--jobs", "2")
    rows = json.loads((out / "grades.json").read_text())["students"]
    assert {s: (r["status"], r["total"]) for s, r in rows.items()} == dict.fromkeys(rows, ("graded", FULL))
    assert sorted(rows) == ["binary", "garbage", "none"]
    assert all(r["submission"]["source"].startswith("when the submission was collected") for r in rows.values())
