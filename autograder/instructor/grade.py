"""`python -m autograder grade`: grade a whole class through nbgrader, in parallel, resumably.

For each student: stage a clean copy of the submission, run nbgrader's Autograde (whose
GradeOutOfProcess step runs the code in the sandbox), write the feedback, and record a state
file. A student whose submission, grader and settings are unchanged since the last run, and
whose grades are in the gradebook, is skipped: re-running is idempotent and an interrupted
run picks up where it stopped. At the end, grades.json and grades.csv are exported.

Shards (`--shard i/n`, `--students GLOB`) let several processes or machines grade one class
into one gradebook (PostgreSQL for machines): the gradebook is set up under a lock, and each
student is graded by exactly one shard.
"""
import concurrent.futures as futures
import fnmatch
import hashlib
import html
import json
import logging
import multiprocessing
import os
import re
import shutil
import sys
import time
import warnings
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS
from .gradebook import (COURSE_ID, export, gradebook_lock, load_state, normalise_db_url, save_state,
                        submitted_students, zero_submission)

ROOT = Path(__file__).resolve().parents[2]
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_NOTEBOOK_BYTES = 20 * 2**20
EXCHANGE_FILES = ("timestamp.txt", "submission_secret.txt")  # written by `nbgrader submit` and `collect`
DB_ERRORS = ("sqlalchemy", "psycopg", "InvalidEntry", "database is locked", "OperationalError")
# where nbgrader's steps read and write, inside a class's OUT folder
CLASS_FOLDERS = {"submitted_directory": ".staging", "autograded_directory": "autograded",
                 "feedback_directory": "feedback", "release_directory": ".release"}
NOT_GRADING = {"quiz.py", "quizzes.py", "__main__.py"}  # quiz widgets and the command line decide no grade


def grader_fingerprint() -> str:
    """Changes whenever the checks, the grader, its configuration or the reference change: then every
    student is regraded."""
    h = hashlib.sha256()
    pkg = ROOT / "autograder"
    code = [p for p in sorted(pkg.rglob("*.py")) + sorted(pkg.rglob("*.ini")) if p.name not in NOT_GRADING]
    for path in code + [ROOT / "nbgrader_config.py"] + sorted((ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb")):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def submission_fingerprint(folder: Path) -> str:
    h = hashlib.sha256()
    if folder.is_dir():
        for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            h.update(str(path.relative_to(folder)).encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def select_students(submitted: Path, patterns=None, shard=None) -> list:
    """Student folders under `submitted`, filtered by glob patterns and by a shard "i/n" (1-based).

    A student's shard depends on their id alone, so every machine agrees without talking.
    """
    names = sorted(p.name for p in submitted.iterdir() if p.is_dir() and not p.name.startswith("."))
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, pat) for pat in patterns)]
    if shard:
        index, count = shard
        names = [n for n in names if int(hashlib.sha256(n.encode()).hexdigest(), 16) % count == index - 1]
    return names


def parse_shard(text: str):
    m = re.fullmatch(r"(\d+)/(\d+)", text or "")
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise ValueError(f"--shard takes i/n with 1 <= i <= n, for example 2/5; got {text!r}")
    return int(m.group(1)), int(m.group(2))


def nbgrader_config(out: Path, db_url: str, limits: dict):
    """The repo's nbgrader_config.py, pointed at this class's folders and gradebook."""
    from traitlets.config.loader import PyFileConfigLoader
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    cfg.CourseDirectory.root = str(ROOT)
    cfg.CourseDirectory.course_id = COURSE_ID
    for setting, folder in CLASS_FOLDERS.items():
        setattr(cfg.CourseDirectory, setting, str(out / folder))
    cfg.CourseDirectory.db_url = db_url
    cfg.GradeOutOfProcess.timeout = float(limits["timeout"])
    cfg.GradeOutOfProcess.memory_mb = int(limits["memory_mb"])
    cfg.GradeOutOfProcess.results_dir = str(out / ".results")
    return cfg


def put_alembic_on_path():
    """nbgrader stamps a new gradebook by running `alembic`, which is installed next to this
    interpreter; a virtualenv that was not activated leaves it off PATH."""
    here = os.path.dirname(sys.executable)
    if here not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")


def prepare_gradebook(cfg, out: Path, attempts: int = 5):
    """Make sure the gradebook knows the assignment and its cells (generate_assignment into it).

    Under the gradebook lock, so that of several shards starting at once exactly one creates
    the tables, the course and the assignment, and the others find them.
    """
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    db_url = cfg.CourseDirectory.db_url
    for attempt in range(attempts):
        try:
            with gradebook_lock(db_url, out):
                with Gradebook(db_url, course_id=COURSE_ID) as gb:
                    try:
                        if gb.find_assignment(ASSIGNMENT).notebooks:
                            return
                    except MissingEntry:
                        pass
                coursedir = CourseDirectory(config=cfg)
                coursedir.assignment_id = ASSIGNMENT
                app = GenerateAssignment(coursedir=coursedir, config=cfg)
                app.force = True
                app.log.setLevel(logging.ERROR)
                app.start()
                return
        except Exception:  # the database may be starting up, or briefly unreachable
            if attempt == attempts - 1:
                raise
            time.sleep(1 + attempt)


def stage(student: str, submitted: Path, staging: Path):
    """Copy the student's notebooks to a clean folder nbgrader may use; return (notes, problem)."""
    from ..extract import read_notebook
    src = submitted / student / ASSIGNMENT
    dest = staging / student / ASSIGNMENT
    shutil.rmtree(staging / student, ignore_errors=True)
    if not STUDENT_ID.match(student):
        return [], f"the folder name {student!r} is not a usable student id (letters, digits and _.@+- only)"
    dest.mkdir(parents=True)
    if not src.is_dir():
        return [], f"no {ASSIGNMENT}/ folder in the submission"
    notebooks = sorted(p for p in src.glob("*.ipynb") if p.is_file() and not p.is_symlink())
    notes, problems = [], []
    if not (src / f"{ASSIGNMENT}.ipynb").is_file() and len(notebooks) == 1:
        notes.append(f"graded {notebooks[0].name} as {ASSIGNMENT}.ipynb")
        notebooks = [(notebooks[0], f"{ASSIGNMENT}.ipynb")]
    else:
        notebooks = [(p, p.name) for p in notebooks]
    for path, name in notebooks:
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            problems.append(f"{path.name} is larger than {MAX_NOTEBOOK_BYTES >> 20} MiB")
            continue
        try:
            read_notebook(path)
        except ValueError as exc:
            problems.append(str(exc))
            continue
        shutil.copyfile(path, dest / name)
    for name in EXCHANGE_FILES:  # nbgrader's own: late penalties, and release_feedback's check
        path = src / name
        if path.is_file() and not path.is_symlink() and path.stat().st_size < 4096:
            shutil.copyfile(path, dest / name)
    if not (dest / f"{ASSIGNMENT}.ipynb").exists():
        problems.append(f"no readable {ASSIGNMENT}.ipynb in the submission" if notebooks
                        else f"no notebook in {ASSIGNMENT}/")
    return notes, "; ".join(problems)


class _ErrorLog(logging.Handler):
    """Keeps nbgrader's error messages (it logs a failure's cause, then raises a generic exception)."""

    def __init__(self):
        super().__init__(logging.ERROR)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())

    def cause(self) -> str:
        for message in self.messages:
            if message.startswith("Traceback"):
                return message.strip().splitlines()[-1]
        return next((m for m in self.messages if not m.startswith("There was an error")), "")


def _quiet_nbgrader() -> _ErrorLog:
    """Route nbgrader's log (in this worker process) to a collector instead of the terminal."""
    warnings.filterwarnings("ignore", message=".*not in session.*")  # nbgrader 0.9 on SQLAlchemy 2
    errors = _ErrorLog()
    log = logging.getLogger("traitlets")
    log.handlers[:] = [errors]
    log.propagate = False
    log.setLevel(logging.ERROR)
    return errors


def _run_nbgrader(cfg, student: str, converter: str) -> str:
    """Run one nbgrader converter (Autograde or GenerateFeedback) for one student; return its error, or ''."""
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    errors = _quiet_nbgrader()
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id, coursedir.student_id = ASSIGNMENT, student
    try:
        if converter == "autograde":
            app = Autograde(coursedir=coursedir, config=cfg)
            app.create_student = True
        else:
            feedback_cfg = Config(cfg)
            feedback_cfg.HTMLExporter.template_name = "feedback"
            app = GenerateFeedback(coursedir=coursedir, config=feedback_cfg)
        app.force = True
        app.start()
    except Exception as exc:
        return errors.cause() or f"{type(exc).__name__}: {exc}"
    return ""


def _with_retries(cfg, student: str, converter: str, attempts: int = 3) -> str:
    """Retry when the gradebook was busy or unreachable, which is not the submission's fault."""
    for attempt in range(attempts):
        error = _run_nbgrader(cfg, student, converter)
        if not is_db_error(error):
            return error
        time.sleep(1 + 2 * attempt)
    return error


def is_db_error(error: str) -> bool:
    return any(e in error for e in DB_ERRORS)


def begin_student(student: str, submitted: Path, out: Path, limits: dict) -> dict:
    """Clear the student's earlier outputs and stage the submission (cheap: in the main process).

    Returns the record so far; `notes` and `problem` say what staging found, and nothing is left
    to run when there is no notebook to grade."""
    record = {"student": student, "fingerprint": fingerprint(submitted / student, limits),
              "status": "graded", "reason": "", "items": {}}
    for folder in ("autograded", "feedback"):  # nothing from an earlier submission may survive
        shutil.rmtree(out / folder / student, ignore_errors=True)
    (out / ".results" / f"{student}.{ASSIGNMENT}.json").unlink(missing_ok=True)
    notes, problem = stage(student, submitted, out / ".staging")
    record["notes"], record["problem"] = notes, problem
    return record


def gradable(record: dict, out: Path) -> bool:
    student = record["student"]
    return bool(STUDENT_ID.match(student)) and (out / ".staging" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").exists()


def grade_student(record: dict, out: str, db_url: str, limits: dict) -> dict:
    """Grade one staged student (in a worker process unless there is nothing to run); returns the
    state record written for them."""
    out, record = Path(out), dict(record)
    student, notes, problem = record["student"], list(record.pop("notes")), record.pop("problem")
    if not STUDENT_ID.match(student):  # not in the gradebook; `problem` says why
        record["status"] = "failed"
    elif not gradable(record, out):
        zero_submission(db_url, student)
        record["status"] = "failed"
    else:
        cfg = nbgrader_config(out, db_url, limits)
        error = _with_retries(cfg, student, "autograde")
        if is_db_error(error):
            # not the submission's fault: no fingerprint, so the next run grades this student again
            record.update(status="error", fingerprint="", reason=f"gradebook error: {error}"[:500])
        elif error:  # nbgrader refused the submission (e.g. broken cell metadata): it gets zeros
            zero_submission(db_url, student)
            record.update(status="failed", reason=f"nbgrader could not autograde it: {error}"[:500])
        else:
            error = _with_retries(cfg, student, "feedback")
            if error:
                notes.append(f"no feedback: {error}"[:300])
        results = out / ".results" / f"{student}.{ASSIGNMENT}.json"
        if record["status"] == "graded" and results.exists():  # what the sandboxed run said, for people
            graded = json.loads(results.read_text())
            record.update(status=graded["status"], reason=graded["reason"],
                          items={i: {"score": r["score"], "max_score": r["max_score"]}
                                 for i, r in graded["items"].items()})
        elif record["status"] == "graded":
            record.update(status="failed", reason="the grader wrote no results")
        problem = "; ".join(filter(None, [problem] + notes))
    record["reason"] = "; ".join(filter(None, [problem, record["reason"]]))
    if not (out / "feedback" / student / ASSIGNMENT).is_dir():
        write_failure_feedback(out, record)
    save_state(out, record)
    return record


def write_failure_feedback(out: Path, record: dict):
    """feedback/<student>/lesson20/lesson20.html for a submission nbgrader produced no feedback for."""
    rows = "".join(f"<tr><td>{html.escape(i.title)}</td><td>0 / {i.points:g}</td></tr>" for i in AUTO_ITEMS)
    page = (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{ASSIGNMENT} feedback</title></head>"
            f"<body><h1>{ASSIGNMENT}: your submission could not be graded</h1>"
            f"<p>Status: {html.escape(record['status'])}. {html.escape(record['reason'])}</p>"
            f"<p>Submit <code>{ASSIGNMENT}/{ASSIGNMENT}.ipynb</code>, saved from Jupyter, and ask your "
            f"instructor to grade it again.</p><table>{rows}</table></body></html>\n")
    path = out / "feedback" / record["student"] / ASSIGNMENT / f"{ASSIGNMENT}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)


def fingerprint(folder: Path, limits: dict) -> str:
    """What a student's grades depend on: their files, the grader, and the limits it ran under."""
    return f"{submission_fingerprint(folder)}-{limits['grader']}-{limits['timeout']:g}s-{limits['memory_mb']}MB"


def run(submitted_dir, out_dir, jobs=None, db_url=None, timeout=60.0, memory_mb=4096,
        students=None, shard=None, progress=True, force=False) -> dict:
    """Grade every selected student that needs it (all of them with `force`), then export;
    returns the grades.json document."""
    submitted, out = Path(submitted_dir).resolve(), Path(out_dir).resolve()
    if not submitted.is_dir():
        raise SystemExit(f"no such folder: {submitted}")
    out.mkdir(parents=True, exist_ok=True)
    db_url = normalise_db_url(db_url or f"sqlite:///{out / 'gradebook.db'}")
    limits = {"timeout": float(timeout), "memory_mb": int(memory_mb), "grader": grader_fingerprint()}
    names = select_students(submitted, students, shard)
    put_alembic_on_path()
    prepare_gradebook(nbgrader_config(out, db_url, limits), out)
    write_formgrader_config(out, db_url)

    in_gradebook = submitted_students(db_url)
    todo = []
    for name in names:
        state = load_state(out, name)
        if (force or not state or state.get("fingerprint") != fingerprint(submitted / name, limits)
                or (STUDENT_ID.match(name) and name not in in_gradebook)):  # e.g. a new or emptied gradebook
            todo.append(name)
    print(f"{len(names)} students selected: grading {len(todo)}, "
          f"{len(names) - len(todo)} unchanged since the last run", file=sys.stderr, flush=True)
    if todo:
        _grade_all(todo, submitted, out, db_url, limits, max(1, jobs or os.cpu_count() or 1), progress)
    return export(out, db_url)


def _worker_init():
    """Each grading process dies with the command that started it (Linux), so a killed run leaves
    nothing behind; the sandboxes die with their grading process."""
    if sys.platform.startswith("linux"):
        import ctypes
        import signal
        try:
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass


def _grade_all(todo, submitted, out, db_url, limits, jobs, progress):
    from tqdm.auto import tqdm
    bar = tqdm(total=len(todo), desc="grading", unit="student", disable=not progress)
    staged = {}
    for student in todo:  # staging is quick; a submission with nothing to run is finished right here
        record = begin_student(student, submitted, out, limits)
        if gradable(record, out):
            staged[student] = record
        else:
            record = grade_student(record, str(out), db_url, limits)
            bar.set_postfix_str(f"{student}: {record['status']}")
            bar.update(1)
    context = multiprocessing.get_context("spawn")  # no forked torch or sqlite state in workers
    attempts = {s: 0 for s in staged}
    pending, finished = list(staged), set()
    while pending:
        for s in pending:
            attempts[s] += 1
        with futures.ProcessPoolExecutor(max_workers=min(jobs, len(pending)), mp_context=context,
                                         initializer=_worker_init) as pool:
            running = {pool.submit(grade_student, staged[s], str(out), db_url, limits): s for s in pending}
            try:
                for done in futures.as_completed(running):
                    student = running[done]
                    try:
                        record = done.result()
                        bar.set_postfix_str(f"{student}: {record['status']}")
                    except futures.process.BrokenProcessPool:
                        raise
                    except Exception as exc:  # a bug of ours on this one submission: record it, go on
                        _record_error(out, student, exc)
                    finished.add(student)
                    bar.update(1)
                pending = []
            except futures.process.BrokenProcessPool as exc:
                # a grading process died (ours, not the sandbox): regrade the unfinished ones in a fresh
                # pool; a student that breaks it twice is recorded as an error instead
                pending = [s for s in running.values() if s not in finished]
                for s in [s for s in pending if attempts[s] >= 2]:
                    _record_error(out, s, exc)
                    bar.update(1)
                pending = [s for s in pending if attempts[s] < 2]
    bar.close()


def _record_error(out: Path, student: str, exc: BaseException):
    save_state(out, {"student": student, "fingerprint": "", "status": "error",
                     "reason": f"grader error: {type(exc).__name__}: {exc}"[:500], "items": {}})


def write_formgrader_config(out: Path, db_url: str):
    """OUT/nbgrader_config.py: start Jupyter in OUT to grade the written answers of this class in formgrader."""
    from .gradebook import _write
    folders = "".join(f"c.CourseDirectory.{setting} = os.path.join(here, {folder!r})\n"
                      for setting, folder in CLASS_FOLDERS.items())
    text = f'''# Written by `python -m autograder grade`. Start `jupyter lab` in this folder to open
# nbgrader's formgrader on this class: the repository's configuration, pointed at these grades.
import os

c = get_config()  # noqa: F821
load_subconfig({str(ROOT / "nbgrader_config.py")!r})  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
# formgrader wants the course root inside the folder Jupyter serves: the root is this folder,
# and the instructor notebooks are found in the repository by their absolute path
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = {str(ROOT / "solutions")!r}
{folders}c.CourseDirectory.db_url = {db_url!r}
'''
    _write(out / "nbgrader_config.py", text)
