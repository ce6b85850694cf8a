"""Per-student state of a class's grading: what the gradebook cannot hold.

One JSON file per student in OUT/state/: the fingerprint of what was graded (so an unchanged
submission is not graded again), the status and the reason, and the rubric detail of each item.
The scores themselves live in nbgrader's gradebook, where an instructor may change them.
"""
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from ..text import clip
from .files import write_atomic


# how grading a student ended: a notebook's status (grading.NotebookStatus: "graded", "failed", "timeout",
# the last also when the grading process passed its deadline), or "error": the grader's fault, not the
# submission's, graded again next run. grades.json shows it.
StudentStatus = Literal["graded", "failed", "timeout", "error"]


@dataclass
class StudentRecord:
    student: str
    fingerprint: str = ""                        # "" means: grade again next time
    status: StudentStatus = "graded"
    reason: str = ""                             # why it is not simply "graded", for people
    rubric: dict = field(default_factory=dict)   # item id -> per-behaviour detail (plain data)
    review: dict = field(default_factory=dict)   # item id -> why it is set aside for manual grading


def state_path(out: Path, student: str) -> Path:
    return Path(out) / "state" / f"{student}.json"


def load_state(out: Path, student: str):
    """The student's record, or None if there is none (or it cannot be read)."""
    try:
        data = json.loads(state_path(out, student).read_text())
        known = {k: v for k, v in data.items() if k in StudentRecord.__dataclass_fields__}
        return StudentRecord(**known)
    except (OSError, ValueError, TypeError):
        return None


def save_state(out: Path, record: StudentRecord):
    record.reason = clip(record.reason, "reason")  # it quotes the submission (a file name, an error)
    write_atomic(state_path(out, record.student), json.dumps(asdict(record), indent=1, sort_keys=True), force=True)


def recorded_students(out: Path) -> list:
    """Every student with a state file in this output folder."""
    return sorted(p.stem for p in (Path(out) / "state").glob("*.json"))
