"""Grade one submission: take its code, run it in the sandbox, check it, report.

Each step is its own module: extract (what code runs, and how), sandbox (where it runs),
backends (how the checks reach it, within a time budget), runner (the pytest checks, judged
in this process, and the score), report (what the student reads). This file only puts them
in order and turns failures of the whole submission into a status and a reason.

Whoever grades passes the reference in (the nbgrader preprocessor, `check --all`); without
it only the visible checks run.
"""
from dataclasses import dataclass, field

from .backends import SandboxStudent, plain_problem, sandbox_failure
from .extract import runnable_cells
from .items import AUTO_ITEMS, get_item, item_of_cell
from .report import item_text
from .runner import ItemResult, Outcome, run_checks
from .sandbox import Limits, Sandbox, SandboxError


@dataclass
class SubmissionResult:
    status: str                                  # "graded", "failed" or "timeout"
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


def grade_notebook(nb, item_ids=None, limits: Limits = Limits(), reference=None,
                   isolate: bool = None) -> SubmissionResult:
    """Grade the code of one notebook (an nbformat node) on the given items (default: all autograded).

    reference: a backends.Reference; with it the hidden checks run too.
    """
    item_ids = list(item_ids or [i.id for i in AUTO_ITEMS])
    cells = runnable_cells(nb)
    owner = {c.index: item_of_cell(nb.cells[c.index].get("metadata", {}).get("nbgrader", {}).get("grade_id", ""))
             for c in cells}
    sandbox = Sandbox([c.plain() for c in cells], limits, isolate=isolate)
    try:
        problems = [plain_problem(p) for p in sandbox.start()]
    except SandboxError as exc:
        sandbox.close()
        message = sandbox_failure(exc)
        status = "timeout" if exc.reason == "timeout" else "failed"
        return SubmissionResult(status, message, _zero(item_ids, message, exc.reason))
    for p in problems:
        p["item"] = owner.get(p["cell"], "")
    try:
        student = SandboxStudent(sandbox, limits.timeout, limits.total_seconds)
        items = run_checks(item_ids, student, reference, include_hidden=reference is not None)
    finally:
        sandbox.close()
    reason = "; ".join(f"cell {p['cell']} raised {p['type']}" for p in problems[:5])
    timed_out = [i for i, failure in student.failures.items() if failure.reason == "timeout"]
    if timed_out:
        reason = "; ".join(filter(None, [reason, f"ran out of time in {', '.join(timed_out)}"]))
    return SubmissionResult("graded", reason, items, problems)
