"""Grades out of nbgrader's gradebook: per-student state files, grades.json and grades.csv.

The gradebook holds the scores (including any an instructor changes or adds in formgrader);
the state files hold what the gradebook cannot: each submission's status and reason.
Several `grade` processes (shards) may share one gradebook and even one output folder, so
setting up the gradebook and writing the exports happen under a lock.
"""
import contextlib
import csv
import hashlib
import io
import json
import os
from pathlib import Path

from ..items import ASSIGNMENT, ITEMS, MANUAL_ITEMS

COURSE_ID = "lesson20"


def state_path(out: Path, student: str) -> Path:
    return Path(out) / "state" / f"{student}.json"


def load_state(out: Path, student: str):
    try:
        return json.loads(state_path(out, student).read_text())
    except (OSError, ValueError):
        return None


def save_state(out: Path, record: dict):
    _write(state_path(out, record["student"]), json.dumps(record, indent=1, sort_keys=True), force=True)


def recorded_students(out: Path) -> list:
    """Every student with a state file in this output folder."""
    return sorted(p.stem for p in (Path(out) / "state").glob("*.json"))


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
def file_lock(path: Path):
    """An exclusive lock on a file, held by this process until the block ends (POSIX; no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # Windows: one grading process per output folder
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


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
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        gb.update_or_create_student(student)
        submission = gb.update_or_create_submission(ASSIGNMENT, student)
        for notebook in submission.notebooks:
            for grade in notebook.grades:
                grade.auto_score = 0
                grade.needs_manual_grade = False
        gb.db.commit()


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


def _newest_state(folders, student: str):
    states = [(state_path(f, student).stat().st_mtime, load_state(f, student))
              for f in folders if state_path(f, student).is_file()]
    states = [s for s in states if s[1]]
    return max(states, key=lambda s: s[0])[1] if states else None


def export(out: Path, db_url: str, students=None, sources=()) -> dict:
    """Write grades.json and grades.csv; returns the grades.json document.

    The students are those given, else every student with a state file in `out` or in the
    output folders `sources` (of other shards). Scores come from the gradebook.
    """
    from nbgrader.api import Gradebook
    out = Path(out)
    folders = [out, *map(Path, sources)]
    with file_lock(out / ".export.lock"):  # shards sharing `out`: the last to export sees every state
        if students is None:
            students = sorted({s for f in folders for s in recorded_students(f)})
        doc = {"assignment": ASSIGNMENT, "students": {}}
        with Gradebook(db_url, course_id=COURSE_ID) as gb:
            for student in sorted(students):
                state = _newest_state(folders, student) or {"status": "error", "reason": "not graded yet"}
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


def _write(path: Path, text: str, force: bool = False):
    """Replace a file atomically (readers never see half of it); leave it alone if unchanged."""
    if not force and path.exists() and path.read_text() == text:
        return  # unchanged: leave the file (and its modification time) alone
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")  # per process: shards may share `out`
    tmp.write_text(text)
    os.replace(tmp, path)
