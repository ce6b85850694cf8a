"""`python -m autograder grade`: grade a whole class through nbgrader, in parallel, resumably.

For each student: stage a clean copy of the submission, run nbgrader's Autograde (whose
GradeOutOfProcess step runs the code in the sandbox), write the feedback, and record a state
file. A student whose submission and grader are unchanged since the last run is skipped, so
re-running is idempotent and an interrupted run picks up where it stopped. At the end,
grades.json and grades.csv are exported from the gradebook.
"""
import concurrent.futures as futures
import fnmatch
import hashlib
import json
import logging
import multiprocessing
import os
import re
import shutil
import time
import warnings
from pathlib import Path

from ..items import ASSIGNMENT
from .gradebook import export, load_state, save_state

ROOT = Path(__file__).resolve().parents[2]
STUDENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,99}$")
MAX_NOTEBOOK_BYTES = 20 * 2**20


def grader_fingerprint() -> str:
    """Changes whenever the checks, the grader or the reference change: then every student is regraded."""
    h = hashlib.sha256()
    pkg = ROOT / "autograder"
    for path in sorted(pkg.rglob("*.py")) + sorted((ROOT / "solutions" / ASSIGNMENT).glob("*.ipynb")):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def submission_fingerprint(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        h.update(str(path.relative_to(folder)).encode())
        h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()[:16]


def select_students(submitted: Path, patterns=None, shard=None) -> list:
    """Student folders under `submitted`, filtered by glob patterns and by a shard "i/n" (1-based)."""
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
    cfg.CourseDirectory.submitted_directory = str(out / ".staging")
    cfg.CourseDirectory.autograded_directory = str(out / "autograded")
    cfg.CourseDirectory.feedback_directory = str(out / "feedback")
    cfg.CourseDirectory.release_directory = str(out / ".release")
    cfg.CourseDirectory.db_url = db_url
    cfg.GradeOutOfProcess.timeout = float(limits["timeout"])
    cfg.GradeOutOfProcess.memory_mb = int(limits["memory_mb"])
    cfg.GradeOutOfProcess.results_dir = str(out / ".results")
    return cfg


def prepare_gradebook(cfg, attempts: int = 5):
    """Make sure the gradebook knows the assignment and its cells (generate_assignment into it)."""
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    for attempt in range(attempts):
        try:
            with Gradebook(cfg.CourseDirectory.db_url, course_id="lesson20") as gb:
                try:
                    assignment = gb.find_assignment(ASSIGNMENT)
                    if assignment.notebooks:
                        return
                except MissingEntry:
                    pass
            coursedir = CourseDirectory(config=cfg)
            coursedir.assignment_id = ASSIGNMENT
            app = GenerateAssignment(coursedir=coursedir, config=cfg)
            app.force = True
            app.start()
            return
        except Exception:  # another grading process may be creating it right now (shards)
            if attempt == attempts - 1:
                raise
            time.sleep(1 + attempt)


def stage(student: str, submitted: Path, staging: Path):
    """Copy the student's notebooks to a clean folder nbgrader may use; return (notes, reason)."""
    from ..extract import read_notebook
    src = submitted / student / ASSIGNMENT
    dest = staging / student / ASSIGNMENT
    shutil.rmtree(staging / student, ignore_errors=True)
    dest.mkdir(parents=True)
    if not STUDENT_ID.match(student):
        return [], f"the folder name {student!r} is not a usable student id (letters, digits and _.@+- only)"
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
    if (src / "timestamp.txt").is_file() and not (src / "timestamp.txt").is_symlink():
        shutil.copyfile(src / "timestamp.txt", staging / student / ASSIGNMENT / "timestamp.txt")
    if not (dest / f"{ASSIGNMENT}.ipynb").exists():
        problems.append(f"no readable {ASSIGNMENT}.ipynb in the submission")
    return notes, "; ".join(problems)


def grade_student(student: str, submitted: str, out: str, db_url: str, limits: dict) -> dict:
    """Grade one student (in a worker process); returns the state record written for them."""
    from nbgrader.converters import Autograde, GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config

    logging.getLogger("traitlets").setLevel(logging.ERROR)
    # nbgrader 0.9 with SQLAlchemy 2 warns about autoflush inside its own code; the grades are unaffected
    warnings.filterwarnings("ignore", message=".*not in session.*")
    submitted, out = Path(submitted), Path(out)
    fingerprint = submission_fingerprint(submitted / student) + "-" + limits["grader"]
    notes, problem = stage(student, submitted, out / ".staging")
    record = {"student": student, "fingerprint": fingerprint, "status": "graded", "reason": "", "items": {}}
    results = out / ".results" / f"{student}.{ASSIGNMENT}.json"
    results.unlink(missing_ok=True)
    cfg = nbgrader_config(out, db_url, limits)
    try:
        coursedir = CourseDirectory(config=cfg)
        coursedir.assignment_id, coursedir.student_id = ASSIGNMENT, student
        if STUDENT_ID.match(student):
            app = Autograde(coursedir=coursedir, config=cfg)
            app.force, app.create_student = True, True
            app.log.setLevel(logging.ERROR)
            app.start()
            feedback_cfg = Config(cfg)
            feedback_cfg.HTMLExporter.template_name = "feedback"
            feedback = GenerateFeedback(coursedir=coursedir, config=feedback_cfg)
            feedback.force = True
            feedback.log.setLevel(logging.ERROR)
            feedback.start()
    except Exception as exc:  # nbgrader refused the submission; it still gets a row, with zeros
        record.update(status="failed", reason=f"nbgrader could not autograde it: {type(exc).__name__}: {exc}"[:500])
    if results.exists():
        graded = json.loads(results.read_text())
        record["items"] = graded["items"]
        if graded["status"] != "graded" or record["status"] == "graded":
            record["status"] = graded["status"]
        record["reason"] = "; ".join(filter(None, [record["reason"], graded["reason"]]))
    elif record["status"] == "graded":
        record["status"] = "failed"
    record["reason"] = "; ".join(filter(None, notes + [problem, record["reason"]]))
    save_state(out, record)
    return record


def run(submitted_dir, out_dir, jobs=None, db_url=None, timeout=60.0, memory_mb=4096,
        students=None, shard=None, progress=True) -> dict:
    """Grade every selected student; returns the grades.json document."""
    submitted, out = Path(submitted_dir).resolve(), Path(out_dir).resolve()
    if not submitted.is_dir():
        raise SystemExit(f"no such folder: {submitted}")
    out.mkdir(parents=True, exist_ok=True)
    db_url = db_url or f"sqlite:///{out / 'gradebook.db'}"
    limits = {"timeout": timeout, "memory_mb": memory_mb, "grader": grader_fingerprint()}
    names = select_students(submitted, students, shard)
    prepare_gradebook(nbgrader_config(out, db_url, limits))
    write_formgrader_config(out, db_url)

    todo = []
    for name in names:
        state = load_state(out, name)
        folder = submitted / name
        current = submission_fingerprint(folder) + "-" + limits["grader"]
        if not state or state.get("fingerprint") != current:
            todo.append(name)
    jobs = max(1, jobs or os.cpu_count() or 1)
    if todo:
        _grade_all(todo, submitted, out, db_url, limits, jobs, progress)
    return export(out, db_url, names)


def _grade_all(todo, submitted, out, db_url, limits, jobs, progress):
    from tqdm.auto import tqdm
    bar = tqdm(total=len(todo), desc="grading", unit="student", disable=not progress)
    context = multiprocessing.get_context("spawn")  # no forked torch or sqlite state in workers
    attempts = {s: 0 for s in todo}
    pending = list(todo)
    while pending:
        for s in pending:
            attempts[s] += 1
        with futures.ProcessPoolExecutor(max_workers=min(jobs, len(pending)), mp_context=context) as pool:
            running = {pool.submit(grade_student, s, str(submitted), str(out), db_url, limits): s for s in pending}
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
                    bar.update(1)
                pending = []
            except futures.process.BrokenProcessPool as exc:
                # a grading process died (ours, not the sandbox): regrade the unrecorded ones in a fresh
                # pool; a student that breaks it twice is recorded as an error instead
                pending = [s for s in running.values() if load_state(out, s) is None]
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
    text = f'''# Written by `python -m autograder grade`. Start `jupyter lab` in this folder to open
# nbgrader's formgrader on this class: the repository's configuration, pointed at these grades.
import os

c = get_config()  # noqa: F821
load_subconfig({str(ROOT / "nbgrader_config.py")!r})  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = {str(ROOT)!r}
c.CourseDirectory.submitted_directory = os.path.join(here, ".staging")
c.CourseDirectory.autograded_directory = os.path.join(here, "autograded")
c.CourseDirectory.feedback_directory = os.path.join(here, "feedback")
c.CourseDirectory.release_directory = os.path.join(here, ".release")
c.CourseDirectory.db_url = {db_url!r}
'''
    path = out / "nbgrader_config.py"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)

