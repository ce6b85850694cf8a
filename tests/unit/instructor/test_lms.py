"""The LMS files, read back the way each LMS reads them.

No maintained Python library reads these files: canvasapi wraps Canvas's REST API (its models hold users and
submissions, not the gradebook CSV), and Moodle has no Python reader at all. So `canvas_rows` follows Canvas's
own importer (app/models/gradebook_importer.rb: `row_has_student_headers?`, `update_column_count`, the
"Points Possible" row, the columns it strips, custom columns matched by title) and `moodle_rows` Moodle's
(grade/import/csv/classes/load_data.php: a header row, one identifier column, a grade is a number, "" or "-",
a user it cannot find stops the import). The oracle for every score is the grades.json document itself.
"""
import csv
import io
import re

import pytest

from autograder.instructor import lms
from autograder.instructor.gradebook import FORMULA_STARTS
from autograder.items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from autograder.text import submission_note

# Canvas's GradebookImporter: the columns it never takes for an assignment
CANVAS_RESERVED = {"Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID", "Section",
                   "Integration ID", "Root Account"}
CANVAS_READ_ONLY = re.compile("Current Score|Current Points|Current Grade|Final Score|Final Points|Final Grade|"
                              "Override Score|Override Grade|Override Status")


def canvas_rows(text: str, custom_columns=("Notes",)) -> dict:
    """What Canvas's importer takes from the file: {"assignments": {title: points possible}, "custom": [titles],
    "students": [{"sis_user_id", "sis_login_id", "id", "name", "grades": {title: cell}, "custom": {title: cell}}]}."""
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    assert len(header) > 3 and "Student" in header[0] and "ID" in header[1], header  # row_has_student_headers?
    student_columns = 3
    if re.search(r"SIS\s+Login\s+ID", header[2]):
        sis_user, sis_login = None, 2
        student_columns += 1
    elif re.search(r"SIS\s+User\s+ID", header[2]) and re.search(r"SIS\s+Login\s+ID", header[3]):
        sis_user, sis_login = 2, 3
        student_columns += 2
    else:
        sis_user = sis_login = None
    custom = [h for h in header if h in custom_columns and h not in CANVAS_RESERVED]
    student_columns += len(custom)
    assert "Section" in header[student_columns - 1 - len(custom)], header  # header?: the last student column
    rest = [h for h in header[student_columns - len(custom):] if h not in custom]
    titles = [h for h in rest if not CANVAS_READ_ONLY.search(h)]
    taken = {"assignments": {t: None for t in titles}, "custom": custom, "students": []}
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            taken["assignments"] = {t: row[header.index(t)] for t in titles}
            continue
        taken["students"].append({
            "name": row[0], "id": row[1], "sis_user_id": row[sis_user] if sis_user is not None else None,
            "sis_login_id": row[sis_login] if sis_login is not None else None,
            "grades": {t: row[header.index(t)].strip() for t in titles},
            "custom": {c: row[header.index(c)] for c in custom}})
    return taken


def moodle_rows(text: str, map_from: str, users: set, mapping: dict) -> dict:
    """What Moodle's CSV import stores: {user: {grade item or "feedback": value}}; mapping: column -> item or
    "feedback"; a value that is neither a number, "" nor "-" fails the import, and so does an unknown user."""
    rows = list(csv.reader(io.StringIO(text)))
    header = [h.strip() for h in rows[0]]
    stored = {}
    for row in rows[1:]:
        user = row[header.index(map_from)].strip()
        if not user:
            continue  # a row with a blank user field is skipped
        assert user in users, f"usermappingerror: {user!r}: Moodle stops the whole import"
        for column, target in mapping.items():
            value = row[header.index(column)].strip()
            if target == "feedback":
                stored.setdefault(user, {})["feedback"] = value
            elif value in ("", "-"):
                stored.setdefault(user, {})[target] = None
            else:
                stored.setdefault(user, {})[target] = float(value)  # ValueError: "badgrade"
    return stored


def _row(status: str, scores: dict, submission=None) -> dict:
    items = {i: {"score": s, "max_score": float(next(x.points for x in ITEMS if x.id == i))}
             for i, s in scores.items()}
    row = {"status": status, "reason": "why" if status != "graded" else "", "items": items,
           "total": round(sum(s for s in scores.values()), 4),
           "max_total": round(sum(v["max_score"] for v in items.values()), 4)}
    if submission is not None:
        row["submission"] = submission
    return row


def class_doc() -> dict:
    full = {i.id: float(i.points) for i in AUTO_ITEMS}
    half = {i.id: i.points / 2 for i in AUTO_ITEMS}
    return {"assignment": ASSIGNMENT, "students": {
        "ada": _row("graded", {**full, "practice_q1": 1.5},
                    {"time": "2026-01-15T09:30:00Z", "source": "inbound", "due": "2026-01-15T10:00:00Z",
                     "late_seconds": 0, "penalty": 0}),
        "bob": _row("graded", half, {"time": "2026-01-15T11:05:00+00:00", "source": "inbound",
                                     "due": "2026-01-15T10:00:00Z", "late_seconds": 3900, "penalty": 2}),
        "cy": _row("failed", {i.id: 0.0 for i in AUTO_ITEMS}),  # no "submission": grading recorded none
        "dee": _row("error", {}),
        "eve": _row("graded", full),  # not in the roster
    }}


def write_roster(tmp_path, text: str):
    path = tmp_path / "roster.csv"
    path.write_text(text, encoding="utf-8")
    return path


CANVAS_ROSTER = ("\ufeffstudent_id,Student,SIS User ID,SIS Login ID,Section\n"  # Excel's byte-order mark
                 "ada,\"Lovelace, Ada\",S001,ada@uni.edu,L1\n"
                 "bob,=HYPERLINK(\"x\"),S002,,L1\n"       # a name that is a formula, and no login id
                 "cy,,,cy@uni.edu,L2\n"                   # no SIS user id: Canvas falls back to the login id
                 "dee,Dee,S004,,L2\n"
                 "fay,Fay,S006,fay@uni.edu,L2\n")         # never submitted


def test_canvas_reads_the_header_the_points_possible_row_and_each_students_total(tmp_path):
    doc = class_doc()
    roster = lms.read_roster(write_roster(tmp_path, CANVAS_ROSTER), "canvas")
    taken = canvas_rows(lms.canvas_csv(doc, roster))
    assert taken["assignments"] == {ASSIGNMENT: f"{sum(i.points for i in ITEMS):g}"}  # one column, the lesson
    assert taken["custom"] == ["Notes"]  # Canvas's own Notes column, not a new assignment
    by_sis = {s["sis_user_id"] or s["sis_login_id"]: s for s in taken["students"]}
    assert set(by_sis) == {"S001", "S002", "cy@uni.edu", "S004"}  # the roster's graded students, none dropped
    for student, key in (("ada", "S001"), ("bob", "S002"), ("cy", "cy@uni.edu")):
        assert float(by_sis[key]["grades"][ASSIGNMENT]) == doc["students"][student]["total"]
        assert by_sis[key]["custom"]["Notes"] == submission_note(doc["students"][student].get("submission"))
    assert by_sis["S004"]["grades"][ASSIGNMENT] == ""  # not graded yet: blank, never a 0
    assert by_sis["S002"]["name"].startswith("'=")  # inert in a spreadsheet
    assert by_sis["S001"]["name"] == "Lovelace, Ada"


def test_canvas_per_item_has_one_column_and_one_points_possible_per_item(tmp_path):
    doc = class_doc()
    roster = lms.read_roster(write_roster(tmp_path, CANVAS_ROSTER), "canvas")
    taken = canvas_rows(lms.canvas_csv(doc, roster, per_item=True))
    assert taken["assignments"] == {f"{ASSIGNMENT}: {i.id}": f"{i.points:g}" for i in ITEMS}
    ada = next(s for s in taken["students"] if s["sis_user_id"] == "S001")
    for item in ITEMS:
        expected = doc["students"]["ada"]["items"].get(item.id, {}).get("score")
        cell = ada["grades"][f"{ASSIGNMENT}: {item.id}"]
        assert (float(cell) if cell else None) == expected  # a written answer not graded yet is blank


def test_moodle_imports_every_row_by_username_or_email_with_the_notes_as_feedback(tmp_path):
    doc = class_doc()
    roster = lms.read_roster(write_roster(tmp_path, (
        "student_id,username,Email address\nada,ada1,ada@uni.edu\nbob,bob2,\ncy,,cy@uni.edu\nfay,fay6,fay@uni.edu\n")),
        "moodle")
    text = lms.moodle_csv(doc, roster)
    header = next(csv.reader(io.StringIO(text)))
    assert header == ["Username", ASSIGNMENT, f"Feedback: {ASSIGNMENT}"]  # Moodle maps on one user column
    mapping = {ASSIGNMENT: "lesson", f"Feedback: {ASSIGNMENT}": "feedback"}
    by_name = moodle_rows(text, "Username", {"ada1", "bob2", "fay6"}, mapping)
    assert by_name["ada1"] == {"lesson": doc["students"]["ada"]["total"],
                               "feedback": submission_note(doc["students"]["ada"]["submission"])}
    assert by_name["bob2"]["lesson"] == doc["students"]["bob"]["total"]
    assert "1 h 5 min late, penalty 2 points" in by_name["bob2"]["feedback"]
    assert set(by_name) == {"ada1", "bob2"}  # fay never submitted; cy has no username: listed, not a blank row
    assert {s: w for s, _, w in lms.unmatched(doc, roster)}["cy"].startswith(lms.LMS_GAPS["no_lms_id"])
    by_email = lms.read_roster(write_roster(tmp_path, "student_id,email\nada,ada@uni.edu\ncy,cy@uni.edu\n"), "moodle")
    stored = moodle_rows(lms.moodle_csv(doc, by_email), "Email address", {"ada@uni.edu", "cy@uni.edu"},
                         mapping)
    assert stored["cy@uni.edu"] == {"lesson": doc["students"]["cy"]["total"], "feedback": ""}


def test_students_missing_from_either_side_are_listed_not_dropped(tmp_path):
    doc = class_doc()
    doc["students"]["=cmd|' /C calc'!A0"] = _row("failed", {})  # a refused folder name
    roster = lms.read_roster(write_roster(tmp_path, CANVAS_ROSTER), "canvas")
    path, written, listing, listed = lms.write_lms(tmp_path, doc, "canvas", roster)
    why = {s: w for s, _, w in listed}
    assert why["eve"] == lms.LMS_GAPS["not_in_roster"]
    assert why["fay"] == lms.LMS_GAPS["no_submission"]
    assert why["dee"].startswith(lms.LMS_GAPS["not_graded"])
    assert written == len(canvas_rows(path.read_text())["students"]) == 4
    cells = list(csv.reader(io.StringIO(listing.read_text())))
    assert cells[0] == ["student_id", "lms_id", "why"] and len(cells) == 1 + len(listed)
    assert {c[0] for c in cells[1:]} >= {"eve", "fay", "dee"}
    assert not any(c[0].startswith(FORMULA_STARTS) for c in cells[1:])  # the refused name is inert


def test_a_roster_that_cannot_be_used_is_refused_with_its_cause(tmp_path):
    cases = {
        "student,email\na,a@x\n": "needs student_id",
        "student_id,sis_user_id\na,S1\na,S2\n": "on two rows",
        "student_id,sis_user_id\na,S1\nb,S1\n": "given to both",
        "student_id,sis_user_id\na,=1+1\n": "starts like a spreadsheet formula",
        "": "it is empty",
    }
    for text, cause in cases.items():
        with pytest.raises(lms.RosterError, match=cause):
            lms.read_roster(write_roster(tmp_path, text), "canvas")
    path = tmp_path / "latin1.csv"
    path.write_bytes("student_id,sis_user_id\nzoë,S1\n".encode("latin-1"))
    with pytest.raises(lms.RosterError, match="UTF-8"):
        lms.read_roster(path, "canvas")


def test_column_names_read_the_lms_own_headers():
    assert [lms.column_name(h) for h in ("SIS User ID", " SIS Login ID", "Email address", "Username", "Student",
                                         "ID number")] == ["sis_user_id", "sis_login_id", "email", "username",
                                                           "name", "idnumber"]


def test_the_submission_note_says_what_is_known_and_nothing_when_nothing_is():
    assert submission_note(None) == "" and submission_note({}) == ""
    on_time = {"time": "2026-01-15T09:30:00Z", "late_seconds": 0, "penalty": 0}
    assert submission_note(on_time) == "submitted 2026-01-15 09:30 UTC, on time"
    unknown = {"time": "2026-01-15T09:30:00+01:00", "late_seconds": None}
    assert submission_note(unknown) == "submitted 2026-01-15 08:30 UTC, lateness unknown"
    late = {"time": "2026-01-16T10:00:05Z", "late_seconds": 86400 + 2 * 3600 + 5, "penalty": 1}
    assert submission_note(late) == "submitted 2026-01-16 10:00 UTC, 1 d 2 h late, penalty 1 point"
