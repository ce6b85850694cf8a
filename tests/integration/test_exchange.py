"""docs/instructors.md's instructor checklist as a course runs it: an instructor who is not root and four students, each a
Unix user, each command run by the user who would run it, through nbgrader's exchange folder.

release -> fetch -> edit -> submit -> collect -> grade (refused: protections, then files others can read; then
with --allow-weaker-isolation) -> a manual grade -> export -> release_feedback (refused before the due date) ->
fetch_feedback; then each student holds their own feedback and can read nothing the instructor keeps.
"""
import json
import re
import shutil
import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from autograder.items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from autograder.instructor.settings import iso
from tests.helpers import STUDENT_NB, read
from tests.integration.unix_users import NEEDS_USERS, PYTHON, Users, checkout, edited, mode, set_course, uid

pytestmark = [pytest.mark.slow, *NEEDS_USERS]
BUGGY = "underflow_threshold"  # a mistake in underflow_fraction only
KEEPS_GRAPHS = "accumulate_one_backward_of_summed_losses"  # 13/14: its measured memory, as root or not
MANUAL_ID, MANUAL_SCORE = "practice_q1", 1.5
FULL = {i.id: float(i.points) for i in AUTO_ITEMS}


def code_of(path: Path) -> list:
    return [c.source for c in read(path).cells if c.cell_type == "code"]


def fix_commands(refusal: str) -> list:
    """The commands a refusal of `grade` names, one per exposed path."""
    return [line.split("Fix: ", 1)[1] for line in refusal.splitlines() if line.strip().startswith("Fix: ")]


def test_exchange_round_trip():
    base = Path(tempfile.mkdtemp(prefix="l20-exchange-"))
    base.chmod(0o755)
    (base / "home").mkdir(mode=0o755)
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # nbgrader's exchange: everyone may write, nobody may remove what others made
    users = Users(base)
    try:
        teacher = users.add("instructor", exchange, home_mode="0755")  # Debian's default: a home others can enter
        right, wrong, idle, graphs = (users.add("student", exchange) for _ in range(4))
        students = {right: "reference", wrong: BUGGY, idle: None, graphs: KEEPS_GRAPHS}
        for name in students:
            assert mode(users.home(name)) == 0o700, f"{name}'s home is not private"

        # the course, as the instructor's own fresh checkout (755/644), its due date in course.toml
        course = checkout(users, teacher, users.home(teacher) / "course")
        users.env[teacher]["PYTHONPATH"] = str(course)  # this checkout's autograder, in every folder
        due = datetime.now(timezone.utc) + timedelta(days=1)
        set_course(course, teacher, due=iso(due))

        # 1. the instructor generates the student notebook and releases it
        users.autograder(teacher, "release", cwd=course)
        users.nbgrader(teacher, "release_assignment", ASSIGNMENT, cwd=course)
        course_x = exchange / ASSIGNMENT
        released = course_x / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert released.read_bytes() == STUDENT_NB.read_bytes()
        assert mode(course_x / "inbound") == 0o2733  # students may drop a submission in, not list others'
        assert course_x.stat().st_uid == (course_x / "inbound").stat().st_uid == uid(teacher)

        # 2. each student fetches it, works on it (or not), and submits
        for student, variant in students.items():
            users.nbgrader(student, "fetch_assignment", ASSIGNMENT)
            fetched = users.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            assert fetched.read_bytes() == STUDENT_NB.read_bytes() and fetched.stat().st_uid == uid(student)
            if variant:
                users.run(student, "sh", "-c", 'cat > "$0"', fetched, input=edited(fetched, variant))
            users.nbgrader(student, "submit", ASSIGNMENT)
        inbound = sorted(p.name.split("+")[0] for p in (course_x / "inbound").iterdir())
        assert inbound == sorted(students)

        # 3. the instructor collects through the course package: each student's own latest submission
        users.autograder(teacher, "collect", cwd=course)
        manifest = json.loads((course / "submitted" / ".collect.json").read_text())
        assert {s: e["owner"] for s, e in manifest["students"].items()} == {s: s for s in students}
        for student in students:
            collected = course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            assert code_of(collected) == code_of(users.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        assert mode(course / "submitted") == 0o700

        # 4. grade, as the instructor (not root): it says which protections it has, and refuses without them
        grade = ["grade", "submitted", "--out", "grading", "--jobs", "2", "--quiet"]
        refused = users.autograder(teacher, *grade, cwd=course, check=False)
        assert refused.returncode != 0 and "NO  a memory cgroup per sandbox" in refused.stderr
        assert "--allow-weaker-isolation" in refused.stderr and "memory_cgroup" in refused.stderr
        # ... then, told to go on, it refuses while others can read the solutions, naming each path and its fix
        refused = users.autograder(teacher, *grade, "--allow-weaker-isolation", cwd=course, check=False)
        assert refused.returncode != 0 and str(course / "solutions") in refused.stderr
        for command in fix_commands(refused.stderr):
            users.run(teacher, "sh", "-c", command, cwd=course)
        users.autograder(teacher, *grade, "--allow-weaker-isolation", cwd=course)
        out = course / "grading"
        assert mode(out) == 0o700
        rows = json.loads((out / "grades.json").read_text())["students"]
        assert sorted(rows) == sorted(students)
        assert {s: r["status"] for s, r in rows.items()} == dict.fromkeys(students, "graded")
        scores = {s: {i: e["score"] for i, e in r["items"].items()} for s, r in rows.items()}
        # without a memory cgroup the sandbox's processes' memory is sampled: every behaviour is checked
        assert scores[right] == FULL and not rows[right].get("not_checked")
        assert rows[right]["weaker_isolation"] == ["memory_cgroup", "sandbox_uid", "limits"]
        assert scores[wrong]["underflow_fraction"] < FULL["underflow_fraction"]
        assert {i: v for i, v in scores[wrong].items() if i != "underflow_fraction"} == \
            {i: v for i, v in FULL.items() if i != "underflow_fraction"}
        assert scores[idle] == dict.fromkeys(FULL, 0.0)
        # code that keeps every micro-batch's graph alive loses the memory behaviour, as graded by root (14/14 once)
        assert scores[graphs]["accumulate_gradients"] < FULL["accumulate_gradients"]
        assert {i: v for i, v in scores[graphs].items() if i != "accumulate_gradients"} == \
            {i: v for i, v in FULL.items() if i != "accumulate_gradients"}
        for student in (right, wrong):  # on time: the exchange's own time, before the due date
            assert rows[student]["submission"]["late_seconds"] == 0 and "exchange" in rows[student]["submission"]["source"]
        csv_row = next(line for line in (out / "grades.csv").read_text().splitlines() if line.startswith(right))
        assert "weaker_isolation" in csv_row and "not_checked" not in csv_row
        assert "Every behaviour was checked" in (out / "report.html").read_text()  # the report's not-checked section

        # 5. a written answer graded by hand, as formgrader saves it, then the export
        users.run(teacher, PYTHON, "-c", (
            "import sys\nfrom nbgrader.api import Gradebook\n"
            "with Gradebook('sqlite:///grading/gradebook.db', course_id=sys.argv[1]) as gb:\n"
            "    grade = gb.find_grade(sys.argv[2], sys.argv[1], sys.argv[1], sys.argv[3])\n"
            "    grade.manual_score, grade.needs_manual_grade = float(sys.argv[4]), False\n    gb.db.commit()\n"),
            ASSIGNMENT, MANUAL_ID, right, MANUAL_SCORE, cwd=course)
        users.autograder(teacher, "export", "--out", "grading", cwd=course)
        rows = json.loads((out / "grades.json").read_text())["students"]
        assert rows[right]["items"][MANUAL_ID]["score"] == MANUAL_SCORE
        assert rows[right]["total"] == pytest.approx(sum(FULL.values()) + MANUAL_SCORE)
        assert MANUAL_ID not in rows[wrong]["items"]

        # 6. feedback goes back through the exchange only once the due date has passed
        early = users.autograder(teacher, "release_feedback", "--out", "grading", cwd=course, check=False)
        assert early.returncode != 0 and "--allow-reference-leak" in early.stderr + early.stdout
        assert not (course_x / "feedback").exists() or not list((course_x / "feedback").glob("*.html"))
        set_course(course, teacher, due=iso(datetime.now(timezone.utc) - timedelta(minutes=1)))
        users.autograder(teacher, "release_feedback", "--out", "grading", cwd=course)
        assert len(list((course_x / "feedback").glob("*.html"))) == len(students)
        assert mode(course_x / "feedback") == 0o711  # reachable by a page's name, not listable
        pages = {}
        for student in students:
            users.nbgrader(student, "fetch_feedback", ASSIGNMENT)
            found = list((users.home(student) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
            assert len(found) == 1, (student, found)
            pages[student] = found[0]
            assert found[0].read_bytes() == (out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_bytes()
            text = re.sub(r"<[^>]+>", "", found[0].read_text())
            for grade_id, entry in rows[student]["items"].items():
                if grade_id in FULL:  # the autograded items' reports, with their scores
                    assert re.search(rf"{grade_id}: \d+ of \d+ behaviours pass, {entry['score']:g} of "
                                     rf"{entry['max_score']:g} points", text), (student, grade_id)
        assert len({p.read_bytes() for p in pages.values()}) == len(students)
        text = re.sub(r"<[^>]+>", "", pages[right].read_text())
        assert f"{ASSIGNMENT}: {round(rows[right]['total'], 2):g} of " in text
        item = next(i for i in ITEMS if i.id == MANUAL_ID)
        assert re.search(rf"{re.escape(item.title)}\s*{MANUAL_SCORE:g} / {item.points:g}", text)  # its summary row

        # 7. no student reads another's work or feedback, nor anything the instructor keeps
        submissions = {s: users.home(s) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb" for s in students}
        kept = [course / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                course / "autograder" / "instructor" / "hidden" / "test_accumulate_gradients.py",
                course / "autograder" / "instructor" / "quiz_key.py",
                course / ".git" / "objects", course / "tests" / "submissions" / "alternatives.py",
                course / "benchmarks" / "overhead.py",
                course / "submitted" / right / ASSIGNMENT / f"{ASSIGNMENT}.ipynb",
                course / "submitted" / right / ASSIGNMENT / "submission_secret.txt",
                out / "grades.csv", out / "grades.json", out / "report.html", out / "gradebook.db",
                out / "feedback" / right / ASSIGNMENT / f"{ASSIGNMENT}.html", course / "submitted", out]
        for student in students:
            for other in students:
                if other != student:
                    users.cannot_read(student, submissions[other])
                    users.cannot_read(student, pages[other])
            users.cannot_read(student, course_x / "inbound")
            users.cannot_read(student, course_x / "feedback")
            assert [p for p in kept if users.can_read(student, p)] == [], student
    finally:
        users.remove()
        shutil.rmtree(base, ignore_errors=True)
