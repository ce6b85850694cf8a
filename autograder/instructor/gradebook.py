"""nbgrader's gradebook for a class, and the grades exported from it: grades.json and grades.csv.

The gradebook holds the scores (including any an instructor changes or adds in formgrader);
each student's record (state.py) holds what the gradebook cannot: the status, the reason and each
item's rubric as graded. An autograded item whose score an instructor changed in formgrader is
exported with that score, listed under "overridden" with the grader's own score, and without the
grader's rubric, which no longer explains it.
Several `grade` processes (shards) may share one gradebook and even one output folder, so
setting up the gradebook and writing the exports happen under a lock.
"""
import contextlib
import csv
import hashlib
import io
import json
import math
import warnings
from pathlib import Path

from ..items import ASSIGNMENT, ITEMS, MANUAL_ITEMS
from ..text import clip
from .messages import NOT_GRADED_YET, refused_id_cell
from .arrival import clip_entry, lateness
from .files import file_lock, write_atomic
from .settings import Settings
from .staging import usable_id
from .state import load_state, recorded_students, state_path

COURSE_ID = ASSIGNMENT  # one course, one assignment: nbgrader's course id is the assignment's name
# OWASP's CSV-injection rule: a spreadsheet reads a cell starting with one of these as a formula
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
NOT_IN_SESSION = ".*not in session.*"  # SQLAlchemy 2's warning about nbgrader 0.9's sessions: harmless, and noisy
CLASS_SET_ASIDE = "set_aside.json"  # OUT/: what collect set aside that names no student the class can hold
CSV_TAIL = ["submitted_at", "late_seconds", "penalty"]  # grades.csv's last columns, after total and review


def normalise_db_url(db_url: str) -> str:
    """`postgresql://…` with whichever PostgreSQL driver is installed.

    SQLAlchemy 2.1 reads a bare postgresql:// as psycopg 3; nbgrader's setups usually have psycopg2.
    """
    import importlib.util
    for bare in ("postgresql://", "postgres://"):
        if db_url.startswith(bare):
            rest = db_url[len(bare):]
            if importlib.util.find_spec("psycopg") is None and importlib.util.find_spec("psycopg2") is not None:
                return "postgresql+psycopg2://" + rest
            return "postgresql://" + rest
    return db_url


@contextlib.contextmanager
def gradebook_lock(db_url: str, out: Path):
    """Serialise setting up one gradebook across processes and machines.

    PostgreSQL: a session-level advisory lock, which every machine grading into the database
    sees. SQLite: a lock file next to the database. Anything else: a lock file in `out`.
    """
    if db_url.startswith("postgresql"):
        from sqlalchemy import create_engine, text
        key = int(hashlib.sha256(f"nbgrader {COURSE_ID}".encode()).hexdigest()[:15], 16)  # fits a bigint
        engine = create_engine(db_url)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT pg_advisory_lock(:key)"), {"key": key})
                conn.commit()
                try:
                    yield
                finally:
                    conn.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})
                    conn.commit()
        finally:
            engine.dispose()
    elif db_url.startswith("sqlite:///") and db_url != "sqlite:///:memory:":
        with file_lock(Path(db_url[len("sqlite:///"):] + ".lock")):
            yield
    else:
        with file_lock(Path(out) / ".gradebook.lock"):
            yield


def submitted_students(db_url: str) -> set:
    """Ids of the students who have a submission of the assignment in the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        try:
            return {s.student.id for s in gb.find_assignment(ASSIGNMENT).submissions}
        except MissingEntry:
            return set()


def zero_submission(db_url: str, student: str):
    """Record a submission nbgrader could not grade: every autograded score 0, as nbgrader does for a
    missing notebook, so no score from an earlier submission survives. Manual scores are kept."""
    from nbgrader.api import Gradebook
    with warnings.catch_warnings(), Gradebook(db_url, course_id=COURSE_ID) as gb:
        # in `grade`'s own process too (a submission with nothing to run), where its log is the instructor's
        warnings.filterwarnings("ignore", message=NOT_IN_SESSION)
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(ASSIGNMENT, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
        gb.db.commit()


def newest_record(folders, student: str) -> tuple:
    """(the output folder, of `folders`, that holds the student's newest readable record, that record), or
    (None, None)."""
    records = [(state_path(f, student).stat().st_mtime, f, load_state(f, student))
               for f in folders if state_path(f, student).is_file()]
    records = [r for r in records if r[2] is not None]
    return max(records, key=lambda r: r[0])[1:] if records else (None, None)


def _gradebook_items(gb, student: str) -> dict:
    """{grade id: (score, max score, autograded score or None)} from the gradebook; manual items only once
    graded. The third is set where an instructor changed an autograded score in formgrader."""
    from nbgrader.api import MissingEntry
    try:
        notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
    except MissingEntry:
        return {}
    found = {}
    manual = {i.id for i in MANUAL_ITEMS}
    for grade in notebook.grades:
        # a written answer counts once scored by hand for the text it holds now (answers.py marks one whose text
        # changed since as needing a manual grade again: its old score is not this answer's)
        if grade.name in manual and (grade.manual_score is None or grade.needs_manual_grade):
            continue
        changed = grade.auto_score is not None and grade.manual_score is not None
        found[grade.name] = (float(grade.score or 0.0), float(grade.max_score),
                             float(grade.auto_score) if changed else None)
    return found


def _recorded_score(recorded, item) -> tuple:
    """(score, max score) of an autograded item as the student's record holds it: the grader's own numbers,
    which GradeOutOfProcess also wrote into the test cell for nbgrader's gradebook."""
    if not isinstance(recorded, dict):
        return 0.0, float(item.points)
    max_score = float(recorded.get("max_score", item.points))
    return min(float(recorded.get("score", 0.0)), max_score), max_score


def write_class_set_aside(out: Path, entries: list):
    """OUT/set_aside.json: the submissions collect set aside that name no student the class can hold."""
    write_atomic(Path(out) / CLASS_SET_ASIDE, json.dumps([clip_entry(e) for e in entries if isinstance(e, dict)],
                                                          indent=1, sort_keys=True) + "\n")


def class_set_aside(folders) -> list:
    """What the folders' set_aside.json files hold, together."""
    found = []
    for folder in folders:
        try:
            entries = json.loads((Path(folder) / CLASS_SET_ASIDE).read_text())
        except (OSError, ValueError):
            continue
        found += [clip_entry(e) for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []
    return found


def export(out: Path, db_url: str, students=None, sources=(), settings: Settings = None) -> dict:
    """Write grades.json and grades.csv; returns the grades.json document.

    The students are those given, else every student with a state file in `out` or in the
    output folders `sources` (of other shards). The autograded scores come from each student's record
    (state.py), which the grading step wrote; the gradebook gives only what people scored in formgrader:
    the written answers, and an instructor's score for an autograded item (then "overridden" keeps the
    grader's).
    """
    out = Path(out)
    with file_lock(out / ".export.lock"):  # shards sharing `out`: the last to export sees every state
        doc = collect(out, db_url, students, sources, settings)
        record_penalties(db_url, {s: r["submission"]["penalty"] for s, r in doc["students"].items()
                                  if usable_id(s) and r["status"] != "error"})
        write_atomic(out / "grades.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
        write_atomic(out / "grades.csv", to_csv(doc))
    return doc


def record_penalties(db_url: str, penalties: dict):
    """Each student's late penalty as nbgrader's gradebook holds it (the notebook's late_submission_penalty), so
    that formgrader and the feedback page show the score less the penalty, as grades.json's total is."""
    from nbgrader.api import Gradebook, MissingEntry
    with warnings.catch_warnings(), Gradebook(db_url, course_id=COURSE_ID) as gb:
        warnings.filterwarnings("ignore", message=NOT_IN_SESSION)
        for student, penalty in penalties.items():
            try:
                notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)
            except MissingEntry:
                continue
            wanted = penalty or None
            if notebook.late_submission_penalty != wanted:
                notebook.late_submission_penalty = wanted
        gb.db.commit()


def class_students(out: Path, sources=()) -> list:
    """Every student with a state file in `out` or in the output folders `sources` (of other shards)."""
    return sorted({s for f in [Path(out), *map(Path, sources)] for s in recorded_students(f)})


def collect(out: Path, db_url: str, students=None, sources=(), settings: Settings = None) -> dict:
    """The grades.json document (see export), from the state files and the gradebook; writes nothing.
    `settings`: the course's (settings.py), for each submission's lateness; no due date when None."""
    from nbgrader.api import Gradebook
    settings = settings or Settings()
    folders = [Path(out), *map(Path, sources)]
    if students is None:
        students = class_students(out, sources)
    doc = {"assignment": ASSIGNMENT, "students": {}}
    aside = class_set_aside(folders)
    if aside:
        doc["set_aside"] = aside
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        for student in sorted(students):
            state = newest_record(folders, student)[1]
            status, reason = (state.status, clip(state.reason, "reason")) if state else ("error", NOT_GRADED_YET)
            scores = _gradebook_items(gb, student) if status != "error" else {}
            recorded = state.items if state else {}
            items, overridden = {}, {}
            for item in ITEMS:
                if item.kind == "auto":  # every autograded item gets a row, 0 when nothing was graded
                    score, max_score = _recorded_score(recorded.get(item.id), item)
                    if scores.get(item.id, (0, 0, None))[2] is not None:  # an instructor's score in formgrader
                        overridden[item.id] = round(score, 4)
                        score = scores[item.id][0]
                elif item.id in scores:  # a written answer, once graded by hand
                    score, max_score, _ = scores[item.id]
                else:
                    continue
                items[item.id] = {"score": round(score, 4), "max_score": max_score}
            submission = lateness(state.submission if state else {}, student, settings)
            earned = sum(v["score"] for v in items.values())
            submission["penalty"] = round(min(submission["penalty"], earned), 4)  # no total below 0
            doc["students"][student] = {
                "status": status, "reason": reason, "items": items,
                "total": round(earned - submission["penalty"], 4),
                "max_total": round(sum(v["max_score"] for v in items.values()), 4),
                "submission": submission,
            }
            if state and state.not_checked:  # behaviours a missing protection left unchecked (protections.py)
                doc["students"][student]["not_checked"] = state.not_checked
            if state and state.weaker:
                doc["students"][student]["weaker_isolation"] = list(state.weaker)
            if state and state.submission.get("set_aside"):  # submissions naming this student, not theirs
                doc["students"][student]["set_aside"] = state.submission["set_aside"]
            rubric = {i: r for i, r in (state.rubric if state else {}).items() if i not in overridden}
            if rubric:  # per-behaviour detail of the autograded items, as graded
                doc["students"][student]["rubric"] = rubric
            if overridden:  # items an instructor scored in formgrader: the grader's own score
                doc["students"][student]["overridden"] = overridden
            if state and state.review:  # items set aside for manual grading: what the guard caught
                doc["students"][student]["review"] = state.review
    return doc


def waiting_for_hand(db_url: str, students) -> dict:
    """{student: [grade ids]}: the written answers (manual items) in the gradebook that have no manual score yet."""
    from nbgrader.api import Gradebook, MissingEntry
    manual, waiting = [i.id for i in MANUAL_ITEMS], {}
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        for student in students:
            try:
                grades = {g.name: g for g in gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student).grades}
            except MissingEntry:
                continue
            left = [i for i in manual if i in grades and (grades[i].manual_score is None
                                                          or grades[i].needs_manual_grade)]
            if left:
                waiting[student] = left
    return waiting


def to_csv(doc: dict) -> str:
    """grades.csv: one row per student, every cell inert in a spreadsheet (spreadsheet_cell).

    A student whose folder name is not a usable id (staging.usable_id) was refused for grading: their row
    says so in its first cell, the name neutralised like any other text."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    ids = [i.id for i in ITEMS]
    writer.writerow(["student_id", *ids, "total", "review", *CSV_TAIL])
    for student, row in sorted(doc["students"].items()):
        name = student if usable_id(student) else refused_id_cell(student)
        submission = row.get("submission", {})
        late = submission.get("late_seconds")
        cells = [name, *(row["items"].get(i, {}).get("score", "") for i in ids), row["total"], review_cell(row),
                 submission.get("time") or "", "" if late is None else late, submission.get("penalty", 0.0)]
        writer.writerow([spreadsheet_cell(c) for c in cells])
    return buf.getvalue()


def review_cell(row: dict) -> str:
    """grades.csv's review column: the grade ids set aside for manual grading, then what else needs a person:
    `not_checked:<grade id>` (a protection was missing), `set_aside` (a submission naming the student was not
    theirs), `lateness_unknown` or `time_flagged` (the submission's time), `weaker_isolation`."""
    words = sorted(row.get("review", {}))
    words += [f"not_checked:{i}" for i in sorted(row.get("not_checked", {}))]
    flags = row.get("submission", {}).get("flags", [])
    words += (["set_aside"] if row.get("set_aside") else []) + (["weaker_isolation"] if row.get("weaker_isolation") else [])
    if row.get("submission", {}).get("late_seconds", 0) is None:
        words.append("lateness_unknown")
    elif flags:
        words.append("time_flagged")
    return " ".join(words)


def spreadsheet_cell(value):
    """`value` as a spreadsheet reads it inertly: text starting like a formula gets a leading "'"; a number,
    or text that is a finite number (-2.5), stays as it is."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    text = str(value)
    try:
        if text == text.strip() and math.isfinite(float(text)):
            return text
    except ValueError:
        pass
    return "'" + text if text.startswith(FORMULA_STARTS) else text
