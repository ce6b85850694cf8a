"""autograder.sandbox.memory: what one call adds, from the cgroup's peak and the sampled rise, ballast or not."""
import threading

import pytest

from autograder.sandbox.memory import Measurement, RiseWatch


class FakeCgroup:
    """A cgroup whose memory in use and whose kinds of memory go through these values, one per sample."""
    kind, interval, usage_is_parts = "cgroup", 0.001, False

    def __init__(self, uses, peak, after, parts=None):
        self.uses, self._peak, self.after = list(uses), peak, after
        self.parts_seen = list(parts or [{"anon": 0}])

    def reset_peak(self):
        return self.uses[0]

    def usage(self):
        return self.uses.pop(0) if len(self.uses) > 1 else self.uses[0]

    def parts(self):
        return self.parts_seen.pop(0) if len(self.parts_seen) > 1 else self.parts_seen[0]

    def peak(self):
        return self._peak, self.after


def test_the_added_memory_is_the_peak_over_the_lower_of_start_and_end():
    with Measurement(FakeCgroup([100], peak=150, after=90)) as measurement:
        pass
    answer = {"status": "ok"}
    measurement.add_to(answer)
    assert answer["memory"] == {"baseline": 100, "peak": 150, "after": 90, "added": 60, "anon_added": 0,
                                "kinds_added": 0, "measured_by": "cgroup"}


def measured(cgroup) -> dict:
    with Measurement(cgroup) as measurement:
        while len(cgroup.parts_seen) > 1:
            threading.Event().wait(0.005)
    answer = {"status": "ok"}
    measurement.add_to(answer)
    return answer["memory"]


def test_anonymous_memory_that_rises_while_a_file_is_cut_still_counts():
    """The tmpfs ballast: the memory in use stays level (a file of 80 is cut as the graphs grow by 80), the
    anonymous memory rises by 80. The call added 80."""
    parts = [{"anon": 20 + a, "shmem": 80 - a} for a in (0, 20, 50, 80) for _ in range(40)]
    got = measured(FakeCgroup([100] * 400, peak=100, after=100, parts=parts))
    assert got["added"] == got["anon_added"] == 80, got


def test_what_one_kind_lets_go_of_cannot_offset_what_another_holds():
    """The graphs kept half in anonymous memory, half in the kernel's (pipes written during the call), while a
    file written before it is cut: the memory in use stays level, no kind rises by more than 40, and every
    kind's own rise counts, 40 + 40."""
    parts = [{"anon": 10 + a, "kernel": 10 + a, "shmem": 100 - 2 * a} for a in (0, 20, 40) for _ in range(40)]
    got = measured(FakeCgroup([120] * 300, peak=120, after=120, parts=parts))
    assert got["kinds_added"] == 80 and got["added"] == 80, got


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
