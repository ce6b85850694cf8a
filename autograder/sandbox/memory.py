"""Peak memory of one call in the sandbox, read by the grader (never the sandbox): from its memory cgroup, or,
where the grader may not make one (not root), from the sandbox's processes.

While the call runs, the memory in use is sampled every millisecond, and so is each kind of it on its own
(anonymous, tmpfs and shared, other files', the kernel's). The call's figure is the largest of the kernel's
peak, the rise of the memory in use, and the sum of each kind's own rise: memory of one kind let go of during
the call (a tmpfs file cut, a pipe emptied) cannot offset what the call holds in another, and what it holds
in a kind it let go of counts again. A measured call's fork has no writable /tmp or /dev/shm and none of the
notebook's descriptors (namespaces.lock_for_measurement), so there is no memory charged before the call that
it could cut or reuse: a file can hide nothing.
"""
import contextlib
import os
import threading
from pathlib import Path


class RiseWatch(threading.Thread):
    """Samples a memory source while a call runs: the largest rise of its use, and of each kind of memory, above
    the lowest of each seen before."""

    def __init__(self, source, baseline: int, parts, interval: float = 0.001):
        super().__init__(daemon=True)
        self.source, self.interval, self.done = source, interval, threading.Event()
        self.low, self.rise = baseline, 0
        self.lows, self.rises = dict(parts or {}), dict.fromkeys(parts or {}, 0)
        self.start()

    def run(self):
        while not self.done.wait(self.interval):
            parts = self.source.parts() if self.lows else None
            used = sum(parts.values()) if parts and self.source.usage_is_parts else self.source.usage()
            if used is None:
                return
            self.low = min(self.low, used)
            self.rise = max(self.rise, used - self.low)
            for kind, now in (parts or {}).items():
                if kind in self.lows:
                    self.lows[kind] = min(self.lows[kind], now)
                    self.rises[kind] = max(self.rises[kind], now - self.lows[kind])

    def stop(self) -> tuple:
        """(the largest rise of the memory in use, {kind: its largest rise}) in bytes."""
        self.done.set()
        self.join(timeout=1)
        return self.rise, self.rises


class Measurement:
    """What one call adds to the sandbox's memory: `with Measurement(source) as memory:` around sending the
    request and reading its answer (a no-op where there is no source, or when nothing is to be measured).
    source: the sandbox's Cgroup, or its ProcessTree.

    A context manager, so that the sampling thread ends however the call ends: one left running (a request
    that could not be sent, say) reads the source every millisecond for as long as the grading process lives."""

    def __init__(self, source):
        self.source, self.rise, self.rises = source, 0, {}
        self.baseline = self.watch = None

    def __enter__(self) -> "Measurement":
        self.baseline = self.source.reset_peak() if self.source is not None else None
        if self.baseline is not None:
            self.watch = RiseWatch(self.source, self.baseline, self.source.parts(), self.source.interval)
        return self

    def __exit__(self, *exc_info):
        self.rise, self.rises = self.watch.stop() if self.watch is not None else (0, {})

    def add_to(self, answer: dict):
        """Add {"memory": {"baseline", "added", "anon_added", "kinds_added", "measured_by"} and, from a cgroup,
        "peak" and "after"} (bytes) to an ok answer; without a measurement, take away any "memory" the
        sandbox put there itself (only the grader measures)."""
        answer.pop("memory", None)
        if self.baseline is None or answer.get("status") != "ok":
            return
        # what the call added, whatever it freed meanwhile: memory held before the call and let go during it
        # (a ballast) hides nothing, neither from the peak against the lower of the baseline and the end, nor
        # from the largest rise above the lowest use seen so far, nor from each kind's own rise
        kinds = sum(self.rises.values())
        memory = {"baseline": self.baseline, "anon_added": self.rises.get("anon", 0), "kinds_added": kinds,
                  "measured_by": self.source.kind}
        added = max(self.rise, kinds)
        measured = self.source.peak()
        if measured is not None:
            memory.update(peak=measured[0], after=measured[1])
            added = max(added, measured[0] - min(self.baseline, measured[1]))
        answer["memory"] = {**memory, "added": added}


class CgroupMemory:
    """A memory source: the memory controller's files of a sandbox's cgroup (v1 or v2), read by the grader. `dirs`
    is the cgroup's list of folders, filled when the cgroup is made."""

    kind = "cgroup"
    interval = 0.001
    usage_is_parts = False  # the memory in use is the kernel's own count

    def __init__(self, dirs: list):
        self.dirs = dirs
        self._peak_fd = None  # memory.peak (v2) or memory.max_usage_in_bytes (v1), open since the last reset
        self._stat_fd = None  # memory.stat, read again through the same descriptor at every sample
        self._extra_paths = None  # the kernel's memory (v1) and swap (v2), found at the first sample

    def _file(self, v1: str, v2: str):
        """The memory controller's file with this name (v1 or v2 spelling), or None."""
        for d in self.dirs:
            for name in (v1, v2):
                if (d / name).exists():
                    return d / name
        return None

    @property
    def measures(self) -> bool:
        return self._file("memory.usage_in_bytes", "memory.current") is not None

    def reset_peak(self):
        """Start a new peak-memory measurement; returns the memory in use now (bytes), or None where the
        kernel cannot reset the peak (then nothing can be measured). Read by the grader, never the sandbox.

        The peak file stays open until the next reset: from Linux 6.12, cgroup v2 keeps a reset of
        memory.peak per open file, so only a read through the descriptor that wrote it gives the peak since
        the reset (another open would read the peak since the cgroup was made). v1 reads the same either way."""
        self._close_peak()
        peak, usage = self._file("memory.max_usage_in_bytes", "memory.peak"), self._file(
            "memory.usage_in_bytes", "memory.current")
        if peak is None or usage is None:
            return None
        try:
            self._peak_fd = os.open(peak, os.O_RDWR)
            os.write(self._peak_fd, b"0")
            return int(usage.read_text())
        except (OSError, ValueError):
            self._close_peak()
            return None

    def peak(self):
        """(highest memory use since reset_peak(), memory in use now) in bytes, or None."""
        usage = self._file("memory.usage_in_bytes", "memory.current")
        if self._peak_fd is None or usage is None:
            return None
        try:
            return int(os.pread(self._peak_fd, 64, 0)), int(usage.read_text())
        except (OSError, ValueError):
            return None

    def _close_peak(self):
        if self._peak_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._peak_fd)
            self._peak_fd = None

    def parts(self):
        """The memory in use now, by kind (bytes): {"anon": anonymous, in RAM or swapped out, "shmem": tmpfs and
        shared memory, "file": other files' pages, "kernel": the kernel's own (pipes, sockets, page tables)};
        None without a memory controller. From memory.stat (v1: rss, swap, shmem, cache, and
        memory.kmem.usage_in_bytes; v2: anon, shmem, file, kernel, and memory.swap.current)."""
        try:
            if self._stat_fd is None:
                stat = self._file("memory.stat", "memory.stat")
                if stat is None:
                    return None
                self._stat_fd = os.open(stat, os.O_RDONLY)
            fields = {}
            for line in os.pread(self._stat_fd, 1 << 16, 0).decode().splitlines():
                name, _, value = line.partition(" ")
                if name in ("rss", "swap", "shmem", "cache", "anon", "file", "kernel"):
                    fields[name] = int(value)
            if self._extra_paths is None:
                self._extra_paths = [path for path in (self._file(name, name) for name in (
                    "memory.kmem.usage_in_bytes", "memory.swap.current")) if path is not None]
            extra = {path.name: int(path.read_text()) for path in self._extra_paths}
        except (OSError, ValueError):
            return None
        if "anon" in fields:  # v2
            return {"anon": fields["anon"] + extra.get("memory.swap.current", 0), "shmem": fields.get("shmem", 0),
                    "file": fields.get("file", 0) - fields.get("shmem", 0), "kernel": fields.get("kernel", 0)}
        return {"anon": fields.get("rss", 0) + fields.get("swap", 0), "shmem": fields.get("shmem", 0),
                "file": fields.get("cache", 0) - fields.get("shmem", 0),
                "kernel": extra.get("memory.kmem.usage_in_bytes", 0)}

    def usage(self):
        """The memory in use now (bytes), or None."""
        usage = self._file("memory.usage_in_bytes", "memory.current")
        try:
            return int(usage.read_text()) if usage is not None else None
        except (OSError, ValueError):
            return None

    def close(self):
        self._close_peak()
        if self._stat_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._stat_fd)
            self._stat_fd = None


class ProcessTree:
    """The sandbox's memory where there is no cgroup: the anonymous memory (RssAnon and VmSwap of
    /proc/<pid>/status) of a process and everything it started, read by the grader. The student's code cannot
    reset it (as it can its own peak, VmHWM); it is sampled, with no kernel peak behind it."""

    kind = "process tree"
    interval = 0.002  # a walk of the tree costs a few file reads per process
    usage_is_parts = True  # the sum of parts(): one walk a sample

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

    def parts(self):
        """{"anon": RssAnon and VmSwap, "shmem": RssShmem} (bytes) summed over every process of the tree; None if
        it is gone. Unmapped tmpfs files and the kernel's memory show in no process's figures."""
        total, seen = {"anon": 0, "shmem": 0}, False
        for pid in self.pids():
            try:
                lines = Path(f"/proc/{pid}/status").read_text().splitlines()
            except OSError:
                continue
            for line in lines:
                name, _, value = line.partition(":")
                kind = {"RssAnon": "anon", "VmSwap": "anon", "RssShmem": "shmem"}.get(name)
                if kind:
                    total[kind] += int(value.split()[0]) * 1024
                    seen = True
        return total if seen else None

    def usage(self):
        parts = self.parts()
        return sum(parts.values()) if parts is not None else None

    def reset_peak(self):
        return self.usage()

    def peak(self):
        return None
