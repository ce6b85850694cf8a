"""autograder.instructor.gradebook: grades.json and grades.csv from a gradebook and the state files."""
import json

from autograder.instructor.course import put_alembic_on_path
from autograder.instructor.gradebook import export, to_csv
from autograder.instructor.state import StudentRecord, save_state
from autograder.items import AUTO_ITEMS, ITEMS


def test_export_without_grades_keeps_the_contract(tmp_path):
    put_alembic_on_path()
    save_state(tmp_path, StudentRecord("ada", "f", "failed", "no lesson20/ folder in the submission"))
    doc = export(tmp_path, f"sqlite:///{tmp_path / 'gradebook.db'}")
    assert doc == json.loads((tmp_path / "grades.json").read_text())
    row = doc["students"]["ada"]
    assert set(row) == {"status", "reason", "items", "total", "max_total"}
    assert row["status"] == "failed" and row["total"] == 0
    assert set(row["items"]) == {i.id for i in AUTO_ITEMS}
    assert row["max_total"] == sum(i.points for i in AUTO_ITEMS)
    header = (tmp_path / "grades.csv").read_text().splitlines()[0]
    assert header == ",".join(["student_id", *(i.id for i in ITEMS), "total", "review"])


def test_csv_has_a_row_per_student():
    doc = {"students": {"b": {"items": {"q5_answer": {"score": 1.0}}, "total": 1.0,
                              "review": {"q5_answer": ["reading the interpreter's frames"]}},
                        "a": {"items": {}, "total": 0}}}
    rows = to_csv(doc).splitlines()
    assert [r.split(",")[0] for r in rows] == ["student_id", "a", "b"]
    assert rows[1].endswith(",0,") and rows[2].endswith(",1.0,q5_answer")
