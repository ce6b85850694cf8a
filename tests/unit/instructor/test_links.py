"""autograder.instructor.links: a symbolic link, a hard link or a mount point from a student's folder down."""
import os
import shutil
import subprocess
import sys

import pytest

from autograder.instructor.links import first_link, mount_points
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB

# where a link goes, relative to the submitted folder, for a student "s": the path staging must name
LEVELS = {
    "student folder": "s",
    "assignment folder": "s/lesson20",
    "notebook": "s/lesson20/lesson20.ipynb",
    "file beside it": "s/lesson20/helpers.py",
    "nested folder": "s/lesson20/data",
    "file in a nested folder": "s/lesson20/data/table.csv",
}
FOLDERS = {"student folder", "assignment folder", "nested folder"}


def clean_submission(submitted, student="s"):
    folder = submitted / student / "lesson20"
    (folder / "data").mkdir(parents=True)
    shutil.copyfile(STUDENT_NB, folder / "lesson20.ipynb")
    (folder / "helpers.py").write_text("SCALE = 2\n")
    (folder / "data" / "table.csv").write_text("a,b\n1,2\n")
    return folder


def linked_submission(tmp_path, level: str, how: str):
    """A clean submission whose `level` is replaced by a link (`how`: "symlink" or "hardlink") to a copy of the
    instructor's solution folder elsewhere on the machine."""
    submitted, elsewhere = tmp_path / "submitted", tmp_path / "instructor"
    clean_submission(elsewhere, "s")
    shutil.copyfile(SOLUTION_NB, elsewhere / "s" / "lesson20" / "lesson20.ipynb")
    clean_submission(submitted)
    target, path = elsewhere / LEVELS[level], submitted / LEVELS[level]
    if path.is_dir():
        shutil.rmtree(path)
    else:
        path.unlink()
    if how == "symlink":
        path.symlink_to(target, target_is_directory=target.is_dir())
    else:
        os.link(target, path)
    return submitted


CASES = [(level, "symlink") for level in LEVELS] + [(level, "hardlink") for level in LEVELS if level not in FOLDERS]


@pytest.mark.parametrize("level,how", CASES)
def test_a_link_at_any_level_is_found_and_named(tmp_path, level, how):
    submitted = linked_submission(tmp_path, level, how)
    assert first_link(submitted, "s", "lesson20") == (
        LEVELS[level], "symbolic link" if how == "symlink" else "hard link")


def test_a_clean_submission_has_no_link(tmp_path):
    clean_submission(tmp_path / "submitted")
    assert first_link(tmp_path / "submitted", "s", "lesson20") == ("", "")
    assert first_link(tmp_path / "submitted", "absent", "lesson20") == ("", "")


def test_links_where_nothing_is_copied_from_are_not_looked_for(tmp_path):
    """A hidden folder or a cache is never staged (attachments.beside), so a link there harms nothing."""
    folder = clean_submission(tmp_path / "submitted")
    (folder / ".ipynb_checkpoints").mkdir()
    (folder / ".ipynb_checkpoints" / "lesson20-checkpoint.ipynb").symlink_to(SOLUTION_NB)
    assert first_link(tmp_path / "submitted", "s", "lesson20") == ("", "")


def test_mount_points_are_read_from_mountinfo():
    assert "/" in mount_points()


BIND = """
import subprocess, sys
from pathlib import Path
from autograder.instructor.links import first_link
submitted, source = Path(sys.argv[1]), Path(sys.argv[2])
subprocess.run(["mount", "--bind", str(source), str(submitted / "s" / "lesson20")], check=True)
print(first_link(submitted, "s", "lesson20"))
"""


@pytest.mark.skipif(shutil.which("unshare") is None or os.geteuid() != 0, reason="needs root and unshare")
def test_a_bind_mount_is_found(tmp_path):
    """A bind mount keeps the device of the folder it covers: mountinfo shows it."""
    clean_submission(tmp_path / "submitted")
    source = clean_submission(tmp_path / "instructor")
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", BIND,
                           str(tmp_path / "submitted"), str(source)], cwd=ROOT, capture_output=True, text=True)
    if done.returncode and "mount" in done.stderr and "ermission" in done.stderr:
        pytest.skip(f"no mount namespace here: {done.stderr[-200:]}")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(("s/lesson20", "mount point"))
