"""ResultSink: where the grader's steps inside nbgrader's Autograde hand what they found to the pipeline.

nbgrader makes the steps itself (RepairStructure in the sanitize pass; GradeOutOfProcess and FlagForReview
in the autograde pass) and writes the notebook to disk between the passes. What they find travels in
one sink, which pipeline.configure sets in the traitlets configuration of every step, as the limits
travel, under the (student, notebook) being graded:

- RepairStructure opens the student's entry with the repairs it made (a fresh entry each time);
- GradeOutOfProcess reads those repairs, grades, and puts its result (grading.SubmissionResult) there;
- FlagForReview reads the result's review flags;
- the pipeline (pipeline.autograde_student) takes the entry, which removes it;
- before GenerateFeedback, the pipeline (and handback, for export's pages) leaves a note on the submission's
  time, which AnnounceSubmission (announce.py) takes and shows at the top of the feedback page.

traitlets deep-copies configuration values; a sink is a place, not a value, so its copies are itself.
"""
from dataclasses import dataclass, field


@dataclass
class Found:
    """What the steps found for one notebook: the repairs made to its cells, and its result once graded."""
    repairs: list = field(default_factory=list)  # structure.Repair
    result: object = None  # grading.SubmissionResult, or None when the grading step did not run


class ResultSink:

    def __init__(self):
        self._found = {}
        self._notes = {}  # (student, notebook) -> the line on the submission's time its feedback page opens with

    def note(self, key, text: str):
        """What the feedback page of this notebook says first (AnnounceSubmission shows it): its submission's
        time and lateness, "" for nothing."""
        self._notes[key] = text

    def take_note(self, key) -> str:
        return self._notes.pop(key, "")

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    def open(self, key, repairs=()) -> Found:
        """Start the notebook's entry afresh (whatever an earlier, unfinished grading left is dropped)."""
        self._found[key] = Found(list(repairs))
        return self._found[key]

    def found(self, key) -> Found:
        """The notebook's entry, opened empty if no step opened it."""
        return self._found.get(key) or self.open(key)

    def take(self, key) -> Found:
        """The notebook's entry, removed from the sink (an empty one if there was none)."""
        return self._found.pop(key, None) or Found()


def notebook_key(resources) -> tuple:
    """(student, notebook) of the notebook nbgrader is converting, from the resources it hands each step."""
    info = resources.get("nbgrader", {}) if isinstance(resources, dict) else {}
    return info.get("student"), info.get("notebook")
