"""autograder.sandbox.memory: what one call adds, from the cgroup's peak and the sampled rise, ballast or not."""
import threading

import pytest

from autograder.sandbox.memory import Measurement, RiseWatch


class FakeCgroup:
    def __init__(self, uses, peak, after):
        self.uses, self._peak, self.after = list(uses), peak, after

    def reset_peak(self):
        return self.uses[0]

    def usage(self):
        return self.uses.pop(0) if len(self.uses) > 1 else self.uses[0]

    def peak(self):
        return self._peak, self.after


def test_the_added_memory_is_the_peak_over_the_lower_of_start_and_end():
    with Measurement(FakeCgroup([100], peak=150, after=90)) as measurement:
        pass
    answer = {"status": "ok"}
    measurement.add_to(answer)
    assert answer["memory"] == {"baseline": 100, "peak": 150, "after": 90, "added": 60}


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
