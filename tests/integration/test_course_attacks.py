"""The attacks on the course around the sandbox (issue 45), as Unix users through nbgrader's exchange, each held to
its outcome: the victim's grade unchanged, the true lateness, a clear reason, nothing readable or leaked.

One class, graded by an instructor who is not root: a victim (bob) and a student who submits under his name with
`--student`; a student who writes a folder into inbound/ by hand, after the due date, with a forged timestamp.txt;
one whose hand-made folder has no submission_secret.txt; one whose submission is links to the instructor's
solutions and quiz key; a folder named with a 243-character id; and a student who resubmits with a blank written
answer after it was graded by hand. Then the checklist again from a second checkout of the course, run with the
first checkout's package, which must use its own solutions, lessons and gradebook.
"""
import csv
import io
import json
import re
import secrets
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.items import ASSIGNMENT, AUTO_ITEMS
from autograder.instructor.arrival import NBGRADER_FORMAT
from autograder.instructor.settings import iso
from tests.helpers import SOLUTION_NB, read, solution_regions
from tests.integration.unix_users import PYTHON, NEEDS_USERS, Users, checkout, edited, set_course

pytestmark = [pytest.mark.slow, *NEEDS_USERS]
BUGGY = "underflow_threshold"
FULL = {i.id: float(i.points) for i in AUTO_ITEMS}
GRADE = ["grade", "submitted", "--out", "grading", "--jobs", "2", "--quiet", "--allow-weaker-isolation"]
NOTEBOOK = f"{ASSIGNMENT}.ipynb"
SOLUTION_LINES = [line.strip() for _, lines in solution_regions(read(SOLUTION_NB)) for line in lines
                  if len(line.strip()) > 20]


def stamp(when: datetime) -> str:
    return when.astimezone(timezone.utc).strftime(NBGRADER_FORMAT)


def hand_made(users, student, inbound, notebook: Path, name_time: str, timestamp: str = None, secret=True,
              links: dict = None, claimed: str = None):
    """A folder `student` writes into inbound/ by hand (shell commands run as them)."""
    folder = inbound / f"{claimed or student}+{ASSIGNMENT}+{name_time}+{secrets.token_hex(4)}"
    script = [f'mkdir "{folder}"']
    if links is None:
        script.append(f'cp "{notebook}" "{folder}/{NOTEBOOK}"')
    for name, target in (links or {}).items():
        script.append(f'ln -s "{target}" "{folder}/{name}"')
    if timestamp is not None:
        script.append(f'printf "%s" "{timestamp}" > "{folder}/timestamp.txt"')
    if secret:
        script.append(f'printf "%s" "{secrets.token_hex(64)}" > "{folder}/submission_secret.txt"')
    users.run(student, "sh", "-c", " && ".join(script))
    return folder


def grade_and_rows(users, teacher, course) -> dict:
    users.autograder(teacher, "collect", cwd=course)
    users.autograder(teacher, *GRADE, cwd=course)
    return json.loads((course / "grading" / "grades.json").read_text())


def score_by_hand(users, teacher, course, student, scores: dict):
    """Manual scores given to written answers, as formgrader saves them."""
    users.run(teacher, PYTHON, "-c", (
        "import json, sys\nfrom nbgrader.api import Gradebook\n"
        "with Gradebook('sqlite:///grading/gradebook.db', course_id='lesson20') as gb:\n"
        "    for grade_id, score in json.loads(sys.argv[2]).items():\n"
        "        grade = gb.find_grade(grade_id, 'lesson20', 'lesson20', sys.argv[1])\n"
        "        grade.manual_score, grade.needs_manual_grade = score, False\n"
        "    gb.db.commit()\n"), student, json.dumps(scores), cwd=course)


def needs_manual_grade(users, teacher, course, student) -> dict:
    done = users.run(teacher, PYTHON, "-c", (
        "import json, sys\nfrom nbgrader.api import Gradebook\n"
        "with Gradebook('sqlite:///grading/gradebook.db', course_id='lesson20') as gb:\n"
        "    nb = gb.find_submission_notebook('lesson20', 'lesson20', sys.argv[1])\n"
        "    print(json.dumps({g.name: g.needs_manual_grade for g in nb.grades if g.name.startswith('practice')}))\n"),
        student, cwd=course)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def world():
    base = Path(tempfile.mkdtemp(prefix="l20-attacks-"))
    base.chmod(0o755)
    (base / "home").mkdir(mode=0o755)
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)
    users = Users(base)
    try:
        yield users, exchange
    finally:
        users.remove()
        shutil.rmtree(base, ignore_errors=True)


def test_each_attack_on_the_course_earns_nothing(world):
    users, exchange = world
    teacher = users.add("instructor", exchange)
    bob, mallory, eve, frank, gina, alice = (users.add("student", exchange) for _ in range(6))
    course = checkout(users, teacher, users.home(teacher) / "course", fresh_modes=False)
    users.env[teacher]["PYTHONPATH"] = str(course)
    now = datetime.now(timezone.utc)
    due = now - timedelta(minutes=30)  # eve is past it; the others have a day more
    set_course(course, teacher, due=iso(due), late_penalty_points=1.0,
               extensions={s: iso(now + timedelta(days=1)) for s in (bob, mallory, frank, gina, alice)})
    users.autograder(teacher, "release", cwd=course)
    users.nbgrader(teacher, "release_assignment", ASSIGNMENT, cwd=course)
    inbound = exchange / ASSIGNMENT / "inbound"
    for student in (bob, mallory, eve, frank, gina, alice):
        users.nbgrader(student, "fetch_assignment", ASSIGNMENT)
    fetched = {s: users.home(s) / ASSIGNMENT / NOTEBOOK for s in (bob, mallory, eve, frank, gina, alice)}

    # bob's own work, with a mistake; mallory submits an empty notebook under bob's name
    users.run(bob, "sh", "-c", 'cat > "$0"', fetched[bob], input=edited(fetched[bob], BUGGY))
    users.nbgrader(bob, "submit", ASSIGNMENT)
    users.nbgrader(mallory, "submit", ASSIGNMENT, f"--student={bob}")
    # eve writes a correct notebook into inbound/ by hand, now, after her due date: named 2099, timestamp.txt 05:10
    users.run(eve, "sh", "-c", 'cat > "$0"', fetched[eve], input=edited(fetched[eve], "reference"))
    hand_made(users, eve, inbound, fetched[eve], "2099-01-01 00:00:00.000000 UTC",
              timestamp=stamp(due - timedelta(minutes=20)))
    # frank's hand-made folder lacks submission_secret.txt
    users.run(frank, "sh", "-c", 'cat > "$0"', fetched[frank], input=edited(fetched[frank], "reference"))
    hand_made(users, frank, inbound, fetched[frank], stamp(now), timestamp=stamp(now), secret=False)
    # gina's is links to the instructor's solutions and quiz key
    hand_made(users, gina, inbound, fetched[gina], stamp(now), timestamp=stamp(now), links={
        NOTEBOOK: course / "solutions" / ASSIGNMENT / NOTEBOOK,
        "data.csv": course / "autograder" / "instructor" / "quiz_key.py"})
    # a folder whose id no file system, state folder or gradebook of the class can hold
    users.run(mallory, "sh", "-c", f'mkdir "{inbound}/{"a" * 243}+{ASSIGNMENT}+1"')
    # alice answers practice 1 and 2 in writing
    answers = {"practice_q1": "fp16 overflows above 65504 and loses updates below 2^-11 of a weight.",
               "practice_q2": "The fp32 masters keep the small updates that fp16 weights would round away."}
    users.run(alice, "sh", "-c", 'cat > "$0"', fetched[alice], input=edited(fetched[alice], "reference", answers))
    users.nbgrader(alice, "submit", ASSIGNMENT)

    doc = grade_and_rows(users, teacher, course)
    rows, out = doc["students"], course / "grading"

    # who submitted: bob's own work graded, mallory's set aside naming both accounts
    assert rows[bob]["status"] == "graded"
    assert rows[bob]["items"]["underflow_fraction"]["score"] < FULL["underflow_fraction"]  # his own mistake
    assert rows[bob]["items"]["static_loss_scaler"]["score"] == FULL["static_loss_scaler"]  # the rest his work's
    assert [(e["owner"], bob in e["reason"] and mallory in e["reason"]) for e in rows[bob]["set_aside"]] == [(mallory, True)]
    assert mallory not in rows
    # when: eve is late by the exchange's clock, however her name and timestamp.txt read
    eve_row = rows[eve]["submission"]
    assert 29 * 60 < eve_row["late_seconds"] < 40 * 60 and eve_row["penalty"] == 1.0
    assert any("timestamp.txt says" in f for f in eve_row["flags"])
    assert rows[eve]["total"] == pytest.approx(sum(FULL.values()) - 1.0)  # the late penalty: the memory is sampled
    # frank and gina: set aside with their reasons, nothing of theirs graded
    assert "submission_secret.txt" in rows[frank]["set_aside"][0]["reason"] and rows[frank]["total"] == 0
    assert "symbolic link" in rows[gina]["set_aside"][0]["reason"] and rows[gina]["total"] == 0
    # the 243-character id: set aside for the class, and the class graded
    assert any("cannot be held" in e["reason"] for e in doc["set_aside"])
    assert {r["status"] for r in rows.values()} <= {"graded", "failed"}
    table_text = (out / "grades.csv").read_text()
    assert re.search(rf"^{bob},.*set_aside", table_text, re.M) and re.search(rf"^{eve},.*time_flagged", table_text, re.M)
    report = (out / "report.html").read_text()
    assert "Submissions set aside" in report and mallory in report and "Late or uncertain submissions" in report

    # written answers: scored by hand, then alice resubmits with practice 1 blank
    score_by_hand(users, teacher, course, alice, {"practice_q1": 2.0, "practice_q2": 1.5})
    users.autograder(teacher, "export", "--out", "grading", cwd=course)
    assert json.loads((out / "grades.json").read_text())["students"][alice]["items"]["practice_q1"]["score"] == 2.0
    users.run(alice, "sh", "-c", 'cat > "$0"', fetched[alice],
              input=edited(fetched[alice], "reference", {**answers, "practice_q1": ""}))
    users.nbgrader(alice, "submit", ASSIGNMENT)
    grade_and_rows(users, teacher, course)
    users.autograder(teacher, "export", "--out", "grading", cwd=course)
    alice_row = json.loads((out / "grades.json").read_text())["students"][alice]
    assert "practice_q1" not in alice_row["items"] and alice_row["items"]["practice_q2"]["score"] == 1.5
    table = list(csv.DictReader(io.StringIO((out / "grades.csv").read_text())))
    assert next(r for r in table if r["student_id"] == alice)["practice_q1"] == ""  # the blank answer's old 2.0: gone
    assert needs_manual_grade(users, teacher, course, alice)["practice_q1"] is True       # formgrader: to grade
    assert needs_manual_grade(users, teacher, course, alice)["practice_q2"] is False
    users.autograder(teacher, "report", "--out", "grading", cwd=course)
    written = (out / "report.html").read_text().split('<section id="written">', 1)[1]
    assert alice in written.split("</section>")[0]

    # feedback: not before the last due date; with the option that names the cost, and never stopped by a folder
    early = users.autograder(teacher, "release_feedback", "--out", "grading", cwd=course, check=False)
    assert early.returncode != 0
    users.autograder(teacher, "release_feedback", "--out", "grading", "--allow-reference-leak", cwd=course)
    released = list((exchange / ASSIGNMENT / "feedback").glob("*.html"))
    assert len(released) == 3  # bob, eve, alice: frank's and gina's have no secret nbgrader made
    # gina's links led to the instructor's solutions: nothing of them is in her page (the 59 lines were, before)
    gina_page = (out / "feedback" / gina / ASSIGNMENT / NOTEBOOK.replace(".ipynb", ".html")).read_text()
    assert [line for line in SOLUTION_LINES if line in gina_page] == [] and len(SOLUTION_LINES) > 30
    for student in (bob, eve, frank, gina, alice):
        users.cannot_read(student, course / "solutions" / ASSIGNMENT / NOTEBOOK)
        users.cannot_read(student, course / "autograder" / "instructor" / "quiz_key.py")


def test_the_checklist_from_a_second_checkout_uses_that_checkouts_course(world):
    """The first checkout's package (PYTHONPATH), the second checkout's folder: release, release_assignment, collect,
    grade and export all use the second's solutions (whose Q5 answer differs), lessons and gradebook."""
    users, exchange = world
    teacher, student = users.add("instructor", exchange), users.add("student", exchange)
    first = checkout(users, teacher, users.home(teacher) / "first", fresh_modes=False)
    second = checkout(users, teacher, users.home(teacher) / "second", fresh_modes=False)
    users.env[teacher]["PYTHONPATH"] = str(first)
    notebook = second / "solutions" / ASSIGNMENT / NOTEBOOK
    notebook.write_text(notebook.read_text().replace('Q5_ANSWER = \\"c\\"', 'Q5_ANSWER = \\"a\\"').replace(
        "# Lesson 20", "# Lesson 20 (second checkout)", 1))
    shutil.chown(notebook, teacher, teacher)
    first_lessons = (first / "lessons" / ASSIGNMENT / NOTEBOOK).read_bytes()
    users.autograder(teacher, "release", cwd=second)
    users.nbgrader(teacher, "release_assignment", ASSIGNMENT, cwd=second)
    released = (exchange / ASSIGNMENT / "outbound" / ASSIGNMENT / NOTEBOOK).read_text()
    assert "(second checkout)" in released and (first / "lessons" / ASSIGNMENT / NOTEBOOK).read_bytes() == first_lessons
    assert not (first / "gradebook.db").exists()
    users.nbgrader(student, "fetch_assignment", ASSIGNMENT)
    fetched = users.home(student) / ASSIGNMENT / NOTEBOOK
    users.run(student, "sh", "-c", 'cat > "$0"', fetched,
              input=edited(fetched, "reference").replace('Q5_ANSWER = \\"c\\"', 'Q5_ANSWER = \\"a\\"'))
    users.nbgrader(student, "submit", ASSIGNMENT)
    rows = grade_and_rows(users, teacher, second)["students"]
    users.autograder(teacher, "export", "--out", "grading", cwd=second)
    assert rows[student]["items"]["q5_answer"]["score"] == FULL["q5_answer"]  # right by the second's reference
    assert (second / "submitted" / student).is_dir() and not (first / "submitted").exists()
    assert not (first / "grading").exists()
