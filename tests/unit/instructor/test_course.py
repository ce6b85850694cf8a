"""autograder.instructor.course: the per-student deadline follows the Limits made from --timeout, and nbgrader's
configuration for a class points at that class's folders and gradebook, with the grading steps installed."""
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.instructor.course import CLASS_FOLDERS, feedback_page, nbgrader_config, write_formgrader_config
from autograder.instructor.gradebook import COURSE_ID
from autograder.instructor.pipeline import AUTOGRADE, SANITIZE
from autograder.items import ASSIGNMENT, SOLUTIONS_DIR
from autograder.limits import Limits


@pytest.mark.parametrize("timeout", [1.0, 8.0, 60.0])
def test_the_deadline_covers_the_notebooks_run_and_its_checks_plus_a_minute(timeout):
    # --timeout T: the sandbox bounds the notebook's run, then all the checks together, by 3T each
    limits = Limits.for_timeout(timeout)
    assert (limits.cell_seconds, limits.item_seconds) == (timeout, timeout)
    assert limits.student_seconds == limits.notebook_seconds + limits.checks_seconds + 60 == 6 * timeout + 60


def test_without_a_timeout_the_limits_are_the_defaults():
    assert Limits.for_timeout(None) == Limits() and Limits.for_timeout(None, memory_mb=512).memory_mb == 512


def test_nbgrader_config_points_at_the_class_folders_and_gradebook_and_installs_the_pipeline(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    limits = Limits.for_timeout(5, memory_mb=1024)
    cfg = nbgrader_config(tmp_path, db_url, limits)
    for setting, folder in CLASS_FOLDERS.items():
        assert Path(cfg.CourseDirectory[setting]) == tmp_path / folder
    assert cfg.CourseDirectory.db_url == db_url and cfg.CourseDirectory.course_id == COURSE_ID
    assert (Path(cfg.CourseDirectory.root) / SOLUTIONS_DIR / ASSIGNMENT).is_dir()
    assert cfg.GradeOutOfProcess.limits == limits
    assert cfg.Autograde.sanitize_preprocessors == SANITIZE and cfg.Autograde.autograde_preprocessors == AUTOGRADE


def test_the_formgrader_config_loads_and_points_at_this_class(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    write_formgrader_config(tmp_path, db_url)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert cfg.CourseDirectory.root == str(tmp_path) and cfg.CourseDirectory.db_url == db_url
    for setting, folder in CLASS_FOLDERS.items():
        assert Path(cfg.CourseDirectory[setting]) == tmp_path / folder
    assert (Path(cfg.CourseDirectory.source_directory) / ASSIGNMENT).is_dir()
    # the repository's own configuration is loaded too: the grading steps are there
    assert cfg.Autograde.autograde_preprocessors == AUTOGRADE


def test_a_class_folder_copied_elsewhere_opens_its_own_gradebook(tmp_path):
    """OUT graded on a cluster and copied to a laptop: formgrader, started in the copy, uses the copy's
    gradebook (not a path on the cluster); a gradebook elsewhere (PostgreSQL, --db-url) stays as given."""
    import shutil
    out, moved = tmp_path / "out", tmp_path / "copied" / "out"
    out.mkdir()
    write_formgrader_config(out, f"sqlite:///{out / 'gradebook.db'}")
    shutil.copytree(out, moved)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(moved)).load_config()
    assert cfg.CourseDirectory.db_url == f"sqlite:///{moved / 'gradebook.db'}"
    elsewhere = "postgresql://grader@db/lesson20"
    write_formgrader_config(out, elsewhere)
    assert PyFileConfigLoader("nbgrader_config.py", path=str(out)).load_config().CourseDirectory.db_url == elsewhere


def test_a_new_gradebook_is_stamped_with_the_revision_alembic_heads_prints(tmp_path):
    import subprocess

    from nbgrader.api import Gradebook
    from nbgrader.dbutil import _temp_alembic_ini
    from sqlalchemy import create_engine, text

    from autograder.instructor.course import prepare_alembic, schema_head
    prepare_alembic()
    url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    with _temp_alembic_ini(url) as ini:  # nbgrader's own way to ask, as it did before prepare_alembic
        heads = subprocess.check_output(["alembic", "-c", ini, "heads"], text=True).split()[0]
    with Gradebook(url, course_id="lesson20"):
        pass
    with create_engine(url).connect() as db:
        stamped = db.execute(text("SELECT version_num FROM alembic_version")).scalar_one()
    assert schema_head() == heads == stamped


def test_a_feedback_page_is_where_nbgraders_generate_feedback_writes_it(tmp_path):
    """nbgrader's own CourseDirectory, configured for a class, names the folder; the page is its notebook's name."""
    from nbgrader.coursedir import CourseDirectory
    for feedback_dir in (None, tmp_path / ".feedback-1"):
        cfg = nbgrader_config(tmp_path, "sqlite://", Limits())
        if feedback_dir is not None:
            cfg.CourseDirectory.feedback_directory = str(feedback_dir)
        coursedir = CourseDirectory(config=cfg)
        folder = coursedir.format_path(coursedir.feedback_directory, "alice", ASSIGNMENT)
        assert feedback_page(tmp_path, "alice", feedback_dir) == Path(folder) / f"{ASSIGNMENT}.html"
