"""How one student is graded: nbgrader's converters and their steps, as classes and calls, in order.

docs/grading-design.md, "How a submission is graded", follows a submission through this module. In a grading process
(workers.py), for one staged submission (staging.py), `autograde_student`:

1. runs nbgrader's Autograde converter (`run_converter`), whose steps are the classes below:
   SANITIZE on the submitted notebook, then AUTOGRADE on the sanitized one. GradeOutOfProcess
   (preprocessor.py) runs the code in the sandbox and the checks here, writes each test cell's
   report and score, which SaveAutoGrades records in the gradebook, and puts its whole result, with
   RepairStructure's repairs, in the grading's sink (sink.py), which `configure` gives every step and
   this module takes the student's result from;
2. runs nbgrader's GenerateFeedback converter: the feedback page, from the autograded notebook and the
   gradebook (FEEDBACK's steps, then feedback_page.FeedbackPage);
3. writes the student's record (state.py) once: status (StudentRecord.settle), reason, each item's score
   and rubric, the failing checks' messages, and the seconds it took.
   `export` (gradebook.py) takes the autograded scores from it, and from the gradebook only what people scored.

`configure` installs these steps and their sink in a traitlets Config: course.nbgrader_config() for `grade`
(once per grading process: grade.class_config), and the repository's nbgrader_config.py for nbgrader's own
commands and formgrader. Importing this module
does not import torch: the grading step imports the sandbox when it first runs.
"""
import gc
import logging
import time
import warnings
from pathlib import Path

from nbconvert.preprocessors import ClearMetadataPreprocessor, CSSHTMLHeaderPreprocessor
from nbgrader.preprocessors import (AssignLatePenalties, CheckCellMetadata, ClearHiddenTests, ClearMarkScheme,
                                    ClearOutput, ComputeChecksums, DeduplicateIds, IgnorePattern, IncludeHeaderFooter,
                                    InstantiateTests, LimitOutput, LockCells, OverwriteCells, OverwriteKernelspec,
                                    SaveAutoGrades, SaveCells)


from ..items import ASSIGNMENT
from ..text import clip, submission_line
from .messages import NO_RESULTS, autograde_refused, gradebook_error, no_feedback
from .announce import AnnounceSubmission
from .answers import answer_hashes, hand_scores, keep_hand_scores
from .arrival import lateness
from .feedback_page import FeedbackPage, configure_pages
from .gradebook import NOT_IN_SESSION, record_penalties, zero_submission
from .page_summary import GetPageGrades, SummarizePage
from .preprocessor import GradeOutOfProcess
from .stubs import ClearSolutionsNamed
from .repair import RepairStructure
from .review import FlagForReview
from .sanitize import SanitizeHtml
from .sink import ResultSink
from .staging import Staged
from .settings import Settings, read_settings
from .state import StudentRecord, item_records, load_state, save_state

# `python -m autograder release` (nbgrader generate_assignment): student stubs that name their exercise;
# the rest is nbgrader's default list, in its order: ClearHiddenTests after ComputeChecksums and
# SaveCells, then ComputeChecksums again.
RELEASE = [IncludeHeaderFooter, InstantiateTests, LockCells, ClearSolutionsNamed, ClearOutput, CheckCellMetadata,
           ComputeChecksums, SaveCells, ClearHiddenTests, ClearMarkScheme, ComputeChecksums, CheckCellMetadata]

# Autograde, first pass, on the notebook as submitted. RepairStructure first, so that a copied cell (a
# duplicated grade id), a check cell turned into markdown or damaged metadata is repaired and noted rather
# than failing the whole submission (it drops a submission's own copy of the grader's metadata before it
# writes its own); then nbgrader's own steps, in its order (OverwriteCells puts back the instructor's grade
# cells, and gives a cell the type the gradebook knows for its grade id: a written answer handed in as a
# code cell becomes markdown again, the student's text kept); then SanitizeHtml, which makes every cell safe
# in formgrader's and the feedback's HTML pages: after every step that can change a cell's type or text,
# and before the notebook is written, since both pages are made from it.
SANITIZE = [RepairStructure, ClearOutput, DeduplicateIds, OverwriteKernelspec, OverwriteCells, SanitizeHtml,
            CheckCellMetadata]

# Autograde, second pass: GradeOutOfProcess takes the place of nbgrader's Execute; FlagForReview comes after
# SaveAutoGrades, whose flags it overrides; the order is nbgrader's own otherwise.
AUTOGRADE = [GradeOutOfProcess, IgnorePattern, ClearMetadataPreprocessor, LimitOutput, SaveAutoGrades, FlagForReview,
             AssignLatePenalties, CheckCellMetadata]

# The feedback page (GenerateFeedback): nbgrader's GetGrades, which also notes the answers a person has yet to
# grade; the submission's time and lateness as a page note (announce.py); then the page's summary and folds from
# those grades (page_summary.py), then nbgrader's CSS step.
FEEDBACK = [GetPageGrades, AnnounceSubmission, SummarizePage, CSSHTMLHeaderPreprocessor]

DB_ERRORS = ("sqlalchemy", "psycopg", "InvalidEntry", "database is locked", "OperationalError")


def configure(c, root=None):
    """Install the steps above in the traitlets Config `c` (the whole lists are assigned: nbgrader reads its
    configuration file twice, so .insert() would add a step twice), grading against the reference of the
    course in `root`."""
    if root is not None:
        c.GradeOutOfProcess.course = str(root)
    c.GenerateAssignment.preprocessors = list(RELEASE)
    c.Autograde.sanitize_preprocessors = list(SANITIZE)
    c.Autograde.autograde_preprocessors = list(AUTOGRADE)
    c.GenerateFeedback.exporter_class = FeedbackPage
    c.GenerateFeedback.preprocessors = list(FEEDBACK)
    configure_pages(c)  # the feedback page's template, and formgrader's manual-grading page's
    c.OverwriteCells.add_missing_cells = True  # a test cell a student deleted comes back, rather than scoring 0
    sink = ResultSink()  # the steps hand what they found to autograde_student through it
    for step in (RepairStructure, GradeOutOfProcess, FlagForReview, AnnounceSubmission):
        c[step.__name__].sink = sink


def sink_of(cfg) -> ResultSink:
    """The sink `configure` put in this configuration."""
    return cfg.GradeOutOfProcess.sink


def warm_up(limits, root=None):
    """What a grading process pays once, before its first student (workers.Workers runs it while the main
    process sets up the gradebook): the grading modules and nbgrader's converters imported, the reference
    (of the course in `root`) executed, and the sandbox's zygote started under these limits."""
    from nbgrader.converters import Autograde, GenerateFeedback  # noqa: F401

    from ..sandbox import have_bwrap
    from ..sandbox.zygote import shared_zygote
    from .reference import reference
    reference(*([Path(root)] if root is not None else []))
    if have_bwrap():  # without bubblewrap each submission starts a fresh sandbox: nothing to keep warm
        shared_zygote(limits, True)
    gc.freeze()  # what is loaded by now lives as long as the process: no collection walks it again


def course_settings(cfg) -> Settings:
    """The course.toml of the course `cfg` grades (configure's root); the defaults when it names none."""
    root = cfg.GradeOutOfProcess.course if "course" in cfg.GradeOutOfProcess else ""
    return read_settings(Path(root)) if root else Settings()


def leave_note(cfg, record: StudentRecord, total: float) -> float:
    """Before GenerateFeedback: the submission's late penalty in the gradebook, and the page's line on its time
    (AnnounceSubmission), from the record and the course's settings now; returns the penalty."""
    block = lateness(record.submission, record.student, course_settings(cfg))
    block["penalty"] = round(min(block["penalty"], total), 4)
    record_penalties(cfg.CourseDirectory.db_url, {record.student: block["penalty"]})
    sink_of(cfg).note((record.student, ASSIGNMENT), submission_line(block))
    return block["penalty"]


def autograde_student(record: StudentRecord, staged: Staged, out: Path, cfg) -> StudentRecord:
    """Grade one staged student whose notebook is there to grade (grade.gradable), with the class's nbgrader
    configuration `cfg` (course.nbgrader_config); save and return their record."""
    from nbgrader.converters import Autograde, GenerateFeedback
    started = time.monotonic()
    student, notes = record.student, list(staged.notes)
    db_url = cfg.CourseDirectory.db_url
    scored_by_hand = hand_scores(db_url, student)  # before autograde, which marks every one as needing a grade
    error = run_with_retries(cfg, student, Autograde)
    result = sink_of(cfg).take((student, ASSIGNMENT)).result
    if is_db_error(error):  # not the submission's fault: graded again next run
        record.settle("error", gradebook_error(error))
    elif error:  # nbgrader refused the submission (e.g. broken cell metadata): it gets zeros
        zero_submission(db_url, student)
        record.settle("failed", autograde_refused(error))
    elif result is None:
        record.settle("failed", NO_RESULTS)
    else:
        record.settle(result.status, clip(result.reason, "reason"), item_records(result),
                      {i: [clip(f, "note") for f in flags] for i, flags in result.review.items()})
        record.answers = answer_hashes(Path(cfg.CourseDirectory.autograded_directory) / student / ASSIGNMENT
                                       / f"{ASSIGNMENT}.ipynb")
        previous = load_state(out, student)
        keep_hand_scores(db_url, student, scored_by_hand, staged.answers or (previous.answers if previous else {}),
                         record.answers)
        leave_note(cfg, record, sum(r["score"] for r in record.items.values()))
        error = run_with_retries(cfg, student, GenerateFeedback)
        if error:
            notes.append(clip(no_feedback(error), "note"))
    record.reason = clip("; ".join(filter(None, [staged.problem, *notes, record.reason])), "reason")
    record.seconds = round(time.monotonic() - started, 2)
    save_state(out, record)
    return record


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
    warnings.filterwarnings("ignore", message=NOT_IN_SESSION)  # nbgrader 0.9 on SQLAlchemy 2
    errors = _ErrorLog()
    log = logging.getLogger("traitlets")
    log.handlers[:] = [errors]
    log.propagate = False
    log.setLevel(logging.ERROR)
    return errors


def run_converter(cfg, student: str, converter) -> str:
    """Run one nbgrader converter class (Autograde or GenerateFeedback) for one student; return its error,
    or ''. GenerateFeedback picks its own page template (nbgrader's "feedback")."""
    from nbgrader.coursedir import CourseDirectory

    errors = _quiet_nbgrader()
    coursedir = CourseDirectory(config=cfg)
    coursedir.assignment_id, coursedir.student_id = ASSIGNMENT, student
    try:
        app = converter(coursedir=coursedir, config=cfg)
        app.force = True
        if hasattr(app, "create_student"):  # Autograde: a student the gradebook does not know yet is added
            app.create_student = True
        app.start()
    except Exception as exc:
        return errors.cause() or f"{type(exc).__name__}: {exc}"
    return ""


def run_with_retries(cfg, student: str, converter, attempts: int = 3) -> str:
    """Retry when the gradebook was busy or unreachable, which is not the submission's fault."""
    for attempt in range(attempts):
        error = run_converter(cfg, student, converter)
        if not is_db_error(error):
            return error
        time.sleep(1 + 2 * attempt)
    return error


def is_db_error(error: str) -> bool:
    return any(e in error for e in DB_ERRORS)
