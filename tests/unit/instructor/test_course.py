"""autograder.instructor.course: the per-student deadline follows the sandbox's own time limits, and nbgrader's
configuration for a class points at that class's folders and gradebook."""
from pathlib import Path

import pytest
from traitlets.config.loader import PyFileConfigLoader

from autograder.instructor.course import (CLASS_FOLDERS, Settings, is_db_error, nbgrader_config, results_dir,
                                          write_formgrader_config)
from autograder.instructor.gradebook import COURSE_ID
from autograder.items import ASSIGNMENT, SOLUTIONS_DIR
from autograder.sandbox import Limits


@pytest.mark.parametrize("timeout", [1.0, 8.0, 60.0])
def test_the_deadline_covers_the_notebooks_run_and_its_checks_plus_a_minute(timeout):
    # the sandbox bounds the notebook's run, then all the checks together, by notebook_seconds each
    assert Settings(timeout=timeout).deadline == 2 * Limits(timeout=timeout).notebook_seconds + 60


def test_nbgrader_config_points_at_the_class_folders_and_gradebook(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    cfg = nbgrader_config(tmp_path, db_url, Settings())
    for setting, folder in CLASS_FOLDERS.items():
        assert Path(cfg.CourseDirectory[setting]) == tmp_path / folder
    assert cfg.CourseDirectory.db_url == db_url and cfg.CourseDirectory.course_id == COURSE_ID
    assert Path(cfg.GradeOutOfProcess.results_dir) == results_dir(tmp_path)
    assert (Path(cfg.CourseDirectory.root) / SOLUTIONS_DIR / ASSIGNMENT).is_dir()


def test_the_formgrader_config_loads_and_points_at_this_class(tmp_path):
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    write_formgrader_config(tmp_path, db_url)
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    assert cfg.CourseDirectory.root == str(tmp_path) and cfg.CourseDirectory.db_url == db_url
    for setting, folder in CLASS_FOLDERS.items():
        assert Path(cfg.CourseDirectory[setting]) == tmp_path / folder
    assert (Path(cfg.CourseDirectory.source_directory) / ASSIGNMENT).is_dir()
    # the repository's own configuration is loaded too: the grading steps are there
    assert any("GradeOutOfProcess" in str(step) for step in cfg.Autograde.autograde_preprocessors)


@pytest.mark.parametrize("error, is_db", [("sqlalchemy.exc.OperationalError: database is locked", True),
                                          ("CellInvalidMetadata: cell 3", False), ("", False)])
def test_gradebook_errors_are_told_from_the_submissions(error, is_db):
    assert is_db_error(error) == is_db
