"""tests/integration: the tests that run the whole grader (sandboxed gradings, `grade` runs, nbgrader, the
exchange, Slurm, a built wheel). Every test here is slow, by where it lives: `make test-fast` leaves it out."""
import pytest


def pytest_collection_modifyitems(items):
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here + "/"):
            item.add_marker(pytest.mark.slow)
