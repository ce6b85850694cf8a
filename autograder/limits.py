"""The grading policy: every limit one submission is graded under. Plain data, imported by the sandbox and
the grading steps alike, and importing nothing of the project."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Limits:
    """Every limit one submission is graded under, each field named for what it bounds. Made once, from
    the command line (`Limits.for_timeout`: `--timeout` and `--memory-mb`), and handed down to the
    grading steps, the sandbox and its zygote; these defaults are the only ones."""
    cell_seconds: float = 60       # one notebook cell, wall and CPU, while the notebook runs
    item_seconds: float = 60       # one graded item's checks (its probes' CPU too)
    notebook_seconds: float = 180  # the whole notebook's run, restarts after a crash included
    checks_seconds: float = 180    # every item's checks together, and running the notebook again for them
    memory_mb: int = 4096          # address space per process, and the cgroup's total where there is one
    max_processes: int = 64        # processes and threads, enforced where the code runs under its own uid
    max_output_kb: int = 256       # what the code prints is drained and kept up to this, then dropped
    max_answer_mb: int = 64        # largest answer read back
    tmp_mb: int = 256              # size of the private /tmp
    cpus: float = 1.0              # CPU cores the sandbox may use at once (cgroup), 0 for no limit
    max_restarts: int = 8          # fresh starts after a crash or timeout, per submission (backends enforce it)
    startup_seconds: float = 60    # starting Python, the sandbox and nbgrader, and writing the feedback page
    FORK_END_SECONDS = 5           # an item's fork ended and cleaned up after, at most (not a field)

    @classmethod
    def for_timeout(cls, timeout: float = None, **fields) -> "Limits":
        """`--timeout T` (seconds per exercise): T for one cell and one item, 3T for the whole notebook's
        run and 3T for all its checks; without T, the defaults."""
        if timeout is not None:
            fields = {"cell_seconds": timeout, "item_seconds": timeout, "notebook_seconds": 3 * timeout,
                      "checks_seconds": 3 * timeout, **fields}
        return cls(**fields)

    @property
    def student_seconds(self) -> float:
        """Wall-clock seconds for grading one student from staging to feedback, after which its grading
        process is killed: the notebook's run, then all its checks, plus a minute for starting the
        sandbox and nbgrader and writing the feedback page (startup_seconds)."""
        return self.notebook_seconds + self.checks_seconds + self.startup_seconds
