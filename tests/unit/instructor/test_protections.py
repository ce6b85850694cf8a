"""autograder.instructor.protections: each protection `grade` can lose is probed, said at start-up, and a missing
one refuses grading with its fix, unless --allow-weaker-isolation."""
import os
import shutil

import pytest

from autograder.instructor.protections import (ALLOW_WEAKER, PROTECTIONS, missing_ids, probe, refusal,
                                               start_up_lines)


def test_every_protection_has_a_cost_and_a_fix():
    assert [p.id for p in PROTECTIONS] == ["bubblewrap", "pid_namespace", "fresh_namespaces", "memory_cgroup", "sandbox_uid",
                                          "limits"]
    assert all(p.name and p.without and p.fix for p in PROTECTIONS)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("bwrap"), reason="needs root and bubblewrap")
def test_root_with_bubblewrap_has_every_protection():
    missing = probe()
    assert missing_ids(missing) == [], missing
    assert all(line.startswith("  yes ") for line in start_up_lines(missing))


def test_without_bubblewrap_every_protection_is_missing_and_grading_is_refused(tmp_path, monkeypatch):
    """PATH without bwrap, as on a machine where it is not installed."""
    for tool in ("setpriv", "true", "sh"):
        if shutil.which(tool):
            (tmp_path / tool).symlink_to(shutil.which(tool))
    monkeypatch.setenv("PATH", str(tmp_path))
    missing = probe()
    assert missing_ids(missing) == [p.id for p in PROTECTIONS]
    assert missing["bubblewrap"] == "bwrap was not found"
    text = refusal(missing)
    assert ALLOW_WEAKER in text and "apt-get install -y bubblewrap" in text and "not checked" in text
    assert sum(line.startswith("  NO ") for line in start_up_lines(missing)) == len(PROTECTIONS)


def test_a_user_other_than_root_has_no_cgroup_uid_or_limits(monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    missing = probe()
    assert {"memory_cgroup", "sandbox_uid", "limits"} <= set(missing_ids(missing))
    assert missing["memory_cgroup"] == "grade runs as a user other than root"
    assert "accumulate_gradients" in refusal(missing)  # what is not checked without it
