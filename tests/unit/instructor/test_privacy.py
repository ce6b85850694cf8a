"""autograder.instructor.privacy: a path another account can read is found (its folders must let them in too),
named with the command that fixes it; what the commands create is the instructor's alone (or the group's)."""
import grp
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograder.instructor.privacy import exposed, fix_command, make_private, reachable, refusal, set_umask


@pytest.fixture
def tree():
    """A folder in /tmp (open to all), which others can enter but not list, holding a file they can read."""
    base = Path(tempfile.mkdtemp(prefix="l20-privacy-"))
    base.chmod(0o755)
    top = base / "open"
    top.mkdir()
    (top / "inner").mkdir()
    (top / "inner" / "secret.txt").write_text("s")
    for folder in (top, top / "inner"):
        folder.chmod(0o711)  # can be entered, not listed
    (top / "inner" / "secret.txt").chmod(0o644)
    yield top
    shutil.rmtree(base)


def test_a_file_others_can_reach_and_read_is_found_and_the_fix_closes_it(tree):
    assert exposed([tree]) == [(tree, tree / "inner" / "secret.txt")]
    subprocess.run(fix_command(tree, ""), shell=True, check=True)
    assert exposed([tree]) == []


def test_a_folder_nobody_else_can_enter_hides_everything_in_it(tree):
    tree.chmod(0o700)
    assert exposed([tree]) == [] and not reachable(tree / "inner" / "secret.txt", "")


def test_the_refusal_names_the_path_what_is_readable_and_the_fix(tree):
    text = refusal([(tree, tree / "inner" / "secret.txt")], "")
    assert str(tree / "inner" / "secret.txt") in text and f"chmod -R go-rwx {tree}" in text and "644" in text
    assert "chgrp -R staff" in fix_command(tree, "staff")


def test_made_private_is_700_or_2750_for_the_instructors_group(tmp_path):
    make_private(tmp_path / "a" / "b")
    assert os.stat(tmp_path / "a" / "b").st_mode & 0o7777 == 0o700
    group = grp.getgrgid(os.getgid()).gr_name
    make_private(tmp_path / "c", group)
    assert os.stat(tmp_path / "c").st_mode & 0o7777 == 0o2750


def test_the_umask_keeps_new_files_from_others():
    old = set_umask("")
    try:
        assert os.umask(0o077) == 0o077
        set_umask("staff")
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(old)
