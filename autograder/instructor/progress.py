"""What `grade` shows while it works: a progress bar on a terminal, one line per student anywhere else.

A bar redrawn with carriage returns reads well on a terminal and badly in a file: a Slurm job's log, or
a pipe, would hold every redraw. So where the stream is not a terminal each student who is finished
gets one line of its own, flushed at once: its place in the run, its status, its score and its seconds,
and why, when it was not simply graded.
"""
import sys

from ..items import AUTO_ITEMS
from .messages import progress_line

AUTO_POINTS = float(sum(item.points for item in AUTO_ITEMS))


class Lines:
    """One line per finished student (text.progress_line), for a log file or a pipe."""

    def __init__(self, total: int, stream):
        self.total, self.stream, self.done = total, stream, 0

    def update(self, record):
        self.done += 1
        print(progress_line(self.done, self.total, record.student, record.status, score(record), AUTO_POINTS,
                            record.seconds, record.reason), file=self.stream, flush=True)

    def close(self):
        pass


class Bar:
    """tqdm's bar, naming the last student finished and their status."""

    def __init__(self, total: int, stream):
        from tqdm import tqdm
        self.bar = tqdm(total=total, desc="grading", unit="student", file=stream)

    def update(self, record):
        self.bar.set_postfix_str(f"{record.student}: {record.status}", refresh=False)
        self.bar.update(1)

    def close(self):
        self.bar.close()


class Silent:
    """--quiet: nothing."""

    def update(self, record):
        pass

    def close(self):
        pass


def progress_display(total: int, enabled: bool = True, stream=None):
    """The progress display for a run grading `total` students, written to `stream` (default stderr)."""
    stream = sys.stderr if stream is None else stream
    if not enabled:
        return Silent()
    return Bar(total, stream) if stream.isatty() else Lines(total, stream)


def score(record) -> float:
    """The autograded points in a student's record (0 when nothing was graded)."""
    return round(sum(float(item.get("score", 0.0)) for item in record.items.values()), 4)
