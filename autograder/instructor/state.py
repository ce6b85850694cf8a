"""Each student's record of a class's grading, written once per grading and read by `export`.

One JSON file per student in OUT/state/: the fingerprint of what was graded (so an unchanged
submission is not graded again), the status and the reason, and each autograded item's score and
rubric as the grader found them. nbgrader's gradebook holds the same scores, and any an instructor
changes or adds in formgrader: export (gradebook.py) shows an item whose score was changed there
with the instructor's score and without the grader's rubric.
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
    items: dict = field(default_factory=dict)    # item id -> {"score", "max_score", "rubric": per behaviour}
    review: dict = field(default_factory=dict)   # item id -> why it is set aside for manual grading

    @property
    def rubric(self) -> dict:
        """item id -> its rubric, per behaviour: {id: {"score", "max_score", "central"}} (grades.json's "rubric")."""
        return {i: r["rubric"] for i, r in self.items.items() if r.get("rubric")}


def item_records(result) -> dict:
    """A grading.SubmissionResult's items as a record holds them: score, points and rubric, plain data."""
    return {i: {"score": r.score, "max_score": float(r.item.points),
                "rubric": {b["id"]: {"score": b["earned"] or 0.0, "max_score": b["points"], "central": b["central"]}
                           for b in r.behaviours()}}
            for i, r in result.items.items()}


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
