"""autograder.sandbox.memory: what one call adds, from the cgroup's peak and the sampled rise, ballast or not."""
import threading

import pytest

from autograder.sandbox.memory import Measurement, RiseWatch


class FakeCgroup:
    """A cgroup whose memory in use and anonymous memory go through these values, one per sample."""
    kind, interval = "cgroup", 0.001

    def __init__(self, uses, peak, after, anons=None):
        self.uses, self._peak, self.after = list(uses), peak, after
        self.anons = list(anons or [0])

    def reset_peak(self):
        return self.uses[0]

    def usage(self):
        return self.uses.pop(0) if len(self.uses) > 1 else self.uses[0]

    def anon(self):
        return self.anons.pop(0) if len(self.anons) > 1 else self.anons[0]

    def peak(self):
        return self._peak, self.after


def test_the_added_memory_is_the_peak_over_the_lower_of_start_and_end():
    with Measurement(FakeCgroup([100], peak=150, after=90)) as measurement:
        pass
    answer = {"status": "ok"}
    measurement.add_to(answer)
    assert answer["memory"] == {"baseline": 100, "peak": 150, "after": 90, "added": 60, "anon_added": 0,
                                "measured_by": "cgroup"}


def test_anonymous_memory_that_rises_while_a_file_is_cut_still_counts():
    """The tmpfs ballast: the memory in use stays level (a file of 80 is cut as the graphs grow by 80), the
    anonymous memory rises by 80. The call added 80."""
    level = [100] * 400
    anon = [20] * 50 + [40] * 50 + [70] * 50 + [100] * 250
    with Measurement(FakeCgroup(level, peak=100, after=100, anons=anon)) as measurement:
        while len(measurement.source.anons) > 1:
            threading.Event().wait(0.005)
    answer = {"status": "ok"}
    measurement.add_to(answer)
    assert answer["memory"]["added"] == answer["memory"]["anon_added"] == 80, answer


def test_a_process_tree_measures_what_its_processes_allocate(tmp_path):
    """Without a cgroup, the grader sums the anonymous memory of a process and everything it started: a child
    that allocates 64 MiB while it is measured adds about that much."""
    import subprocess
    import sys

    from autograder.sandbox.memory import ProcessTree
    go = tmp_path / "go"
    code = ("import os, sys, time\n"
            "while not os.path.exists(sys.argv[1]): time.sleep(0.01)\n"
            "block = bytearray(64 << 20)\n"
            "time.sleep(0.5)\n")
    parent = subprocess.Popen(["/bin/sh", "-c", f"{sys.executable} -c '{code}' {go}; sleep 0.2"])
    try:
        threading.Event().wait(0.5)
        with Measurement(ProcessTree(parent.pid)) as measurement:
            go.touch()
            parent.wait(timeout=30)
        answer = {"status": "ok"}
        measurement.add_to(answer)
    finally:
        parent.kill()
    assert answer["memory"]["measured_by"] == "process tree" and "peak" not in answer["memory"]
    assert 60 << 20 <= answer["memory"]["added"] <= 80 << 20, answer


def test_nothing_is_measured_without_a_cgroup_or_for_a_failed_answer():
    with Measurement(None) as none:
        pass
    answer = {"status": "ok"}
    none.add_to(answer)
    with Measurement(FakeCgroup([100], peak=150, after=90)) as failed:
        pass
    raised = {"status": "raised"}
    failed.add_to(raised)
    assert "memory" not in answer and "memory" not in raised


def watches() -> list:
    return [t for t in threading.enumerate() if isinstance(t, RiseWatch)]


def test_the_sampling_thread_ends_however_the_call_ends():
    """A request that cannot be sent (the child died) raises inside the measurement: its thread, which reads
    the cgroup every millisecond, must not outlive it (before, each such request left one for good)."""
    before = watches()
    with pytest.raises(OSError):
        with Measurement(FakeCgroup([100, 120, 110], peak=150, after=90)):
            assert len(watches()) == len(before) + 1
            raise OSError("the request could not be sent")
    assert watches() == before


def test_a_memory_figure_the_sandbox_wrote_itself_is_taken_away():
    """Where nothing is measured (no cgroup), a "memory" the child put in its answer must not reach the checks,
    which would take it for the grader's measurement."""
    forged = {"status": "ok", "memory": {"baseline": 0, "peak": 0, "after": 0, "added": 0}}
    with Measurement(None) as none:
        pass
    none.add_to(forged)
    assert "memory" not in forged
