"""course.Settings: the per-student deadline follows the sandbox's own time limits."""
import pytest

from autograder.instructor.course import Settings
from autograder.sandbox import Limits


@pytest.mark.parametrize("timeout", [1.0, 8.0, 60.0])
def test_the_deadline_covers_the_notebooks_run_and_its_checks_plus_a_minute(timeout):
    # the sandbox bounds the notebook's run, then all the checks together, by notebook_seconds each
    assert Settings(timeout=timeout).deadline == 2 * Limits(timeout=timeout).notebook_seconds + 60
