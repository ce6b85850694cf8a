"""autograder.sandbox.zygote: one zygote per grading process and limits, reused, and ended by close_all
(one start, without bubblewrap)."""
import os
import warnings

import pytest

from autograder.limits import Limits
from autograder.sandbox import zygote as module
from autograder.sandbox.zygote import close_all, shared_zygote


def test_one_zygote_is_shared_until_it_is_closed():
    limits = Limits.for_timeout(30)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        zygote = shared_zygote(limits, isolate=False)
    scratch = zygote.scratch  # not isolated: the children's TMPDIR, the zygote's own
    try:
        assert zygote.alive and shared_zygote(limits, isolate=False) is zygote
        assert scratch and os.path.isdir(scratch) and os.path.basename(scratch).startswith("lesson20-zygote-")
    finally:
        close_all()
    assert not zygote.alive and not os.path.exists(scratch)


def test_a_zygote_that_cannot_start_leaves_nothing_behind(tmp_path, monkeypatch):
    """Popen itself fails (no memory, no executable): the zygote's scratch folder (and its cgroups, as root) go
    with the error, not when the grading process ends."""
    def no_process(*args, **kwargs):
        raise OSError(12, "Cannot allocate memory")

    monkeypatch.setattr(module.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(module.subprocess, "Popen", no_process)
    with pytest.raises(OSError, match="Cannot allocate memory"):
        module.Zygote(Limits.for_timeout(30), isolate=False)
    assert list(tmp_path.iterdir()) == []
