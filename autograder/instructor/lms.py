"""Grade files an LMS imports as they are: Canvas's gradebook CSV and Moodle's CSV grade import.

Both are written from the grades.json document that `export` has just computed (gradebook.collect), never
from a second path to the scores, and keyed by a roster: a CSV file with the course's `student_id` (the
folder name under submitted/) and the LMS's own id for each student.

* Canvas (Grades > Import) matches a row by its "ID" (Canvas's user id), else "SIS User ID", else
  "SIS Login ID", else the student's name, and reads the header and rows the way its GradebookImporter
  does: "Student", "ID", "SIS User ID", "SIS Login ID", "Section", then one column per assignment, and a
  row whose first cell is "Points Possible". Any other column is offered as a new assignment, except a
  custom gradebook column of the same title: the submission time, lateness and penalty go in "Notes", the
  column Canvas shows under View > Notes (shown there, the import fills it; not shown, the import page
  offers it as a new assignment, which the instructor sets to ignore).
* Moodle (Grades > Import > CSV file) stops the whole import at a row whose user it cannot find, and skips a
  row whose user field is blank, so the file has one user column (the roster's username, else email, else ID
  number) and only students who have it; the instructor maps it to that field, the lesson's column to its
  grade item, and "Feedback: <lesson>" to that item's feedback, which the student sees: the submission time,
  lateness and penalty.

Students graded but not in the roster, and roster students with no submission, are not in the LMS file:
they are listed in OUT/<format>-unmatched.csv, and by the command. Every cell is inert in a spreadsheet
(gradebook.spreadsheet_cell); an LMS id that would need changing for that is refused, since the LMS would
then no longer match it.
"""
import csv
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..items import ASSIGNMENT, ITEMS
from ..text import submission_note
from .messages import LMS_GAPS, refused_id_cell, roster_problem
from .files import write_atomic
from .gradebook import spreadsheet_cell
from .staging import usable_id

FORMATS = ("csv", "canvas", "moodle")
# the LMS ids a roster may give, by format, in the order the LMS tries them (Canvas: its GradebookImporter;
# Moodle: the "Map to" choices of its CSV import); a roster needs one of each format's
LMS_IDS = {"canvas": ("id", "sis_user_id", "sis_login_id"), "moodle": ("username", "email", "idnumber")}
ALIASES = {"email_address": "email", "student": "name", "id_number": "idnumber"}  # the LMSs' own headers
MAX_ROSTER_BYTES = 16 * 2**20
CANVAS_PEOPLE = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_HEADERS = {"username": "Username", "email": "Email address", "idnumber": "ID number"}


class RosterError(Exception):
    """A roster that cannot be used; its message names the file and the cause."""


@dataclass
class Roster:
    """student_id -> {column: value}, in the file's order; `keys`: the LMS id columns the file carries (Canvas
    tries each in turn for each row; Moodle matches on one column only, the first of LMS_IDS the roster has)."""
    path: Path
    rows: dict = field(default_factory=dict)
    keys: tuple = ()

    def has_lms_id(self, student: str) -> bool:
        return any(self.rows[student].get(key) for key in self.keys)

    def lms_id(self, student: str) -> str:
        return next((self.rows[student][k] for k in self.keys if self.rows[student].get(k)), "")


def column_name(header: str) -> str:
    """"SIS User ID" -> sis_user_id, "Email address" -> email: how a roster's header is read."""
    name = re.sub(r"[^a-z0-9]+", "_", header.strip().lower()).strip("_")
    return ALIASES.get(name, name)


def read_roster(path, lms: str) -> Roster:
    """The roster at `path`, checked for `lms`: a student_id column, one of the LMS's id columns, each
    student once, and no LMS id given to two students (either would put a grade on the wrong student)."""
    path = Path(path)
    try:
        data = path.read_bytes()[:MAX_ROSTER_BYTES + 1]
        text = data.decode("utf-8-sig")  # a spreadsheet's UTF-8 starts with a byte-order mark
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(roster_problem(path, f"it cannot be read as UTF-8 text ({exc})")) from None
    if len(data) > MAX_ROSTER_BYTES:
        raise RosterError(roster_problem(path, f"it is larger than {MAX_ROSTER_BYTES >> 20} MiB"))
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise RosterError(roster_problem(path, "it is empty"))
    columns = tuple(column_name(h) for h in rows[0])
    wanted = LMS_IDS[lms]
    if "student_id" not in columns or not set(wanted) & set(columns):
        raise RosterError(roster_problem(path, (
            f"its header has {', '.join(repr(h) for h in rows[0])}; a roster for {lms} needs student_id (the "
            f"course's id, a folder under submitted/) and one of {', '.join(wanted)}")))
    keys = tuple(k for k in wanted if k in columns)
    roster, owners = Roster(path, keys=keys if lms == "canvas" else keys[:1]), {}
    for line, cells in enumerate(rows[1:], start=2):
        row = {c: v.strip() for c, v in zip(columns, cells)}
        student = row.get("student_id", "")
        if not student:
            continue
        if student in roster.rows:
            raise RosterError(roster_problem(path, f"student {student!r} is on two rows (line {line} and an "
                                                   "earlier one)"))
        for key in roster.keys:
            value = row.get(key, "")
            if value and spreadsheet_cell(value) != value:
                raise RosterError(roster_problem(path, (
                    f"line {line}: the {key} {value!r} starts like a spreadsheet formula, so the file would carry "
                    "it with a leading ' and the LMS would not match it")))
            if value and owners.setdefault((key, value), student) != student:
                raise RosterError(roster_problem(path, f"line {line}: the {key} {value!r} is given to both "
                                                       f"{owners[key, value]!r} and {student!r}"))
        roster.rows[student] = row
    return roster


def _points(value) -> str:
    return "" if value is None else f"{float(value):g}"


def _scores(row: dict, per_item: bool) -> list:
    """The row's score cells: its total, or each item's score ("" where an item has none yet); all "" for a
    student not graded yet."""
    if row["status"] == "error":
        return [""] * (len(ITEMS) if per_item else 1)
    if per_item:
        return [_points(row["items"].get(i.id, {}).get("score")) for i in ITEMS]
    return [_points(row["total"])]


def _columns(per_item: bool) -> list:
    return [f"{ASSIGNMENT}: {i.id}" for i in ITEMS] if per_item else [ASSIGNMENT]


def _possible(per_item: bool) -> list:
    return [_points(i.points) for i in ITEMS] if per_item else [_points(sum(i.points for i in ITEMS))]


def matched(doc: dict, roster: Roster) -> list:
    """(student, roster row, grades.json row) of each roster student who was graded and has an LMS id, in the
    roster's order."""
    return [(s, r, doc["students"][s]) for s, r in roster.rows.items() if s in doc["students"] and roster.has_lms_id(s)]


def unmatched(doc: dict, roster: Roster) -> list:
    """(student, LMS id or "", why) for each student left out of the LMS file or left blank in it."""
    listed = []
    for student in sorted(doc["students"]):
        if student not in roster.rows:
            listed.append((student, "", LMS_GAPS["not_in_roster"]))
        elif not roster.has_lms_id(student):
            listed.append((student, "", f"{LMS_GAPS['no_lms_id']} ({' or '.join(roster.keys)})"))
    for student in roster.rows:
        lms_id = roster.lms_id(student)
        if student not in doc["students"]:
            listed.append((student, lms_id, LMS_GAPS["no_submission"]))
        elif doc["students"][student]["status"] == "error" and lms_id:
            listed.append((student, lms_id, f"{LMS_GAPS['not_graded']} ({doc['students'][student]['reason']})"))
    return listed


def canvas_csv(doc: dict, roster: Roster, per_item: bool = False) -> str:
    """Canvas's gradebook import: the people columns, the lesson (or each item), Notes; then Points Possible."""
    rows = [[*CANVAS_PEOPLE, *_columns(per_item), "Notes"],
            ["Points Possible", "", "", "", "", *_possible(per_item), ""]]
    for student, person, row in matched(doc, roster):
        rows.append([person.get("name") or student, person.get("id", ""), person.get("sis_user_id", ""),
                     person.get("sis_login_id", ""), person.get("section", ""), *_scores(row, per_item),
                     submission_note(row.get("submission"))])
    return _csv(rows)


def moodle_csv(doc: dict, roster: Roster, per_item: bool = False) -> str:
    """Moodle's CSV grade import: the user's id (one column: Moodle maps on one), the lesson (or each item), and
    the lesson's feedback."""
    rows = [[*(MOODLE_HEADERS[k] for k in roster.keys), *_columns(per_item), f"Feedback: {ASSIGNMENT}"]]
    for _student, person, row in matched(doc, roster):
        rows.append([*(person[k] for k in roster.keys), *_scores(row, per_item), submission_note(row.get("submission"))])
    return _csv(rows)


def unmatched_csv(listed: list) -> str:
    rows = [["student_id", "lms_id", "why"]]
    rows += [[s if usable_id(s) else refused_id_cell(s), lms_id, why] for s, lms_id, why in listed]
    return _csv(rows)


def _csv(rows: list) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        writer.writerow([spreadsheet_cell(c) for c in row])
    return buf.getvalue()


def write_lms(out, doc: dict, lms: str, roster: Roster, per_item: bool = False) -> tuple:
    """Write OUT/<lms>.csv and OUT/<lms>-unmatched.csv; returns (the LMS file, its students, the listing, the
    listing's rows)."""
    out = Path(out)
    make = {"canvas": canvas_csv, "moodle": moodle_csv}[lms]
    listed = unmatched(doc, roster)
    write_atomic(out / f"{lms}.csv", make(doc, roster, per_item))
    write_atomic(out / f"{lms}-unmatched.csv", unmatched_csv(listed))
    return out / f"{lms}.csv", len(matched(doc, roster)), out / f"{lms}-unmatched.csv", listed
