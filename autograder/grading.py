"""Grade one submission as it ran: repair its structure, run its cells in the sandbox, check, report.

Each step is its own module: structure (the repairs), cells (what code runs, and how), sandbox (where it runs),
backends (how the checks reach it, within a time budget), runner (the pytest checks, judged
in this process, and the score), report (what the student reads). This file only puts them
in order and turns failures of the whole submission into a status and a reason.

Whoever grades passes the reference in (the nbgrader preprocessor, `check --all`); without
it only the visible checks run.
"""
from dataclasses import dataclass, field
from typing import Literal

from .backends import SandboxStudent, plain_problem
from .cells import notebook_cells
from .items import AUTO_ITEMS, get_item
from .report import first_failure, item_text
from .runner import ItemResult, Outcome, run_checks
from .limits import Limits
from .sandbox import Sandbox, SandboxError
from .stand_in_plan import ORDER, names_used, plan
from .structure import drop_grader_metadata, repair_structure
from .text import (CODE_RAN, clip, elsewhere, more_not_listed, not_graded, out_of_time_note, problem_text,
                   raised_note, repaired_note, review_note, sandbox_failure, set_aside, stand_in, structure_repair)

# how grading one notebook ended: "graded" (whatever its scores), or, with zeros for all, "timeout" (loading it
# ran out of time) or "failed" (the sandbox broke down); results files and then grades.json hold it
NotebookStatus = Literal["graded", "failed", "timeout"]

SHOWN = 5  # of the repairs or errors that concern one item, the ones its report names (the rest are counted)


@dataclass
class SubmissionResult:
    status: NotebookStatus
    reason: str = ""                             # why it is not simply "graded", for people
    items: dict = field(default_factory=dict)    # item id -> ItemResult
    problems: list = field(default_factory=list)  # errors raised while the notebook ran (plain dicts)
    repairs: list = field(default_factory=list)   # structure.Repair: what was done to the notebook's structure

    @property
    def review(self) -> dict:
        """{item id: tamper flags} for the items set aside for an instructor to grade by hand."""
        return {i: r.review for i, r in self.items.items() if r.review}

    def report(self, item_id: str) -> str:
        """The student-facing text for one item: repairs and errors in its cells, then its checks."""
        first = next(iter(self.items), None) == item_id  # the notebook's own repairs head the first item's report
        lines = _first([structure_repair(r.text) for r in self.repairs if r.item == item_id or (first and not r.item)],
                       "repairs")
        lines += self.items[item_id].notes
        if self.items[item_id].review:
            lines.append(set_aside(self.items[item_id].review))
        lines += _first([problem_text(p) for p in self.problems if p.get("item") == item_id], "errors")
        result = self.items[item_id]
        if result.score < result.item.points:  # an error elsewhere may be the cause (a helper's cell, the setup)
            lines += [elsewhere(p) for p in self.problems if not p.get("item")][:3]
        if self.status != "graded":
            lines.append(not_graded(self.status, self.reason))
        return "\n".join(lines + [item_text(result)] + result.said)

    def first_message(self, item_id: str) -> str:
        """What the item's report asks the student to fix first, for the feedback page's summary: its review,
        an error in its cells, the notebook's failure, else its checks' first failure ("" for none)."""
        result = self.items[item_id]
        if result.review:
            return set_aside(result.review)
        problems = [problem_text(p) for p in self.problems if p.get("item") == item_id]
        if problems and result.score < result.item.points:
            return problems[0]
        if self.status != "graded":
            return not_graded(self.status, self.reason)
        return first_failure(result)


def _first(lines: list, what: str) -> list:
    """At most SHOWN of these lines, and how many more there are."""
    more = len(lines) - SHOWN
    return lines[:SHOWN] + ([more_not_listed(more, what)] if more > 0 else [])


def stand_in_note(item_id: str, setup: dict, sources: list) -> list:
    """What the feedback says of the reference code that stood in for other exercises' while `item_id` was
    graded: the objects its checks hand over (a scaler), and the names its own cells use."""
    item, used = get_item(item_id), set().union(*map(names_used, sources))
    bound = [name for unit in setup.get("units", []) for name in unit["names"]]
    note = stand_in(item.given, [name for name in bound if name in used and name not in item.given])
    return [note] if note else []


def _zero(item_ids, message: str, reason: str) -> dict:
    return {i: ItemResult(get_item(i), [Outcome(CODE_RAN, False, message, reason=reason)]) for i in item_ids}


def grade_notebook(nb, item_ids=None, limits: Limits = Limits(), reference=None,
                   isolate: bool = None, repaired: list = None, files: dict = None) -> SubmissionResult:
    """Grade the code of one notebook (an nbformat node) on the given items (default: all autograded).

    reference: a backends.Reference; with it the hidden checks run too.
    repaired: the repairs nbgrader's sanitize step made (RepairStructure, through the sink), from a caller that runs after
    it; None for a notebook as submitted, whose grader metadata is then dropped as a forgery.
    files: {relative path: bytes} handed in beside the notebook (attachments.beside): read-only in its
    working folder in the sandbox, as in nbgrader's autograded folder.
    """
    # in the lesson's order, one item after the other: see stand_in_plan.py
    item_ids = sorted(dict.fromkeys(item_ids or [i.id for i in AUTO_ITEMS]), key=lambda i: ORDER.get(i, len(ORDER)))
    if repaired is None:
        drop_grader_metadata(nb)
    repairs = list(repaired or []) + repair_structure(nb)
    cells = notebook_cells(nb)
    owner = {c.index: c.item for c in cells}
    units = getattr(reference, "units", None) or {}
    sandbox = Sandbox([c.plain() for c in cells], limits, isolate=isolate, files=files)
    try:  # closed however grading ends: a child left running would share the next student's sandbox
        try:
            problems = [plain_problem(p) for p in sandbox.start()]
        except SandboxError as exc:
            message = sandbox_failure(exc)
            status = "timeout" if exc.reason == "timeout" else "failed"
            return SubmissionResult(status, message, _zero(item_ids, message, exc.reason), repairs=repairs)
        for p in problems:
            p["item"] = owner.get(p["cell"], "")
        sources = [c.source for c in cells]
        setups = {i: plan(i, [c.source for c in cells if c.item == i], sources, units) for i in item_ids} if units else {}
        student = SandboxStudent(sandbox, limits.item_seconds, limits.checks_seconds, setups, reference)
        items = run_checks(item_ids, student, reference, include_hidden=reference is not None)
    finally:
        sandbox.close()
    for item_id, result in items.items():  # caught while the notebook ran: every item; during checks: theirs
        result.review = list(dict.fromkeys(sandbox.flags + student.tampered.get(item_id, [])))
        if setups.get(item_id):
            result.notes = stand_in_note(item_id, setups[item_id], [c.source for c in cells if c.item == item_id])
    notes = _first([repaired_note(r.text) for r in repairs], "repairs")
    notes += [raised_note(p["cell"], p["type"]) for p in problems[:SHOWN]]
    timed_out = [i for i, failure in student.failures.items() if failure.reason == "timeout"]
    if timed_out:
        notes.append(out_of_time_note(timed_out))
    flagged = {f for r in items.values() for f in r.review}
    if flagged:
        notes.append(review_note(flagged))
    return SubmissionResult("graded", clip("; ".join(notes), "reason"), items, problems, repairs)
