"""Peak memory of one call in the sandbox, read by the grader (never the sandbox): from its memory cgroup, or,
where the grader may not make one (not root), from the sandbox's processes.

Two figures are sampled every millisecond while the call runs: the memory in use, and the anonymous memory
(the heap, tensors, a graph's saved activations; swapped out too). Files count in the first, never in the
second: a file on tmpfs (/tmp, /dev/shm, a memfd) written before the call and cut during it lowers the
memory in use as the call's graphs grow, but not the anonymous memory. The call's figure is the largest of
every rise, so a file can hide nothing.
"""
import os
import threading
from pathlib import Path


class RiseWatch(threading.Thread):
    """Samples a memory source while a call runs: the largest rise of its use, and of its anonymous memory,
    above the lowest of each seen before."""

    def __init__(self, source, baseline: int, anon_baseline, interval: float = 0.001):
        super().__init__(daemon=True)
        self.source, self.interval, self.done = source, interval, threading.Event()
        self.low, self.rise = baseline, 0
        self.anon_low, self.anon_rise = anon_baseline, 0
        self.same = source.usage == source.anon  # a source whose use is its anonymous memory: read once
        self.start()

    def run(self):
        while not self.done.wait(self.interval):
            used = self.source.usage()
            if used is None:
                return
            self.low = min(self.low, used)
            self.rise = max(self.rise, used - self.low)
            anon = used if self.same else self.source.anon() if self.anon_low is not None else None
            if anon is not None:
                self.anon_low = min(self.anon_low, anon)
                self.anon_rise = max(self.anon_rise, anon - self.anon_low)

    def stop(self) -> tuple:
        """(the largest rise of the memory in use, of the anonymous memory) in bytes."""
        self.done.set()
        self.join(timeout=1)
        return self.rise, self.anon_rise


class Measurement:
    """What one call adds to the sandbox's memory: `with Measurement(source) as memory:` around sending the
    request and reading its answer (a no-op where there is no source, or when nothing is to be measured).
    source: the sandbox's Cgroup, or its ProcessTree.

    A context manager, so that the sampling thread ends however the call ends: one left running (a request
    that could not be sent, say) reads the source every millisecond for as long as the grading process lives."""

    def __init__(self, source):
        self.source, self.rise, self.anon_rise = source, 0, 0
        self.baseline = self.watch = None

    def __enter__(self) -> "Measurement":
        self.baseline = self.source.reset_peak() if self.source is not None else None
        if self.baseline is not None:
            self.watch = RiseWatch(self.source, self.baseline, self.source.anon(), self.source.interval)
        return self

    def __exit__(self, *exc_info):
        self.rise, self.anon_rise = self.watch.stop() if self.watch is not None else (0, 0)

    def add_to(self, answer: dict):
        """Add {"memory": {"baseline", "added", "anon_added", "measured_by"} and, from a cgroup, "peak" and
        "after"} (bytes) to an ok answer; without a measurement, take away any "memory" the sandbox put there
        itself (only the grader measures)."""
        answer.pop("memory", None)
        if self.baseline is None or answer.get("status") != "ok":
            return
        # what the call added, whatever it freed meanwhile: memory held before the call and let go during it
        # (a ballast) hides nothing, neither from the peak against the lower of the baseline and the end, nor
        # from the largest rise above the lowest use seen so far, nor from the rise of anonymous memory
        memory = {"baseline": self.baseline, "anon_added": self.anon_rise, "measured_by": self.source.kind}
        added = max(self.rise, self.anon_rise)
        measured = self.source.peak()
        if measured is not None:
            memory.update(peak=measured[0], after=measured[1])
            added = max(added, measured[0] - min(self.baseline, measured[1]))
        answer["memory"] = {**memory, "added": added}


class ProcessTree:
    """The sandbox's memory where there is no cgroup: the anonymous memory (RssAnon and VmSwap of
    /proc/<pid>/status) of a process and everything it started, read by the grader. The student's code cannot
    reset it (as it can its own peak, VmHWM); it is sampled, with no kernel peak behind it."""

    kind = "process tree"
    interval = 0.002  # a walk of the tree costs a few file reads per process

    def __init__(self, pid: int):
        self.pid = pid

    def pids(self) -> list:
        found, stack = [], [self.pid]
        while stack:
            pid = stack.pop()
            found.append(pid)
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    stack += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
                except (OSError, ValueError):
                    continue
        return found

    def anon(self):
        """Bytes of anonymous memory, in RAM or swapped out, of every process of the tree; None if it is gone."""
        total, seen = 0, False
        for pid in self.pids():
            try:
                fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                              if line.startswith(("RssAnon:", "VmSwap:")))
            except (OSError, ValueError):
                continue
            seen = True
            total += sum(int(value.split()[0]) * 1024 for value in fields.values())
        return total if seen else None

    usage = anon

    def reset_peak(self):
        return self.anon()

    def peak(self):
        return None
