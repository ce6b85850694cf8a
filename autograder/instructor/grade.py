"""`python -m autograder grade`: grade a whole class through nbgrader, in parallel, resumably.

For each student: stage a clean copy of the submission (staging.py), run nbgrader's Autograde,
whose GradeOutOfProcess step runs the code in the sandbox (course.py), write the feedback, and
record a state file (state.py). A student whose submission, grader and settings are unchanged
since the last run, and whose grades are in the gradebook, is skipped: re-running is idempotent
and an interrupted run picks up where it stopped. At the end, grades.json and grades.csv are
exported from the gradebook (gradebook.py).

Shards (`--shard i/n`, `--students GLOB`) let several processes or machines grade one class
into one gradebook (PostgreSQL for machines): the gradebook is set up under a lock, and each
student is graded by exactly one shard.
"""
import concurrent.futures as futures
import hashlib
import html
import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, solution_notebooks
from ..text import clip
from .course import (ROOT, Settings, is_db_error, nbgrader_config, prepare_gradebook, put_alembic_on_path,
                     results_dir, run_with_retries, write_formgrader_config)
from .gradebook import export, normalise_db_url, submitted_students, zero_submission
from .staging import NOTEBOOK, Staged, select_students, stage, staged_notebook, submission_fingerprint, usable_id
from .state import StudentRecord, load_state, save_state

NOT_GRADING = {"quiz.py", "quizzes.py", "__main__.py"}  # quiz widgets and the command line decide no grade


def grader_fingerprint() -> str:
    """Changes whenever the checks, the grader, its configuration or the reference change: then every
    student is regraded."""
    h = hashlib.sha256()
    pkg = ROOT / "autograder"
    code = [p for p in sorted(pkg.rglob("*.py")) + sorted(pkg.rglob("*.ini")) if p.name not in NOT_GRADING]
    for path in code + [ROOT / "nbgrader_config.py"] + solution_notebooks(ROOT):
        h.update(str(path.relative_to(ROOT)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def fingerprint(folder: Path, settings: Settings, grader: str) -> str:
    """What a student's grades depend on: their files, the grader, and the settings it ran under."""
    return f"{submission_fingerprint(folder)}-{grader}-{settings.timeout:g}s-{settings.memory_mb}MB"


def begin_student(student: str, submitted: Path, out: Path) -> Staged:
    """Clear the student's earlier outputs and stage the submission (cheap: in the main process)."""
    for folder in ("autograded", "feedback"):  # nothing from an earlier submission may survive
        shutil.rmtree(out / folder / student, ignore_errors=True)
    (results_dir(out) / f"{student}.{ASSIGNMENT}.json").unlink(missing_ok=True)
    return stage(student, submitted, out / ".staging")


def gradable(student: str, out: Path) -> bool:
    return usable_id(student) and staged_notebook(out / ".staging", student).exists()


def grade_student(record: StudentRecord, staged: Staged, out: str, db_url: str, settings: Settings) -> StudentRecord:
    """Grade one staged student (in a worker process unless there is nothing to run); returns the
    record written to their state file."""
    out, student, notes = Path(out), record.student, list(staged.notes)
    if not usable_id(student):  # not in the gradebook; staging's problem says why
        record.status = "failed"
    elif not gradable(student, out):
        zero_submission(db_url, student)
        record.status = "failed"
    else:
        cfg = nbgrader_config(out, db_url, settings)
        error = run_with_retries(cfg, student, "autograde")
        if is_db_error(error):
            # not the submission's fault: no fingerprint, so the next run grades this student again
            record.status, record.fingerprint, record.reason = "error", "", clip(f"gradebook error: {error}", "reason")
        elif error:  # nbgrader refused the submission (e.g. broken cell metadata): it gets zeros
            zero_submission(db_url, student)
            record.status, record.reason = "failed", clip(f"nbgrader could not autograde it: {error}", "reason")
        else:
            error = run_with_retries(cfg, student, "feedback")
            if error:
                notes.append(clip(f"no feedback: {error}", "note"))
        results = results_dir(out) / f"{student}.{ASSIGNMENT}.json"
        if record.status == "graded" and results.exists():  # what the sandboxed run said, for people
            graded = json.loads(results.read_text())
            record.status, record.reason = graded["status"], graded["reason"]
            record.rubric = {i: r["rubric"] for i, r in graded["items"].items() if r.get("rubric")}
        elif record.status == "graded":
            record.status, record.reason = "failed", "the grader wrote no results"
    record.reason = clip("; ".join(filter(None, [staged.problem, *notes, record.reason])), "reason")
    if not (out / "feedback" / student / ASSIGNMENT).is_dir():
        write_failure_feedback(out, record)
    save_state(out, record)
    return record


def write_failure_feedback(out: Path, record: StudentRecord):
    """feedback/<student>/lesson20/lesson20.html for a submission nbgrader produced no feedback for."""
    rows = "".join(f"<tr><td>{html.escape(i.title)}</td><td>0 / {i.points:g}</td></tr>" for i in AUTO_ITEMS)
    page = (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{ASSIGNMENT} feedback</title></head>"
            f"<body><h1>{ASSIGNMENT}: your submission could not be graded</h1>"
            f"<p>Status: {html.escape(record.status)}. {html.escape(record.reason)}</p>"
            f"<p>Submit <code>{ASSIGNMENT}/{NOTEBOOK}</code>, saved from Jupyter, and ask your "
            f"instructor to grade it again.</p><table>{rows}</table></body></html>\n")
    path = out / "feedback" / record.student / ASSIGNMENT / f"{ASSIGNMENT}.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)


def run(submitted_dir, out_dir, jobs=None, db_url=None, timeout=60.0, memory_mb=4096,
        students=None, shard=None, progress=True, force=False) -> dict:
    """Grade every selected student that needs it (all of them with `force`), then export;
    returns the grades.json document."""
    submitted, out = Path(submitted_dir).resolve(), Path(out_dir).resolve()
    if not submitted.is_dir():
        raise SystemExit(f"no such folder: {submitted}")
    out.mkdir(parents=True, exist_ok=True)
    db_url = normalise_db_url(db_url or f"sqlite:///{out / 'gradebook.db'}")
    settings, grader = Settings(float(timeout), int(memory_mb)), grader_fingerprint()
    names = select_students(submitted, students, shard)
    put_alembic_on_path()
    prepare_gradebook(nbgrader_config(out, db_url, settings), out)
    write_formgrader_config(out, db_url)

    in_gradebook = submitted_students(db_url)
    todo = []
    for name in names:
        state = load_state(out, name)
        if (force or state is None or state.fingerprint != fingerprint(submitted / name, settings, grader)
                or (usable_id(name) and name not in in_gradebook)):  # e.g. a new or emptied gradebook
            todo.append(name)
    print(f"{len(names)} students selected: grading {len(todo)}, "
          f"{len(names) - len(todo)} unchanged since the last run", file=sys.stderr, flush=True)
    if todo:
        jobs = max(1, jobs or os.cpu_count() or 1)
        _grade_all(todo, submitted, out, db_url, settings, grader, jobs, progress)
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


def _grade_all(todo, submitted, out, db_url, settings, grader, jobs, progress):
    from tqdm.auto import tqdm
    bar = tqdm(total=len(todo), desc="grading", unit="student", disable=not progress)
    staged = {}
    for student in todo:  # staging is quick; a submission with nothing to run is finished right here
        found = begin_student(student, submitted, out)
        record = StudentRecord(student, fingerprint(submitted / student, settings, grader))
        if gradable(student, out):
            staged[student] = (record, found)
        else:
            record = grade_student(record, found, str(out), db_url, settings)
            bar.set_postfix_str(f"{student}: {record.status}")
            bar.update(1)
    context = multiprocessing.get_context("spawn")  # no forked torch or sqlite state in workers
    attempts = {s: 0 for s in staged}
    pending, finished = list(staged), set()
    while pending:
        for s in pending:
            attempts[s] += 1
        with futures.ProcessPoolExecutor(max_workers=min(jobs, len(pending)), mp_context=context,
                                         initializer=_worker_init) as pool:
            running = {pool.submit(grade_student, *staged[s], str(out), db_url, settings): s for s in pending}
            try:
                for done in futures.as_completed(running):
                    student = running[done]
                    try:
                        record = done.result()
                        bar.set_postfix_str(f"{student}: {record.status}")
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
    save_state(out, StudentRecord(student, "", "error", clip(f"grader error: {type(exc).__name__}: {exc}", "reason")))
