"""Self-checks a student runs in the notebook: `check("accumulate_gradients", globals())`.

Only the visible checks live here; they compare the student's code with torch itself
(float64 gradients, GradScaler's update rule) or with answers known by construction.
"""
from dataclasses import dataclass


@dataclass
class CheckResult:
    """Shows as a report in Jupyter; its plain-text form is the score, which is what nbgrader reads."""
    result: object

    def _repr_html_(self):
        from ..report import item_html
        return item_html(self.result)

    def __repr__(self):
        return f"{self.result.score:g}"

    def __str__(self):
        from ..report import item_text
        return item_text(self.result)


def check(exercise_id: str, namespace: dict) -> CheckResult:
    """Run the visible checks of one exercise against the names defined in `namespace`.

    Pass `globals()` from a notebook. The result renders as a short report.
    """
    from ..items import get_item
    from ..runner import LocalStudent, run_checks

    item = get_item(exercise_id)
    if item.kind != "auto":
        raise ValueError(f"{exercise_id} is graded by your instructor; there is nothing to check automatically")
    if not isinstance(namespace, dict):
        raise TypeError("check(exercise_id, namespace): pass globals() as the namespace")
    return CheckResult(run_checks([item.id], LocalStudent(namespace))[item.id])
