"""One class's nbgrader setup: its configuration, its gradebook, and nbgrader's converters run for it.

A class is graded in an OUT folder: nbgrader reads the repository's nbgrader_config.py, pointed
at OUT's folders (CLASS_FOLDERS) and at the class's gradebook. OUT/nbgrader_config.py lets an
instructor start Jupyter in OUT and grade the written answers in formgrader.
"""
import logging
import os
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..items import ASSIGNMENT, ROOT, SOLUTIONS_DIR
from .files import write_atomic
from .gradebook import COURSE_ID, gradebook_lock

DB_ERRORS = ("sqlalchemy", "psycopg", "InvalidEntry", "database is locked", "OperationalError")
# where nbgrader's steps read and write, inside a class's OUT folder
CLASS_FOLDERS = {"submitted_directory": ".staging", "autograded_directory": "autograded",
                 "feedback_directory": "feedback", "release_directory": ".release"}


@dataclass(frozen=True)
class Settings:
    """What a class is graded with: `grade --timeout` and `--memory-mb`."""
    timeout: float = 60.0    # seconds per item (and for loading the notebook)
    memory_mb: int = 4096    # per submission

    @property
    def deadline(self) -> float:
        """Wall-clock seconds for the whole grading of one student (staging, autograde, feedback), after which
        its grading process is killed and it is recorded as "timeout": the notebook's run and then all its
        checks (each bounded by the sandbox's Limits.notebook_seconds, 3 x timeout), plus a minute for
        starting the sandbox, nbgrader and the feedback page."""
        return 2 * 3 * self.timeout + 60


def nbgrader_config(out: Path, db_url: str, settings: Settings):
    """The repo's nbgrader_config.py, pointed at this class's folders and gradebook."""
    from traitlets.config.loader import PyFileConfigLoader
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    cfg.CourseDirectory.root = str(ROOT)
    cfg.CourseDirectory.course_id = COURSE_ID
    for setting, folder in CLASS_FOLDERS.items():
        setattr(cfg.CourseDirectory, setting, str(out / folder))
    cfg.CourseDirectory.db_url = db_url
    cfg.GradeOutOfProcess.timeout = float(settings.timeout)
    cfg.GradeOutOfProcess.memory_mb = int(settings.memory_mb)
    cfg.GradeOutOfProcess.results_dir = str(results_dir(out))
    return cfg


def results_dir(out: Path) -> Path:
    """Where GradeOutOfProcess writes what the sandboxed run said (status, reason, reports)."""
    return Path(out) / ".results"


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


def run_converter(cfg, student: str, converter: str) -> str:
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


def run_with_retries(cfg, student: str, converter: str, attempts: int = 3) -> str:
    """Retry when the gradebook was busy or unreachable, which is not the submission's fault."""
    for attempt in range(attempts):
        error = run_converter(cfg, student, converter)
        if not is_db_error(error):
            return error
        time.sleep(1 + 2 * attempt)
    return error


def is_db_error(error: str) -> bool:
    return any(e in error for e in DB_ERRORS)


def write_formgrader_config(out: Path, db_url: str):
    """OUT/nbgrader_config.py: start Jupyter in OUT to grade the written answers of this class in formgrader."""
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
c.CourseDirectory.source_directory = {str(ROOT / SOLUTIONS_DIR)!r}
{folders}c.CourseDirectory.db_url = {db_url!r}
'''
    write_atomic(out / "nbgrader_config.py", text)
