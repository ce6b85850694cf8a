"""`python -m autograder grade`: grade a whole class through nbgrader, in parallel, resumably.

For each student: stage a clean copy of the submission (staging.py), run nbgrader's Autograde,
whose GradeOutOfProcess step runs the code in the sandbox (course.py), write the feedback, and
record a state file (state.py). Students are graded in parallel grading processes, one student
per process at a time (workers.py): a process that dies costs a retry only to the student it
held (twice: "error", graded again next run), and a student still being graded at its deadline
(Settings.deadline: 6 x --timeout + 60 s, staging to feedback) has its process killed and is
recorded as "timeout", graded again only once resubmitted. A student whose submission, grader
and settings are unchanged since the last run, and whose grades are in the gradebook, is
skipped: re-running is idempotent and an interrupted run picks up where it stopped. At the end,
grades.json and grades.csv are exported from the gradebook (gradebook.py).

Shards (`--shard i/n`, `--students GLOB`) let several processes or machines grade one class
into one gradebook (PostgreSQL for machines): the gradebook is set up under a lock, and each
student is graded by exactly one shard.
"""
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, solution_notebooks
from ..text import (NO_RESULTS, autograde_refused, clip, failure_page, gradebook_error, gradebook_error_after_timeout,
                    grader_error, no_feedback, past_deadline, process_died)
from .course import (ROOT, Settings, is_db_error, nbgrader_config, prepare_gradebook, put_alembic_on_path,
                     results_dir, run_with_retries, write_formgrader_config)
from .gradebook import export, normalise_db_url, submitted_students, zero_submission
from .staging import NOTEBOOK, Staged, select_students, stage, staged_notebook, submission_fingerprint, usable_id
from .state import StudentRecord, load_state, save_state
from .workers import Workers

NOT_GRADING = {"quiz.py", "quizzes.py", "__main__.py"}  # quiz widgets and the command line decide no grade
DEATHS = 2  # a student whose grading process dies this many times is recorded as "error"
TEST_FAULT = "LESSON20_TEST_GRADER_FAULT"  # tests only: "<student>:kill" or "<student>:hang" in its grading process


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
            record.status, record.fingerprint, record.reason = "error", "", clip(gradebook_error(error), "reason")
        elif error:  # nbgrader refused the submission (e.g. broken cell metadata): it gets zeros
            zero_submission(db_url, student)
            record.status, record.reason = "failed", clip(autograde_refused(error), "reason")
        else:
            error = run_with_retries(cfg, student, "feedback")
            if error:
                notes.append(clip(no_feedback(error), "note"))
        results = results_dir(out) / f"{student}.{ASSIGNMENT}.json"
        if record.status == "graded" and results.exists():  # what the sandboxed run said, for people
            graded = json.loads(results.read_text())
            record.status, record.reason = graded["status"], graded["reason"]
            record.rubric = {i: r["rubric"] for i, r in graded["items"].items() if r.get("rubric")}
            record.review = graded.get("review", {})
        elif record.status == "graded":
            record.status, record.reason = "failed", NO_RESULTS
    record.reason = clip("; ".join(filter(None, [staged.problem, *notes, record.reason])), "reason")
    if not (out / "feedback" / student / ASSIGNMENT).is_dir():
        write_failure_feedback(out, record)
    save_state(out, record)
    return record


def write_failure_feedback(out: Path, record: StudentRecord):
    """feedback/<student>/lesson20/lesson20.html for a submission nbgrader produced no feedback for."""
    page = failure_page(ASSIGNMENT, NOTEBOOK, record.status, record.reason, AUTO_ITEMS)
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


def _grade_in_worker(record: StudentRecord, staged: Staged, out: str, db_url: str, settings: Settings):
    """grade_student, in a grading process; a test can make that process die or hang for one student."""
    fault = os.environ.get(TEST_FAULT, "")
    student, _, what = fault.rpartition(":")
    if student == record.student and what == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if student == record.student and what == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    return grade_student(record, staged, out, db_url, settings)


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
    # one student per grading process at a time: a process that dies or overruns costs only its student
    spawn = multiprocessing.get_context("spawn")  # no forked torch or sqlite state in workers
    pool = Workers(_grade_in_worker, jobs, settings.deadline, spawn)
    deaths = dict.fromkeys(staged, 0)
    for student, (record, found) in staged.items():
        pool.submit(student, (record, found, str(out), db_url, settings))
    try:
        for outcome in pool.outcomes():
            student, (record, found) = outcome.key, staged[outcome.key]
            if outcome.error == "died":
                deaths[student] += 1
                if deaths[student] < DEATHS:  # the OOM killer may have picked the wrong process: once more
                    pool.submit(student, (record, found, str(out), db_url, settings))
                    continue
                record = _record_error(out, student, process_died(DEATHS, outcome.detail))
            elif outcome.error == "deadline":
                record = _record_timeout(out, db_url, record, found, settings)
            elif outcome.error == "raised":  # a bug of ours on this one submission: record it, go on
                record = _record_error(out, student, outcome.detail)
            else:
                record = outcome.value
            bar.set_postfix_str(f"{student}: {record.status}")
            bar.update(1)
    finally:
        pool.close()
        bar.close()


def _record_error(out: Path, student: str, detail: str) -> StudentRecord:
    """Our fault, not the submission's: no fingerprint, so the next run grades this student again."""
    record = StudentRecord(student, "", "error", clip(grader_error(detail), "reason"))
    save_state(out, record)
    return record


def _record_timeout(out: Path, db_url: str, record: StudentRecord, staged: Staged, settings: Settings):
    """A student whose grading passed the deadline and was killed: zeros, a reason and a feedback page.
    Like "failed", it keeps its fingerprint: graded again only when the submission (or grader) changes."""
    for folder in ("autograded", "feedback"):  # whatever the killed process left half-written
        shutil.rmtree(out / folder / record.student, ignore_errors=True)
    (results_dir(out) / f"{record.student}.{ASSIGNMENT}.json").unlink(missing_ok=True)
    try:
        zero_submission(db_url, record.student)
    except Exception as exc:  # the gradebook was busy: grade again next run
        return _record_error(out, record.student, gradebook_error_after_timeout(exc))
    reason = past_deadline(settings.deadline, settings.timeout)
    record.status, record.rubric, record.review = "timeout", {}, {}
    record.reason = "; ".join(filter(None, [staged.problem, *staged.notes, reason]))
    write_failure_feedback(out, record)
    save_state(out, record)
    return record
