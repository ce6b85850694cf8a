"""Self-checks a student runs in the notebook: `check("accumulate_gradients", globals())`.

Only the visible checks run here, in the student's own kernel; they compare the student's code
with what torch gave at release time (float64 gradients, GradScaler's update rule: checks/expected.pt)
or with answers known by construction.
"""
from dataclasses import dataclass

from .backends import LocalStudent
from .items import get_item
from .report import item_html, item_text
from .runner import ItemResult, run_checks


@dataclass
class CheckResult:
    """Shows as a report in Jupyter.

    Its plain-text form (repr) is the score in points and nothing else, because that is what
    nbgrader reads from a grade cell's result: `nbgrader validate` and plain nbgrader grading
    of this cell rely on it. `str()` gives the readable report.
    """
    result: ItemResult

    def _repr_html_(self):
        return item_html(self.result)

    def __repr__(self):
        return f"{self.result.score:g}"

    def __str__(self):
        return item_text(self.result)


def check(exercise_id: str, namespace: dict) -> CheckResult:
    """Run the visible checks of one exercise against the names defined in `namespace`.

    Pass `globals()` from a notebook. The result renders as a short report.
    """
    item = get_item(exercise_id)
    if item.kind != "auto":
        raise ValueError(f"{exercise_id} is graded by your instructor; there is nothing to check automatically")
    if not isinstance(namespace, dict):
        raise TypeError("check(exercise_id, namespace): pass globals() as the namespace")
    return CheckResult(run_checks([item.id], LocalStudent(namespace))[item.id])
