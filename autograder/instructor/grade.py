"""`python -m autograder grade`: grade a whole class through nbgrader, in parallel, resumably.

For each student: stage a clean copy of the submission (staging.py), then grade it in a grading
process (pipeline.autograde_student: nbgrader's Autograde with the sandboxed checks, the feedback page,
the student's record). Students are graded in parallel grading processes, one student per process
at a time (workers.py): a process that dies costs a retry only to the student it held (twice:
"error", graded again next run), and a student still being graded at its deadline
(Limits.student_seconds: the notebook's, the checks' and a minute, staging to feedback) has its
process killed and is recorded as "timeout", graded again only once resubmitted. A student whose submission, grader
and settings are unchanged since the last run, and whose grades are in the gradebook, is
skipped: re-running is idempotent and an interrupted run picks up where it stopped. At the end,
grades.json and grades.csv are exported from the gradebook (gradebook.py).

Shards (`--shard i/n`, `--students GLOB`) let several processes or machines grade one class
into one gradebook (PostgreSQL for machines): the gradebook is set up under a lock, and each
student is graded by exactly one shard.
"""
import functools
import hashlib
import json
import multiprocessing
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, PACKAGE_DIR, solution_notebooks
from ..limits import Limits
from ..text import clip, failure_page
from .messages import gradebook_error_after_timeout, grader_error, past_deadline, process_died
from . import privacy, protections
from .answers import answer_hashes
from .arrival import arrival, nbgrader_stamp, read_manifest
from .course import (feedback_page, nbgrader_config, pages_lock, prepare_gradebook, prepare_alembic,
                     write_formgrader_config)
from .files import file_lock
from .gradebook import export, normalise_db_url, submitted_students, write_class_set_aside, zero_submission
from .pipeline import autograde_student, warm_up
from .progress import progress_display
from .settings import course_root, read_settings
from .staging import NOTEBOOK, Staged, select_students, stage, staged_notebook, submission_fingerprint, usable_id
from .state import StudentRecord, load_state, save_state
from .workers import Workers

# quiz widgets, the command line, the progress display, the class report and its sections, the LMS files, the
# similarity page, collecting, releasing feedback, merging shards, the start-up checks of protections and privacy, and
# formgrader's model answers (read by formgrader as it shows a page) decide no grade
NOT_GRADING = {"quiz.py", "quizzes.py", "__main__.py", "progress.py", "class_report.py", "lms.py", "similarity.py",
               "similarity_page.py", "report_sections.py", "report_plots.py", "collect.py", "release_feedback.py",
               "protections.py", "privacy.py", "model_answers.py", "merge.py"}
DEATHS = 2  # a student whose grading process dies this many times is recorded as "error"
# tests only: "<student>:kill" or "<student>:hang" in its grading process, several separated by commas
TEST_FAULT = "LESSON20_TEST_GRADER_FAULT"


def grader_fingerprint(root: Path) -> str:
    """Changes whenever the checks, the grader, the course's configuration or its reference (the course in
    `root`) change: then every student is regraded."""
    h = hashlib.sha256()
    code = [p for p in sorted(PACKAGE_DIR.rglob("*.py")) + sorted(PACKAGE_DIR.rglob("*.ini")) if p.name not in NOT_GRADING]
    for base, paths in ((PACKAGE_DIR.parent, code), (root, [root / "nbgrader_config.py", *solution_notebooks(root)])):
        for path in paths:
            h.update(str(path.relative_to(base)).encode())
            h.update(path.read_bytes())
    return h.hexdigest()[:16]


def fingerprint(folder: Path, limits: Limits, grader: str, arrived: dict = None) -> str:
    """What a student's grades depend on: their files, the grader, the limits it ran under, and who submitted
    them when (arrival.arrival: a new submission set aside changes it too)."""
    bounds = hashlib.sha256(repr(limits).encode()).hexdigest()[:8]
    arrived = dict(arrived or {})
    if arrived.get("source") != "exchange":  # a change time bounds it: copying the class or a chmod moves it
        arrived.pop("time", None)
    when = hashlib.sha256(json.dumps(arrived, sort_keys=True).encode()).hexdigest()[:8]
    return f"{submission_fingerprint(folder)}-{grader}-{bounds}-{when}"


@functools.lru_cache(maxsize=4)
def class_config(out: str, db_url: str, limits: Limits, root: str = None):
    """nbgrader's configuration for this class (course.nbgrader_config), built once per grading process and
    kept for every student it grades, with the grading steps' one sink."""
    return nbgrader_config(Path(out), db_url, limits, root)


def begin_student(student: str, submitted: Path, out: Path, arrived: dict = None) -> Staged:
    """Clear the student's earlier outputs and stage the submission (cheap: in the main process), with the time
    that counts as its timestamp.txt."""
    graded = answer_hashes(out / "autograded" / student / ASSIGNMENT / NOTEBOOK)  # the written answers last graded
    for folder in ("autograded", "feedback"):  # nothing from an earlier submission may survive
        shutil.rmtree(out / folder / student, ignore_errors=True)
    staged = stage(student, submitted, out / ".staging", nbgrader_stamp((arrived or {}).get("time")))
    staged.answers = graded
    return staged


def gradable(student: str, out: Path) -> bool:
    return usable_id(student) and staged_notebook(out / ".staging", student).exists()


def grade_staged_student(record: StudentRecord, staged: Staged, out: str, db_url: str, limits: Limits,
              root: str = None) -> StudentRecord:
    """Grade one staged student (in a grading process unless there is nothing to run); returns the record
    written to their state file."""
    out, started = Path(out), time.monotonic()
    if gradable(record.student, out):
        record = autograde_student(record, staged, out, class_config(str(out), db_url, limits, root))
    else:  # nothing to run: staging's problem says why; not in the gradebook if the id is unusable
        if usable_id(record.student):
            zero_submission(db_url, record.student)
        record.settle("failed", clip("; ".join(filter(None, [staged.problem, *staged.notes])), "reason"))
        record.seconds = round(time.monotonic() - started, 2)
        save_state(out, record)
    if not feedback_page(out, record.student).parent.is_dir():
        write_failure_feedback(out, record)
    return record


def write_failure_feedback(out: Path, record: StudentRecord):
    """feedback/<student>/lesson20/lesson20.html for a submission nbgrader produced no feedback for."""
    page = failure_page(ASSIGNMENT, NOTEBOOK, record.status, record.reason, AUTO_ITEMS)
    path = feedback_page(out, record.student)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page)


def start_up(root: Path, submitted: Path, out: Path, limits: Limits, allow_weaker: bool, group: str) -> list:
    """What `grade` checks before it grades anyone: the protections this machine gives the sandbox (printed;
    refused without one unless `allow_weaker`), and that no other account can read the solutions, the hidden
    checks, the submissions or the output. Returns the missing protections' ids."""
    missing = protections.probe(limits)
    print("grade: the sandbox's protections on this machine:", *protections.start_up_lines(missing), sep="\n",
          file=sys.stderr, flush=True)
    if protections.missing_ids(missing) and not allow_weaker:
        raise SystemExit(protections.refusal(missing))
    found = privacy.exposed([*privacy.instructor_paths(root), submitted, out], group)
    if found:
        raise SystemExit(privacy.refusal(found, group))
    return protections.missing_ids(missing)


def grade_class(submitted_dir, out_dir, jobs=None, db_url=None, limits: Limits = Limits(),
        students=None, shard=None, progress=True, force=False, allow_weaker=False, course=None) -> dict:
    """Grade every selected student that needs it (all of them with `force`), then export;
    returns the grades.json document. `course`: the course's folder (settings.course_root() when None)."""
    root = Path(course).resolve() if course else course_root()
    settings = read_settings(root)
    submitted, out = Path(submitted_dir).resolve(), Path(out_dir).resolve()
    if not submitted.is_dir():
        raise SystemExit(f"no such folder: {submitted}")
    weaker = start_up(root, submitted, out, limits, allow_weaker, settings.instructors_group)
    privacy.set_umask(settings.instructors_group)
    if not out.exists():
        privacy.make_private(out, settings.instructors_group)
    db_url = normalise_db_url(db_url or f"sqlite:///{out / 'gradebook.db'}")
    grader = grader_fingerprint(root)
    manifest = read_manifest(submitted)
    names = select_students(submitted, students, shard)
    arrived = {n: arrival(submitted, n, manifest, submission_fingerprint(submitted / n), settings) for n in names}
    prints = {n: fingerprint(submitted / n, limits, grader, arrived[n]) for n in names}  # each hashed once
    changed = {n for n in names if force or _changed(out, n, prints[n])}
    with file_lock(pages_lock(out), shared=True):  # export's rewrite of the pages waits for this run
        # the grading processes warm up (imports, the reference, the sandbox) while the gradebook is set up
        spawn = multiprocessing.get_context("spawn")  # no forked torch or sqlite state in workers
        pool = Workers(_grade_in_worker, max(1, jobs or os.cpu_count() or 1), limits.student_seconds, spawn,
                       warm=(warm_up, (limits, root)))
        try:
            pool.start(len(changed))
            prepare_alembic()
            prepare_gradebook(nbgrader_config(out, db_url, limits, root), out)
            write_formgrader_config(out, db_url, root)
            in_gradebook = submitted_students(db_url)
            todo = [n for n in names if n in changed or (usable_id(n) and n not in in_gradebook)]  # e.g. a new gradebook
            print(f"{len(names)} students selected: grading {len(todo)}, "
                  f"{len(names) - len(todo)} unchanged since the last run", file=sys.stderr, flush=True)
            if todo:
                _grade_all(pool, todo, submitted, out, db_url, limits, prints, progress, arrived, str(root), weaker)
        finally:
            pool.close()
    write_class_set_aside(out, manifest["set_aside"])
    return export(out, db_url, settings=settings)


def _changed(out: Path, student: str, print_now: str) -> bool:
    """Whether the student's fingerprint (their submission, the grader, the limits) changed since their last grading."""
    state = load_state(out, student)
    return state is None or state.fingerprint != print_now


def _grade_in_worker(record: StudentRecord, staged: Staged, out: str, db_url: str, limits: Limits, root: str):
    """grade_staged_student, in a grading process; a test can make that process die or hang for chosen students."""
    faults = dict(f.rpartition(":")[::2] for f in os.environ.get(TEST_FAULT, "").split(",") if f)
    what = faults.get(record.student)
    if what == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    if what == "hang":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    return grade_staged_student(record, staged, out, db_url, limits, root)


def _grade_all(pool: Workers, todo, submitted, out, db_url, limits, prints: dict, show: bool, arrived: dict,
               root: str, weaker: list):
    bar = progress_display(len(todo), show)  # a bar on a terminal, else one line per student (progress.py)
    staged = {}
    for student in todo:  # staging is quick; a submission with nothing to run is finished right here
        found = begin_student(student, submitted, out, arrived[student])
        record = StudentRecord(student, prints[student], submission=arrived[student], weaker=list(weaker))
        if gradable(student, out):
            staged[student] = (record, found)
        else:
            record = grade_staged_student(record, found, str(out), db_url, limits, root)
            bar.update(record)
    # one student per grading process at a time: a process that dies or overruns costs only its student
    deaths = dict.fromkeys(staged, 0)
    for student, (record, found) in staged.items():
        pool.submit(student, (record, found, str(out), db_url, limits, root))
    try:
        for outcome in pool.outcomes():
            student, (record, found) = outcome.key, staged[outcome.key]
            if outcome.error == "died":
                deaths[student] += 1
                if deaths[student] < DEATHS:  # the OOM killer may have picked the wrong process: once more
                    pool.submit(student, (record, found, str(out), db_url, limits, root))
                    continue
                record = _record_error(out, student, process_died(DEATHS, outcome.detail), record.submission)
            elif outcome.error == "deadline":
                record = _record_timeout(out, db_url, record, found, limits)
            elif outcome.error == "raised":  # a bug of ours on this one submission: record it, go on
                record = _record_error(out, student, outcome.detail, record.submission)
            else:
                record = outcome.value
            bar.update(record)
    finally:
        bar.close()


def _record_error(out: Path, student: str, detail: str, submission: dict = None) -> StudentRecord:
    """Our fault, not the submission's: no fingerprint, so the next run grades this student again."""
    record = StudentRecord(student, submission=dict(submission or {}))
    record.settle("error", clip(grader_error(detail), "reason"))
    save_state(out, record)
    return record


def _record_timeout(out: Path, db_url: str, record: StudentRecord, staged: Staged, limits: Limits):
    """A student whose grading passed the deadline and was killed: zeros, a reason and a feedback page.
    Like "failed", it keeps its fingerprint: graded again only when the submission (or grader) changes."""
    for folder in ("autograded", "feedback"):  # whatever the killed process left half-written
        shutil.rmtree(out / folder / record.student, ignore_errors=True)
    try:
        zero_submission(db_url, record.student)
    except Exception as exc:  # the gradebook was busy: grade again next run
        return _record_error(out, record.student, gradebook_error_after_timeout(exc), record.submission)
    record.settle("timeout", "; ".join(filter(None, [staged.problem, *staged.notes, past_deadline(limits)])))
    record.seconds = limits.student_seconds  # it was killed there
    write_failure_feedback(out, record)
    save_state(out, record)
    return record
