"""Each student's record of a class's grading, written once per grading and read by `export`.

One JSON file per student in OUT/state/: the fingerprint of what was graded (so an unchanged
submission is not graded again), the status and the reason, each autograded item's score and
rubric as the grader found them, with what the failing checks of each failing behaviour said, and
how long grading took (the class report, class_report.py, reads those two). nbgrader's gradebook holds the same scores, and any an instructor
changes or adds in formgrader: export (gradebook.py) shows an item whose score was changed there
with the instructor's score and without the grader's rubric.
"""
import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal, Optional

from ..text import NOT_IMPLEMENTED, clip
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
    seconds: Optional[float] = None              # wall time of its grading; None in records older than timings
    submission: dict = field(default_factory=dict)  # who submitted and when (arrival.arrival): time, source, ...
    answers: dict = field(default_factory=dict)  # written answer's grade id -> a hash of its text as graded
    weaker: list = field(default_factory=list)   # the protections the sandbox lacked (protections.py), if any

    def settle(self, status: StudentStatus, reason: str, items: dict = None, review: dict = None):
        """Set the record's status: the one place that does, with its reason and, for a graded submission, its
        items and review flags (none otherwise). "error" is never the submission's fault: the fingerprint goes,
        so that the next run grades the student again."""
        self.status, self.reason = status, reason
        self.items, self.review = dict(items or {}), dict(review or {})
        if status == "error":
            self.fingerprint = ""

    @property
    def rubric(self) -> dict:
        """item id -> its rubric, per behaviour: {id: {"score", "max_score", "central"}} (grades.json's "rubric")."""
        return {i: r["rubric"] for i, r in self.items.items() if r.get("rubric")}

    @property
    def not_checked(self) -> dict:
        """item id -> the behaviours this grading machine could not check (grades.json's "not_checked")."""
        return {i: list(r["not_checked"]) for i, r in self.items.items() if r.get("not_checked")}


MESSAGES_KEPT = 3  # of a failing behaviour's distinct messages, those its record keeps (the first names the cause)


def item_records(result) -> dict:
    """A grading.SubmissionResult's items as a record holds them, plain data: score, points, rubric, and under
    "messages" what the failing checks of each failing behaviour said (grades.json leaves these out)."""
    records = {}
    for i, r in result.items.items():
        judged = r.behaviours()
        records[i] = {
            "score": r.score, "max_score": float(r.item.points),
            "rubric": {b["id"]: {"score": b["earned"] or 0.0, "max_score": b["points"], "central": b["central"],
                                 **({"not_checked": True} if b.get("not_checked") else {})}
                       for b in judged},
            "messages": {b["id"]: failure_messages(b["failures"]) for b in judged if b["failures"]},
        }
        unchecked = [b["id"] for b in judged if b.get("not_checked")]
        if unchecked:
            records[i]["not_checked"] = unchecked
    return records


def failure_messages(failures: list) -> list:
    """A failing behaviour's distinct messages, as its record keeps them. Where every check said the code is not
    written yet, one message says so: the calls each named (and their numbers) tell an instructor nothing more."""
    if all(f["reason"] == "not_implemented" for f in failures):
        return [NOT_IMPLEMENTED]
    return list(dict.fromkeys(clip(f["message"], "check") for f in failures))[:MESSAGES_KEPT]


def state_path(out: Path, student: str) -> Path:
    """OUT/state/<student>.json; a folder name that no file name can hold (too long, a slash, or one that would be
    taken for a refused folder's) gets a file named by its hash, which any file system holds (the record names the
    folder)."""
    if holdable(student):
        return Path(out) / "state" / f"{student}.json"
    digest = hashlib.sha256(student.encode("utf-8", "surrogateescape")).hexdigest()[:24]
    return Path(out) / "state" / f"{REFUSED_PREFIX}{digest}.json"


def holdable(name: str) -> bool:
    """Whether `name`.json (and the `.<name>.json.<pid>.part` written first) is a file name on any file system."""
    return (len(name.encode("utf-8", "surrogateescape")) <= 200 and not set(name) & {"/", "\0"}
            and name not in (".", "..") and not name.startswith(REFUSED_PREFIX))


REFUSED_PREFIX = "~refused-"  # state files of folders whose name is no usable id


def read_state(out: Path, student: str) -> StudentRecord:
    """The student's record; OSError if there is none, ValueError (naming the file and why) if it cannot be read.
    Keys it does not know are ignored, and those it lacks (an older record's) take their defaults."""
    path = state_path(out, student)
    text = path.read_text()
    try:
        data = json.loads(text)
        known = {k: v for k, v in data.items() if k in StudentRecord.__dataclass_fields__}
        record = StudentRecord(**known)
    except (ValueError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path} is not a student record ({type(exc).__name__}: {clip(str(exc), 'message')})") from None
    wrong = misshapen(record)
    if wrong:
        raise ValueError(f"{path} is not a student record (wrong type: {wrong})")
    return record


def misshapen(record: StudentRecord) -> str:
    """The first field of a record that is not as grading writes it, or ""."""
    number = (int, float)
    for name, kind in {"status": str, "reason": str, "items": dict, "review": dict, "submission": dict,
                       "answers": dict, "weaker": list}.items():
        if not isinstance(getattr(record, name), kind):
            return name
    if record.seconds is not None and not isinstance(record.seconds, number):
        return "seconds"
    for item_id, item in record.items.items():
        if not isinstance(item, dict) or not all(isinstance(item.get(k, 0.0), number) for k in ("score", "max_score")):
            return f"items.{item_id}"
        rubric, messages = item.get("rubric", {}), item.get("messages", {})
        if not isinstance(rubric, dict) or not all(
                isinstance(b, dict) and all(isinstance(b.get(k), number) for k in ("score", "max_score"))
                for b in rubric.values()):
            return f"items.{item_id}.rubric"
        if not isinstance(messages, dict) or not all(
                isinstance(m, list) and all(isinstance(t, str) for t in m) for m in messages.values()):
            return f"items.{item_id}.messages"
    return ""


def load_state(out: Path, student: str):
    """The student's record, or None if there is none (or it cannot be read)."""
    try:
        return read_state(out, student)
    except (OSError, ValueError):
        return None


def save_state(out: Path, record: StudentRecord):
    record.reason = clip(record.reason, "reason")  # it quotes the submission (a file name, an error)
    write_atomic(state_path(out, record.student), json.dumps(asdict(record), indent=1, sort_keys=True), force=True)


def recorded_students(out: Path) -> list:
    """Every student with a state file in this output folder (a refused folder's is named in its record)."""
    names = []
    for path in (Path(out) / "state").glob("*.json"):
        if not path.stem.startswith(REFUSED_PREFIX):
            names.append(path.stem)
            continue
        try:
            names.append(str(json.loads(path.read_text())["student"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(names)
