"""course: the class's nbgrader configuration, and the per-student deadline its Limits give."""
import pytest

from autograder.instructor.course import CLASS_FOLDERS, nbgrader_config
from autograder.instructor.pipeline import AUTOGRADE, SANITIZE
from autograder.sandbox import Limits


@pytest.mark.parametrize("timeout", [1.0, 8.0, 60.0])
def test_the_deadline_covers_the_notebooks_run_and_its_checks_plus_a_minute(timeout):
    # --timeout T: the sandbox bounds the notebook's run, then all the checks together, by 3T each
    limits = Limits.for_timeout(timeout)
    assert (limits.cell_seconds, limits.item_seconds) == (timeout, timeout)
    assert limits.student_seconds == limits.notebook_seconds + limits.checks_seconds + 60 == 6 * timeout + 60


def test_without_a_timeout_the_limits_are_the_defaults():
    assert Limits.for_timeout(None) == Limits() and Limits.for_timeout(None, memory_mb=512).memory_mb == 512


def test_the_class_configuration_points_at_its_folders_and_installs_the_pipeline(tmp_path):
    limits = Limits.for_timeout(5, memory_mb=1024)
    cfg = nbgrader_config(tmp_path, "sqlite:///x.db", limits)
    for setting, folder in CLASS_FOLDERS.items():
        assert getattr(cfg.CourseDirectory, setting) == str(tmp_path / folder)
    assert cfg.CourseDirectory.db_url == "sqlite:///x.db"
    assert cfg.GradeOutOfProcess.limits == limits
    assert cfg.Autograde.sanitize_preprocessors == SANITIZE and cfg.Autograde.autograde_preprocessors == AUTOGRADE
