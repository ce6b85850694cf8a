"""autograder.sandbox.uids: the sandbox's uid, from a block no host account holds, checked at start-up."""
import os

import pytest

from autograder.sandbox.uids import UIDS, sandbox_uid, uid_candidates, uid_holder


def test_the_uid_is_unprivileged_and_differs_per_grading_process():
    uid = sandbox_uid(1)
    if uid is None:
        pytest.skip("not root or no setpriv: submissions run under the grader's uid")
    assert uid in UIDS and sandbox_uid(1) == uid != sandbox_uid(2)


def test_no_host_account_holds_the_uid_picked():
    """Every uid that account tools hand out is below the block; each candidate is checked against the account
    and group databases, subordinate ranges and running processes."""
    assert UIDS[0] > 0x6FFFFFFF and UIDS[-1] < 2**31 - 1
    uid = sandbox_uid()
    if uid is None:
        pytest.skip("not root or no setpriv: submissions run under the grader's uid")
    assert uid in uid_candidates(os.getpid()) and uid_holder(uid, running=False) is None


def test_what_holds_a_uid_is_named():
    assert uid_holder(0) == "the account root"
    assert uid_holder(os.getuid(), running=False) is not None
    assert uid_holder(os.getgid()) is not None  # a gid counts too
    assert uid_holder(os.getuid()) is not None


def test_a_subordinate_range_holds_its_uids(tmp_path, monkeypatch):
    from autograder.sandbox import uids
    table = tmp_path / "subuid"
    table.write_text(f"alice:{UIDS[10]}:65536\n")
    real = uids.Path
    monkeypatch.setattr(uids, "Path", lambda p: table if p in ("/etc/subuid", "/etc/subgid") else real(p))
    assert uid_holder(UIDS[10] + 5, running=False) == "/etc/subuid's range for alice"
    assert uid_holder(UIDS[9], running=False) is None
