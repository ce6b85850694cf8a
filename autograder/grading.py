"""Grade one submission: extract its code, run it in the sandbox, check it, report.

Each step is its own module: extract (what code runs), sandbox (where it runs), runner (the
pytest checks, judged in this process), report (what the student reads). This file only
puts them in order and turns failures of the whole submission into a status and a reason.
"""
from dataclasses import dataclass, field

from .extract import runnable_cells
from .items import AUTO_ITEMS, get_item
from .report import item_text
from .runner import ItemResult, Outcome, run_checks
from .sandbox import Limits, Sandbox, SandboxError, SandboxStudent

STATUSES = ("graded", "failed", "timeout", "error")


@dataclass
class SubmissionResult:
    status: str                                  # one of STATUSES
    reason: str = ""                             # why it is not simply "graded", for people
    items: dict = field(default_factory=dict)    # item id -> ItemResult
    problems: list = field(default_factory=list)  # errors raised while loading the code

    def report(self, item_id: str) -> str:
        """The student-facing text for one item: load problems in its cell, then its checks."""
        lines = [f"While loading your notebook, cell {p['cell']}"
                 + (f" (line {p['line']})" if p.get("line") else "")
                 + f" raised {p['type']}: {p['message']}"
                 for p in self.problems if p.get("item") == item_id]
        if self.status != "graded":
            lines.append(f"Your notebook could not be graded ({self.status}): {self.reason}")
        return "\n".join(lines + [item_text(self.items[item_id])])


def _zero(item_ids, message: str, reason: str) -> dict:
    return {i: ItemResult(get_item(i), [Outcome("your code ran", False, message, reason=reason)]) for i in item_ids}


def grade_notebook(nb, item_ids=None, limits: Limits = Limits(), include_hidden: bool = True,
                   isolate: bool = None) -> SubmissionResult:
    """Grade the code of one notebook (an nbformat node) on the given items (default: all autograded)."""
    item_ids = list(item_ids or [i.id for i in AUTO_ITEMS])
    cells = runnable_cells(nb)
    owner = {c.index: nb.cells[c.index].get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
             .removesuffix("_solution") for c in cells}
    reference = None
    if include_hidden:
        from .instructor.reference import reference_namespace  # not in the student package
        from .runner import Reference
        reference = Reference(reference_namespace())
    sandbox = Sandbox(cells, limits, isolate=isolate)
    try:
        problems = sandbox.start()
    except SandboxError as exc:
        sandbox.close()
        status = "timeout" if exc.reason == "timeout" else "failed"
        return SubmissionResult(status, str(exc), _zero(item_ids, str(exc), exc.reason))
    for p in problems:
        p["item"] = owner.get(p["cell"], "")
    try:
        student = SandboxStudent(sandbox, limits.cpu_seconds, limits.total_seconds)
        items = run_checks(item_ids, student, reference, include_hidden)
    finally:
        sandbox.close()
    reason = "; ".join(f"cell {p['cell']} raised {p['type']}" for p in problems[:5])
    timed_out = [i for i, failure in student.failures.items() if failure.reason == "timeout"]
    if timed_out:
        reason = "; ".join(filter(None, [reason, f"ran out of time in {', '.join(timed_out)}"]))
    return SubmissionResult("graded", reason, items, problems)
