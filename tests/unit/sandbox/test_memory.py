"""autograder.sandbox.memory: what one call adds, from the cgroup's peak and the sampled rise, ballast or not."""
from autograder.sandbox.memory import Measurement


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
    measurement = Measurement(FakeCgroup([100], peak=150, after=90))
    measurement.stop()
    answer = {"status": "ok"}
    measurement.add_to(answer)
    assert answer["memory"] == {"baseline": 100, "peak": 150, "after": 90, "added": 60}


def test_nothing_is_measured_without_a_cgroup_or_for_a_failed_answer():
    none = Measurement(None)
    none.stop()
    answer = {"status": "ok"}
    none.add_to(answer)
    failed = Measurement(FakeCgroup([100], peak=150, after=90))
    failed.stop()
    raised = {"status": "raised"}
    failed.add_to(raised)
    assert "memory" not in answer and "memory" not in raised
