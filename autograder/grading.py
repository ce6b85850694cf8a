"""Grade one submission as it ran: repair its structure, run its cells in the sandbox, check, report.

Each step is its own module: extract (what code runs, and how), sandbox (where it runs),
backends (how the checks reach it, within a time budget), runner (the pytest checks, judged
in this process, and the score), report (what the student reads). This file only puts them
in order and turns failures of the whole submission into a status and a reason.

Whoever grades passes the reference in (the nbgrader preprocessor, `check --all`); without
it only the visible checks run.
"""
from dataclasses import dataclass, field

from .backends import REVIEW_TEXT, SandboxStudent, plain_problem, sandbox_failure
from .extract import Repair, notebook_cells, repair_structure
from .items import AUTO_ITEMS, get_item
from .report import item_text
from .runner import ItemResult, Outcome, run_checks
from .sandbox import Limits, Sandbox, SandboxError


@dataclass
class SubmissionResult:
    status: str                                  # "graded", "failed" or "timeout"
    reason: str = ""                             # why it is not simply "graded", for people
    items: dict = field(default_factory=dict)    # item id -> ItemResult
    problems: list = field(default_factory=list)  # errors raised while the notebook ran (plain dicts)
    repairs: list = field(default_factory=list)   # extract.Repair: what was done to the notebook's structure

    @property
    def review(self) -> dict:
        """{item id: tamper flags} for the items set aside for an instructor to grade by hand."""
        return {i: r.review for i, r in self.items.items() if r.review}

    def report(self, item_id: str) -> str:
        """The student-facing text for one item: repairs and errors in its cells, then its checks."""
        lines = [f"Your notebook's structure: {r.text}." for r in self.repairs if r.item == item_id]
        if self.items[item_id].review:
            lines.append(f"Set aside for review: {REVIEW_TEXT} (it was caught {'; '.join(self.items[item_id].review)}).")
        lines += [problem_text(p) for p in self.problems if p.get("item") == item_id]
        result = self.items[item_id]
        if result.score < result.item.points:  # an error elsewhere may be the cause (a helper's cell, the setup)
            lines += ["Elsewhere: " + problem_text(p) for p in self.problems if not p.get("item")][:3]
        if self.status != "graded":
            lines.append(f"Your notebook could not be graded ({self.status}): {self.reason}")
        return "\n".join(lines + [item_text(result)])


def problem_text(p: dict) -> str:
    """One error the notebook raised while it ran, as the student reads it."""
    where = f"cell {p['cell']}" + (f" (line {p['line']})" if p.get("line") else "")
    if p["type"] == "CellTimeout":
        return f"While your notebook ran, {where} {p['message']}; the cells after it still ran."
    if p["type"] == "ProcessDied":
        last = f" Its last message: {p['where']}." if p.get("where") else ""
        return (f"While your notebook ran, {where} ended the Python process running it ({p['message']}), so the "
                f"notebook was run again without that cell.{last} Look for os._exit, sys.exit, os.kill or a very "
                "large allocation, in that cell or in a function it calls.")
    detail = f" at {p['where']}" if p.get("where") else ""
    return f"While your notebook ran, {where} raised {p['type']}: {p['message']}{detail}"


def _zero(item_ids, message: str, reason: str) -> dict:
    return {i: ItemResult(get_item(i), [Outcome("your code ran", False, message, reason=reason)]) for i in item_ids}


def grade_notebook(nb, item_ids=None, limits: Limits = Limits(), reference=None,
                   isolate: bool = None) -> SubmissionResult:
    """Grade the code of one notebook (an nbformat node) on the given items (default: all autograded).

    reference: a backends.Reference; with it the hidden checks run too.
    """
    item_ids = list(dict.fromkeys(item_ids or [i.id for i in AUTO_ITEMS]))
    repairs = earlier_repairs(nb) + repair_structure(nb)
    cells = notebook_cells(nb)
    owner = {c.index: c.item for c in cells}
    sandbox = Sandbox([c.plain() for c in cells], limits, isolate=isolate)
    try:
        problems = [plain_problem(p) for p in sandbox.start()]
    except SandboxError as exc:
        sandbox.close()
        message = sandbox_failure(exc)
        status = "timeout" if exc.reason == "timeout" else "failed"
        return SubmissionResult(status, message, _zero(item_ids, message, exc.reason), repairs=repairs)
    for p in problems:
        p["item"] = owner.get(p["cell"], "")
    try:
        student = SandboxStudent(sandbox, limits.timeout, limits.notebook_seconds)
        items = run_checks(item_ids, student, reference, include_hidden=reference is not None)
    finally:
        sandbox.close()
    for item_id, result in items.items():  # caught while the notebook ran: every item; during checks: theirs
        result.review = list(dict.fromkeys(sandbox.flags + student.tampered.get(item_id, [])))
    notes = [f"repaired: {r.text}" for r in repairs]
    notes += [f"cell {p['cell']} raised {p['type']}" for p in problems[:5]]
    timed_out = [i for i, failure in student.failures.items() if failure.reason == "timeout"]
    if timed_out:
        notes.append(f"ran out of time in {', '.join(timed_out)}")
    flagged = {f for r in items.values() for f in r.review}
    if flagged:
        notes.append(f"set aside for review: {'; '.join(sorted(flagged))[:300]}")
    return SubmissionResult("graded", "; ".join(notes), items, problems, repairs)


REPAIRS_KEY = "lesson20_repairs"  # notebook metadata: repairs made before nbgrader saw the notebook


def earlier_repairs(nb) -> list:
    """Repairs a step before this one made (the nbgrader sanitize step), read back from the notebook."""
    found = nb.get("metadata", {}).get(REPAIRS_KEY, [])
    return [Repair(str(r.get("item", "")), str(r.get("text", ""))) for r in found if isinstance(r, dict)]
