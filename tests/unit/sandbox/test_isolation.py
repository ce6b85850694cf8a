"""autograder.sandbox.isolation: the command that starts the zygote, with and without bubblewrap."""
import os
import sys

import pytest

from autograder.limits import Limits
from autograder.sandbox.isolation import BOX, command, have_bwrap, probe_files, sandbox_uid


def test_without_isolation_it_is_a_plain_isolated_python():
    cmd = command(Limits(), isolate=False, uid=None, cgroup=None)
    assert cmd[:2] == [sys.executable, "-I"] and os.path.isfile(cmd[2]) and all(os.path.isfile(f) for f in probe_files(False))


@pytest.mark.skipif(not have_bwrap(), reason="bubblewrap is not installed")
def test_with_bubblewrap_there_is_no_network_and_no_instructor_package():
    cmd = command(Limits(), isolate=True, uid=None, cgroup=None)
    assert cmd[0] == "bwrap" and "--unshare-net" in cmd and "--die-with-parent" in cmd
    instructor = cmd.index(f"{BOX}/lib/autograder/instructor")
    assert cmd[instructor - 1] == "--tmpfs"  # the hidden checks are hidden under an empty folder
    assert cmd[-3].split(os.pathsep) == probe_files(True)
    for path in probe_files(True):  # each probes file is bound read-only where the child reads it
        assert cmd[cmd.index(path) - 2] == "--ro-bind"


def test_the_uid_is_unprivileged_and_differs_per_grading_process():
    uid = sandbox_uid(1)
    if uid is None:
        pytest.skip("not root or no setpriv: submissions run under the grader's uid")
    assert uid >= 61000 and sandbox_uid(1) == uid != sandbox_uid(2)
