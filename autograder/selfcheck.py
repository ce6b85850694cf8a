"""Self-checks a student runs in the notebook: `check("accumulate_gradients", globals())`.

Only the visible checks run here, in the student's own kernel; they compare the student's code
with what torch gave at release time (float64 gradients, GradScaler's update rule: checks/expected.pt)
or with answers known by construction.
"""
import html
from dataclasses import dataclass

import torch

from .backends import LocalStudent
from .checks import smoke
from .items import get_item
from .report import item_html, item_text
from .runner import ItemResult, run_checks
from .text import ON_CPU


@dataclass
class CheckResult:
    """Shows as a report in Jupyter.

    Its plain-text form (repr) is the score in points and nothing else, because that is what
    nbgrader reads from a grade cell's result: `nbgrader validate` and plain nbgrader grading
    of this cell rely on it. `str()` gives the readable report.
    """
    result: ItemResult
    on_gpu: str = ""  # the ungraded smoke run on the student's GPU, as one line ("" when there is none)

    def _repr_html_(self):
        gpu = f'<p class="lesson20-gpu">{html.escape(self.on_gpu)}</p>' if self.on_gpu else ""
        return item_html(self.result) + gpu

    def __repr__(self):
        return f"{self.result.score:g}"

    def __str__(self):
        return item_text(self.result) + (f"\n{self.on_gpu}" if self.on_gpu else "")


def gpu_line(item_id: str, namespace: dict, device: str) -> str:
    """The smoke case of the item run with its model and batch on `device` (not graded), as one line."""
    if item_id not in smoke.CASES:
        return ""
    trouble = smoke.trouble(item_id, LocalStudent(namespace, device=device)).replace(ON_CPU, "")  # said below
    if not trouble:
        return f"✓ On your GPU ({device}, not graded): your code also runs with the model and the batch there."
    return (f"✗ On your GPU ({device}, not graded): with the model and the batch there, {trouble} Take every "
            "device from the model or the inputs (p.device, inputs.device), so that the same code runs on the "
            "CPU, where it is graded, and on the GPU.")


def check(exercise_id: str, namespace: dict, gpu: str = None) -> CheckResult:
    """Run the visible checks of one exercise against the names defined in `namespace`.

    Pass `globals()` from a notebook. The result renders as a short report. Where torch sees a GPU, the
    exercise's code also runs once there, ungraded (exercises/<id>/smoke.py); gpu: that device ("cuda" by default
    when CUDA is available; "" for none).
    """
    item = get_item(exercise_id)
    if item.kind != "auto":
        raise ValueError(f"{exercise_id} is graded by your instructor; there is nothing to check automatically")
    if not isinstance(namespace, dict):
        raise TypeError("check(exercise_id, namespace): pass globals() as the namespace")
    result = run_checks([item.id], LocalStudent(namespace))[item.id]
    if gpu is None:
        gpu = "cuda" if torch.cuda.is_available() else ""
    return CheckResult(result, gpu_line(item.id, namespace, gpu) if gpu and result.outcomes else "")
