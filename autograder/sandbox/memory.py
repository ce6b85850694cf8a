"""Peak memory of one call in the sandbox, read from its memory cgroup by the grader (never the sandbox)."""
import threading


class RiseWatch(threading.Thread):
    """Samples a cgroup's memory use while a call runs: the largest rise above the lowest use before it."""

    def __init__(self, cgroup, baseline: int):
        super().__init__(daemon=True)
        self.cgroup, self.low, self.rise, self.done = cgroup, baseline, 0, threading.Event()
        self.start()

    def run(self):
        while not self.done.wait(0.001):
            used = self.cgroup.usage()
            if used is None:
                return
            self.low = min(self.low, used)
            self.rise = max(self.rise, used - self.low)

    def stop(self) -> int:
        self.done.set()
        self.join(timeout=1)
        return self.rise


class Measurement:
    """What one call adds to the sandbox's memory: `with Measurement(cgroup) as memory:` around sending the
    request and reading its answer (a no-op where there is no cgroup, or when nothing is to be measured).

    A context manager, so that the sampling thread ends however the call ends: one left running (a request
    that could not be sent, say) reads the cgroup every millisecond for as long as the grading process lives."""

    def __init__(self, cgroup):
        self.cgroup, self.rise = cgroup, 0
        self.baseline = self.watch = None

    def __enter__(self) -> "Measurement":
        self.baseline = self.cgroup.reset_peak() if self.cgroup is not None else None
        self.watch = RiseWatch(self.cgroup, self.baseline) if self.baseline is not None else None
        return self

    def __exit__(self, *exc_info):
        self.rise = self.watch.stop() if self.watch is not None else 0

    def add_to(self, answer: dict):
        """Add {"memory": {"baseline", "peak", "after", "added"}} (bytes) to an ok answer; without a measurement,
        take away any "memory" the sandbox put there itself (only the grader measures)."""
        answer.pop("memory", None)
        measured = self.cgroup.peak() if self.baseline is not None else None
        if measured is not None and answer.get("status") == "ok":
            # what the call added, whatever it freed meanwhile: memory held before the call and let go during
            # it (a ballast) hides nothing, neither from the peak against the lower of the baseline and the
            # end, nor from the largest rise above the lowest use seen so far, sampled every millisecond
            answer["memory"] = {"baseline": self.baseline, "peak": measured[0], "after": measured[1],
                                "added": max(measured[0] - min(self.baseline, measured[1]), self.rise)}
