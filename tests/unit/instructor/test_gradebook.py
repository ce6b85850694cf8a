"""autograder.instructor.gradebook: grades.json and grades.csv from a gradebook and the state files."""
import ast
import json

from autograder.instructor.course import prepare_alembic
from autograder.instructor.gradebook import export, to_csv
from autograder.instructor.state import StudentRecord, save_state
from autograder.items import AUTO_ITEMS, ITEMS


def test_export_without_grades_keeps_the_contract(tmp_path):
    prepare_alembic()
    save_state(tmp_path, StudentRecord("ada", "f", "failed", "no lesson20/ folder in the submission"))
    doc = export(tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert doc == json.loads((tmp_path / "grades.json").read_text())
    row = doc["students"]["ada"]
    assert set(row) == {"status", "reason", "items", "total", "max_total", "submission"}
    assert row["status"] == "failed" and row["total"] == 0
    assert set(row["items"]) == {i.id for i in AUTO_ITEMS}
    assert row["max_total"] == sum(i.points for i in AUTO_ITEMS)
    # no due date in the course: nothing is late; no time was recorded for a record made by hand
    assert row["submission"] == {"time": None, "source": "no time recorded", "due": None, "late_seconds": 0.0,
                                 "penalty": 0.0}
    header = (tmp_path / "grades.csv").read_text().splitlines()[0]
    assert header == ",".join(["student_id", *(i.id for i in ITEMS), "total", "review", "submitted_at",
                               "late_seconds", "penalty"])


def test_csv_has_a_row_per_student():
    doc = {"students": {"b": {"items": {"q5_answer": {"score": 1.0}}, "total": 1.0,
                              "review": {"q5_answer": ["reading the interpreter's frames"]}},
                        "a": {"items": {}, "total": 0}}}
    rows = to_csv(doc).splitlines()
    assert [r.split(",")[0] for r in rows] == ["student_id", "a", "b"]
    assert rows[1].endswith(",0,,,,0.0") and rows[2].endswith(",1.0,q5_answer,,,0.0")


def test_a_formgrader_override_shows_with_its_score_and_without_the_graders_rubric(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.instructor.course import nbgrader_config, prepare_gradebook
    from autograder.instructor.gradebook import COURSE_ID
    from autograder.items import ASSIGNMENT
    from autograder.limits import Limits
    prepare_alembic()
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    prepare_gradebook(nbgrader_config(tmp_path, db_url, Limits()), tmp_path)
    first, second = AUTO_ITEMS[0], AUTO_ITEMS[1]
    items = {i.id: {"score": i.points / 2, "max_score": float(i.points),
                    "rubric": {"b": {"score": i.points / 2, "max_score": float(i.points), "central": True}}}
             for i in (first, second)}
    save_state(tmp_path, StudentRecord("ada", "f", "graded", "", items=items))
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        gb.update_or_create_student("ada")
        for grade in gb.update_or_create_submission(ASSIGNMENT, "ada").notebooks[0].grades:
            if grade.name in items:
                grade.auto_score = items[grade.name]["score"]
        gb.db.commit()
    row = export(tmp_path, db_url)["students"]["ada"]
    assert set(row["rubric"]) == {first.id, second.id} and "overridden" not in row
    assert row["items"][first.id]["score"] == first.points / 2
    with Gradebook(db_url, course_id=COURSE_ID) as gb:  # a gradebook whose autograded score is not the grader's
        gb.find_grade(second.id, ASSIGNMENT, ASSIGNMENT, "ada").auto_score = 0.0
        gb.db.commit()
    assert export(tmp_path, db_url)["students"]["ada"]["items"][second.id]["score"] == second.points / 2  # the record's
    with Gradebook(db_url, course_id=COURSE_ID) as gb:  # the instructor gives full marks in formgrader
        gb.find_grade(first.id, ASSIGNMENT, ASSIGNMENT, "ada").manual_score = first.points
        gb.db.commit()
    row = export(tmp_path, db_url)["students"]["ada"]
    assert row["items"][first.id]["score"] == first.points  # the instructor's score
    assert row["overridden"] == {first.id: first.points / 2}  # the grader's, kept for the record
    assert set(row["rubric"]) == {second.id}  # the grader's rubric no longer explains that score
    assert row["total"] == sum(v["score"] for v in row["items"].values())


def _read_csv(text: str) -> list:
    import csv
    import io
    return list(csv.reader(io.StringIO(text)))


FORMULA_FOLDERS = ["=HYPERLINK(1)", "+SUM(1)", "-2+3", "@SUM(1)", "\tcmd", "\r=1+1"]


def test_refused_folders_get_a_row_that_says_why_and_no_formula(tmp_path):
    """Folders named like formulas are refused for grading; grades.csv names them inertly, with the reason."""
    from autograder.instructor.grade import grade_staged_student
    from autograder.instructor.staging import stage
    from autograder.limits import Limits
    prepare_alembic()
    submitted, db_url = tmp_path / "submitted", f"sqlite:///{tmp_path / 'gradebook.db'}"
    for folder in FORMULA_FOLDERS:
        (submitted / folder / "lesson20").mkdir(parents=True)
    for folder in FORMULA_FOLDERS:  # as grade._grade_all finishes a submission with nothing to run
        grade_staged_student(StudentRecord(folder, "f"), stage(folder, submitted, tmp_path / ".staging"), str(tmp_path),
                  db_url, Limits())
    doc = export(tmp_path, db_url)
    assert set(doc["students"]) == set(FORMULA_FOLDERS)
    assert all(r["status"] == "failed" and "not a usable student id" in r["reason"] for r in doc["students"].values())
    rows = _read_csv((tmp_path / "grades.csv").read_text())[1:]
    assert len(rows) == len(FORMULA_FOLDERS)
    for row in rows:
        assert all(not cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row), row
    named = {}
    for row in rows:  # the folder's name, quoted, then why it was not graded
        quoted, _, why = row[0].rpartition(" (")
        named[ast.literal_eval(quoted)] = why
    assert named == dict.fromkeys(FORMULA_FOLDERS, "not graded: not a usable student id)")


def test_csv_cells_that_start_like_a_formula_are_neutralised_and_numbers_kept():
    doc = {"students": {"ada": {"items": {"q5_answer": {"score": -2.5}, "underflow_fraction": {"score": "=1+1"},
                                          "static_loss_scaler": {"score": "-3"}},
                                "total": -1.5, "review": {"@SUM(1)": []}}}}
    row = dict(zip(_read_csv(to_csv(doc))[0], _read_csv(to_csv(doc))[1]))
    assert row["student_id"] == "ada"
    assert row["q5_answer"] == "-2.5" and row["static_loss_scaler"] == "-3" and row["total"] == "-1.5"
    assert row["underflow_fraction"] == "'=1+1" and row["review"] == "'@SUM(1)"
    assert row["dynamic_loss_scaler"] == ""


def test_collect_is_what_export_writes_and_the_written_answers_without_a_score_wait(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.instructor.course import nbgrader_config, prepare_gradebook
    from autograder.instructor.gradebook import COURSE_ID, collect, waiting_for_hand
    from autograder.items import ASSIGNMENT, MANUAL_ITEMS
    from autograder.limits import Limits
    prepare_alembic()
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    prepare_gradebook(nbgrader_config(tmp_path, db_url, Limits()), tmp_path)
    for student in ("ada", "bob"):
        save_state(tmp_path, StudentRecord(student, "f", "graded"))
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        for student in ("ada", "bob"):
            gb.update_or_create_student(student)
            gb.update_or_create_submission(ASSIGNMENT, student)
        grade = gb.find_grade(MANUAL_ITEMS[0].id, ASSIGNMENT, ASSIGNMENT, "ada")
        grade.manual_score, grade.needs_manual_grade = 1.0, False  # as formgrader saves a score
        gb.db.commit()
    assert collect(tmp_path, db_url) == export(tmp_path, db_url) == json.loads((tmp_path / "grades.json").read_text())
    waiting = waiting_for_hand(db_url, ["ada", "bob", "nobody"])
    assert waiting == {"ada": [i.id for i in MANUAL_ITEMS[1:]], "bob": [i.id for i in MANUAL_ITEMS]}
