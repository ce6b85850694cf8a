"""autograder.sandbox.errors: a SandboxError's plain fields."""
from autograder.sandbox import SandboxError


def test_error_names_the_signal():
    assert SandboxError("crashed", "x", status=-9, died=True).signal_name == "SIGKILL"
    assert SandboxError("crashed", "x", status=3, died=True).signal_name is None
