"""What `grade` keeps private covers every file of the checkout that quotes the reference: a tracked file outside
privacy.instructor_paths that holds one of the solution's lines (scrub.reference_secrets, the oracle the feedback's
leak test uses) would be readable by every student on a shared machine."""
import subprocess

import pytest

from autograder.instructor.privacy import instructor_paths
from autograder.instructor.scrub import reference_secrets
from autograder.items import ROOT

SHORTEST = 30  # shorter solution lines (a `return loss`) are common to any code


def tracked_files() -> list:
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip("not a git checkout")
    return [ROOT / name for name in done.stdout.split("\0") if name]


def test_every_file_quoting_a_solution_line_is_kept_private():
    lines = [line for line in reference_secrets(ROOT).lines if len(line) >= SHORTEST]
    assert len(lines) > 20
    private = [path.resolve() for path in instructor_paths(ROOT)]
    quoting = []
    for path in tracked_files():
        try:
            text = " ".join(path.read_text().split())
        except (OSError, UnicodeDecodeError):
            continue
        if any(line in text for line in lines) and not any(top == path or top in path.parents for top in private):
            quoting.append(str(path.relative_to(ROOT)))
    assert not quoting, (f"files that quote the reference's solution lines but which `grade` does not keep private: "
                         f"{quoting}; add their folder to privacy.INSTRUCTOR_FOLDERS")
