"""autograder.sandbox.isolation: the command that starts the zygote, with and without bubblewrap."""
import os
import subprocess
import sys
import time

import pytest

from autograder.limits import Limits
from autograder.sandbox import isolation
from autograder.sandbox.isolation import BOX, Cgroup, command, have_bwrap, probe_files, remove_cgroup


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


def test_remove_cgroup_kills_what_is_left_and_gives_up_on_a_folder_that_stays(tmp_path):
    """A plain folder stands in for a cgroup: its cgroup.procs names a live process, which is killed; the folder
    (not empty, unlike a real cgroup once its processes are gone) is never removed, and it says so in time."""
    folder = tmp_path / "group"
    folder.mkdir()
    sleeper = subprocess.Popen(["sleep", "60"])
    (folder / "cgroup.procs").write_text(f"{sleeper.pid}\n")
    started = time.monotonic()
    assert remove_cgroup(folder, seconds=0.2) is False
    assert time.monotonic() - started < 5 and folder.exists()
    assert sleeper.wait(timeout=5) == -9


def test_remove_cgroup_removes_an_empty_folder_and_accepts_a_missing_one(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert remove_cgroup(empty) is True and not empty.exists()
    assert remove_cgroup(tmp_path / "never-made") is True
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "cgroup.procs").write_text("")
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        (kept / "cgroup.procs").write_text(f"{sleeper.pid}\n")
        assert remove_cgroup(kept, kill=False, seconds=0.1) is False
        assert sleeper.poll() is None, "kill=False killed the process"
    finally:
        sleeper.kill()
        sleeper.wait()


def test_the_peak_is_read_through_the_descriptor_that_reset_it(tmp_path, monkeypatch):
    """cgroup v2 from Linux 6.12 keeps a reset of memory.peak per open file: a fresh open reads the peak since
    the cgroup was made. A plain folder plays the kernel: after the reset, the path names a new file holding the
    whole-life peak, while the file the reset went through holds the peak since then."""
    monkeypatch.setattr(Cgroup, "ROOT", tmp_path)
    (tmp_path / "cgroup.controllers").write_text("memory pids")
    group = Cgroup(Limits())
    folder = group.dirs[0]
    (folder / "memory.current").write_text("100")
    (folder / "memory.peak").write_text("5000")
    assert group.memory.reset_peak() == 100
    (folder / "memory.peak").rename(folder / "reset-through")
    (folder / "memory.peak").write_text("5000")                 # what another open would read
    (folder / "reset-through").write_text("150")                # what the resetting descriptor reads
    assert group.memory.peak() == (150, 100)
    for f in folder.iterdir():
        f.unlink()
    group.close()
    assert not folder.exists()


# the kernel's weights of a few nice levels (kernel/sched/core.c, sched_prio_to_weight), 1024 at niceness 0
KERNEL_WEIGHT = {-5: 3121, 5: 335, 10: 110, 19: 15}


@pytest.mark.parametrize("nice", sorted(KERNEL_WEIGHT))
def test_a_sandbox_cgroup_keeps_the_graders_niceness(tmp_path, monkeypatch, nice):
    """A niced grading process makes CPU cgroups with the share of its niceness (v1 cpu.shares, v2 cpu.weight):
    else its sandboxes would compete with the machine as processes at niceness 0. Plain folders play the
    kernel, one v1 tree and one v2 tree."""
    monkeypatch.setattr(isolation.os, "getpriority", lambda which, who: nice)
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    for controller in ("memory", "pids", "cpu"):
        (v1 / controller).mkdir(parents=True)
    (v1 / "cpu" / "cpu.cfs_quota_us").write_text("-1")
    v2.mkdir()
    (v2 / "cgroup.controllers").write_text("memory pids cpu")
    for root in (v1, v2):
        monkeypatch.setattr(Cgroup, "ROOT", root)
        group = Cgroup(Limits())
        files = {f.name: f.read_text() for d in group.dirs for f in d.iterdir()}
        share = int(files["cpu.shares"]) if root is v1 else int(files["cpu.weight"]) * 1024 / 100
        # v2's unit of weight is 10.24 of v1's shares, hence the 10 beside the 5%
        assert abs(share - KERNEL_WEIGHT[nice]) <= 0.05 * KERNEL_WEIGHT[nice] + 10, (root.name, files)


def test_a_grader_at_niceness_0_leaves_the_cpu_share_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(isolation.os, "getpriority", lambda which, who: 0)
    monkeypatch.setattr(Cgroup, "ROOT", tmp_path)
    (tmp_path / "cgroup.controllers").write_text("memory pids cpu")
    group = Cgroup(Limits())
    assert not (group.dirs[0] / "cpu.weight").exists()


def test_the_probes_folders_in_the_sandbox_are_made_each_after_its_parent():
    """bwrap makes a bind's missing folders 0700, which the sandbox's uid could not enter: each folder of a probe
    file under /sandbox is made open first, parents before children."""
    from pathlib import Path
    folders = isolation.probe_folders()
    assert {str(Path(p).parent) for p in probe_files(True)} <= set(folders)
    assert all(str(Path(f).parent) in [BOX, *folders[:i]] for i, f in enumerate(folders))
