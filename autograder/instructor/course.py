"""One class's nbgrader setup: its configuration, its gradebook, and formgrader's configuration file.

A class is graded in an OUT folder: nbgrader gets the repository's configuration (`course_config`: the
course, the instructor notebooks, and the grading steps of pipeline.py), pointed at OUT's folders
(CLASS_FOLDERS), at the class's gradebook and at the Limits it is graded under. OUT/nbgrader_config.py
lets an instructor start Jupyter in OUT and grade the written answers in formgrader.
"""
import logging
import os
import sys
import time
from pathlib import Path

from ..items import ASSIGNMENT, SOLUTIONS_DIR
from .files import write_atomic
from .gradebook import COURSE_ID, gradebook_lock
from .pipeline import configure
from .release_feedback import GuardedReleaseFeedback
from .settings import course_root

# where nbgrader's steps read and write, inside a class's OUT folder
CLASS_FOLDERS = {"submitted_directory": ".staging", "autograded_directory": "autograded",
                 "feedback_directory": "feedback", "release_directory": ".release"}


def feedback_page(out: Path, student: str, feedback_dir: Path = None) -> Path:
    """Where nbgrader's GenerateFeedback writes a student's feedback page: in the class's feedback folder
    (OUT/feedback/<student>/lesson20/lesson20.html), or in `feedback_dir` if given."""
    folder = Path(feedback_dir) if feedback_dir is not None else Path(out) / CLASS_FOLDERS["feedback_directory"]
    return folder / student / ASSIGNMENT / f"{ASSIGNMENT}.html"


def pages_lock(out: Path) -> Path:
    """The lock of a class's feedback pages: `grade` holds it shared while it grades in OUT (it removes and
    writes pages, and the autograded notebooks they are made from); `export` holds it alone while it
    writes pages again, so that it never reads what a grade is halfway through."""
    return Path(out) / ".feedback.lock"


def course_config(root: Path = None):
    """The course's nbgrader configuration (nbgrader_config.py loads it, with its own folder as `root`): the
    course, its folders and gradebook in the course's folder (settings.course_root() when `root` is None),
    and the grading steps (pipeline.configure)."""
    from traitlets.config import Config
    root = Path(root).resolve() if root is not None else course_root()
    c = Config()
    c.CourseDirectory.root = str(root)
    c.CourseDirectory.course_id = COURSE_ID
    c.CourseDirectory.source_directory = SOLUTIONS_DIR  # instructor notebooks, with the reference code
    c.CourseDirectory.release_directory = "lessons"     # generated student notebooks (python -m autograder release)
    c.CourseDirectory.db_url = "sqlite:///" + os.path.join(str(root), "gradebook.db")
    configure(c, root)
    # `nbgrader release_feedback` releases nothing before the last due date, and skips a folder it cannot release
    c.ExchangeFactory.release_feedback = GuardedReleaseFeedback
    c.GuardedReleaseFeedback.course = str(root)
    return c


def nbgrader_config(out: Path, db_url: str, limits, root: Path = None):
    """The course's configuration (course_config), pointed at this class's folders and gradebook, grading under
    `limits` (limits.Limits, made once from the command line)."""
    cfg = course_config(root)
    for setting, folder in CLASS_FOLDERS.items():
        setattr(cfg.CourseDirectory, setting, str(Path(out) / folder))
    cfg.CourseDirectory.db_url = db_url
    cfg.GradeOutOfProcess.limits = limits
    return cfg


def prepare_alembic():
    """nbgrader runs `alembic`, installed next to this interpreter, to upgrade a gradebook (a virtualenv that
    was not activated leaves it off PATH), and to learn the schema revision a new gradebook is stamped with
    (`alembic heads`: 2.2 s, a Python of its own that imports nbgrader). The revision is read here instead,
    in this process, from the same migration scripts by alembic's own ScriptDirectory (0.1 s)."""
    import nbgrader.api
    here = os.path.dirname(sys.executable)
    if here not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = here + os.pathsep + os.environ.get("PATH", "")
    nbgrader.api.get_alembic_version = schema_head


def schema_head() -> str:
    """The newest revision of nbgrader's gradebook schema, as `alembic heads` prints it first."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR
    return ScriptDirectory(ALEMBIC_DIR).get_current_head()


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


def write_formgrader_config(out: Path, db_url: str, root: Path = None):
    """OUT/nbgrader_config.py: start Jupyter in OUT to grade the written answers of this class in formgrader,
    with the course's configuration (that of `root`, settings.course_root() when None)."""
    root = Path(root).resolve() if root is not None else course_root()
    folders = "".join(f"c.CourseDirectory.{setting} = os.path.join(here, {folder!r})\n"
                      for setting, folder in CLASS_FOLDERS.items())
    # the class's own SQLite gradebook is found beside this file, so that OUT can be moved or copied (from a
    # cluster's disk to a laptop) and formgrader still opens the gradebook that came with it
    inside = db_url == "sqlite:///" + os.path.join(str(out), "gradebook.db")
    db_line = '"sqlite:///" + os.path.join(here, "gradebook.db")' if inside else repr(db_url)
    text = f'''# Written by `python -m autograder grade`. Start `jupyter lab` in this folder to open
# nbgrader's formgrader on this class: the course's configuration, pointed at these grades.
import os

c = get_config()  # noqa: F821
load_subconfig({str(root / "nbgrader_config.py")!r})  # noqa: F821
here = os.path.dirname(os.path.abspath(__file__))
# formgrader wants the course root inside the folder Jupyter serves: the root is this folder,
# and the instructor notebooks are found in the course by their absolute path
c.CourseDirectory.root = here
c.CourseDirectory.source_directory = {str(root / SOLUTIONS_DIR)!r}
{folders}c.CourseDirectory.db_url = {db_line}
'''
    write_atomic(out / "nbgrader_config.py", text)
