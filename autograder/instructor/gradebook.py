"""Grades out of nbgrader's gradebook: per-student state files, grades.json and grades.csv.

The gradebook holds the scores (including any an instructor changes or adds in formgrader);
the state files hold what the gradebook cannot: each submission's status and reason.
"""
import csv
import io
import json
import os
from pathlib import Path

from ..items import ASSIGNMENT, ITEMS, MANUAL_ITEMS


def state_path(out: Path, student: str) -> Path:
    return Path(out) / "state" / f"{student}.json"


def load_state(out: Path, student: str):
    try:
        return json.loads(state_path(out, student).read_text())
    except (OSError, ValueError):
        return None


def save_state(out: Path, record: dict):
    path = state_path(out, record["student"])
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(json.dumps(record, indent=1, sort_keys=True))
    os.replace(tmp, path)  # atomic: an interrupted run never leaves half a record


def _gradebook_items(gb, student: str) -> dict:
    """{grade id: (score, max score)} from the gradebook; manual items only once graded."""
    from nbgrader.api import MissingEntry
    try:
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
    except MissingEntry:
        return {}
    found = {}
    manual = {i.id for i in MANUAL_ITEMS}
    for grade in notebook.grades:
        if grade.name in manual and grade.manual_score is None:
            continue
        found[grade.name] = (float(grade.score or 0.0), float(grade.max_score))
    return found


def export(out: Path, db_url: str, students) -> dict:
    """Write grades.json and grades.csv for these students; returns the grades.json document."""
    from nbgrader.api import Gradebook
    out = Path(out)
    doc = {"assignment": ASSIGNMENT, "students": {}}
    with Gradebook(db_url, course_id="lesson20") as gb:
        for student in sorted(students):
            state = load_state(out, student) or {"status": "error", "reason": "not graded yet", "items": {}}
            scores = _gradebook_items(gb, student) if state["status"] != "error" else {}
            items = {}
            for item in ITEMS:
                if item.id in scores:
                    score, max_score = scores[item.id]
                elif item.kind == "auto":  # every autograded item gets a row, 0 when nothing was graded
                    score, max_score = 0.0, float(item.points)
                else:
                    continue
                items[item.id] = {"score": round(score, 4), "max_score": max_score}
            doc["students"][student] = {
                "status": state["status"], "reason": state.get("reason", ""), "items": items,
                "total": round(sum(v["score"] for v in items.values()), 4),
                "max_total": round(sum(v["max_score"] for v in items.values()), 4),
            }
    _write(out / "grades.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    _write(out / "grades.csv", to_csv(doc))
    return doc


def to_csv(doc: dict) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    ids = [i.id for i in ITEMS]
    writer.writerow(["student_id", *ids, "total"])
    for student, row in sorted(doc["students"].items()):
        writer.writerow([student, *(row["items"].get(i, {}).get("score", "") for i in ids), row["total"]])
    return buf.getvalue()


def _write(path: Path, text: str):
    if path.exists() and path.read_text() == text:
        return  # unchanged: leave the file (and its modification time) alone
    tmp = path.with_name(path.name + ".part")
    tmp.write_text(text)
    os.replace(tmp, path)


