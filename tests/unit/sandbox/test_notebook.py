"""autograder.sandbox.notebook: the cells as a kernel runs them (the child itself runs in tests/unit/sandbox/test_session.py)."""
from autograder.sandbox.notebook import ipython_source


def test_the_sandbox_transforms_magics_itself():
    """IPython's transform runs in the sandbox, on the cell's clock, not in the grader."""
    assert ipython_source("%matplotlib inline\nx = 1").splitlines() == [
        "get_ipython().run_line_magic('matplotlib', 'inline')", "x = 1"]
