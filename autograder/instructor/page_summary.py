"""What the feedback page shows above the notebook, and which of the notebook's cells it folds away.

Two GenerateFeedback steps (pipeline.configure lists them) read the graded notebook and leave what they found in
`resources[PAGE]`, which the page's template (templates/lesson20_feedback.html.j2) reads:

* `GetPageGrades`: nbgrader's GetGrades (each grade cell's score and points, each answer's comment), which also
  notes whether a person has yet to grade the cell.
* `SummarizePage`: the summary at the top of the page, one row per item in notebook order: its title (items.py),
  its score, and, where it lost points, the first thing to fix (the first message of its check's report, which
  the check cell's score output carries: preprocessor.py), or the grader's comment; each item's heading on
  the page; and the runs of the lesson's own cells (prose, demos, quizzes) to fold away. A written answer's
  question, the markdown cell just before it, stays in view.

Page notes: short sentences for the student shown under the total (a late submission, a behaviour that was not
checked). A GenerateFeedback step adds one with `add_page_note(resources, text)`; the template escapes it.
"""
import re

from nbgrader.preprocessors import GetGrades, NbGraderPreprocessor

from ..items import ASSIGNMENT, ITEMS_BY_ID, item_of_cell
from ..text import ANSWER_NOT_GRADED, clip, lesson_fold
from .preprocessor import FIRST_MESSAGE

PAGE = "lesson20_page"  # the key in nbconvert's resources
NOTES = "lesson20_page_notes"  # the page notes: a list in resources, filled before or after SummarizePage
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def add_page_note(resources, text: str):
    """Show `text` to the student under the total on their feedback page."""
    resources.setdefault(NOTES, []).append(clip(text, "note"))


class GetPageGrades(GetGrades):
    """nbgrader's GetGrades, which also notes in each grade cell whether a person has yet to grade it."""

    def _get_score(self, cell, resources):
        grade = self.gradebook.find_grade(cell.metadata["nbgrader"]["grade_id"], self.notebook_id,
                                          self.assignment_id, self.student_id)
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score
        cell.metadata.nbgrader["needs_manual_grade"] = bool(grade.needs_manual_grade)


class SummarizePage(NbGraderPreprocessor):
    """The feedback page's summary, headings and folds, in resources[PAGE] (after GetPageGrades)."""

    def preprocess(self, nb, resources):
        grades = resources.get("nbgrader", {})
        resources[PAGE] = {**summarize(nb.cells), "notes": resources.setdefault(NOTES, []),
                           "total": _points(grades.get("score")), "max_total": _points(grades.get("max_score")),
                           "late_penalty": _points(grades.get("late_penalty") or 0), "assignment": ASSIGNMENT}
        return nb, resources


def summarize(cells) -> dict:
    """{"rows": the summary's rows, "cells": {index: a work cell's heading}, "folds": {first index of a run of
    the lesson's cells: its label}, "fold_ends": the last indices of those runs}."""
    rows, headed, shown = {}, {}, set()
    for index, cell in enumerate(cells):
        meta = _nbgrader(cell)
        item = ITEMS_BY_ID.get(item_of_cell(meta.get("grade_id")))
        if item is None or not (meta.get("grade") or meta.get("solution")):
            continue
        shown.add(index)
        first = item.id not in rows
        if first:
            rows[item.id] = {"id": item.id, "title": item.title, "anchor": meta["grade_id"], "check": item.id,
                             "score": "", "points": f"{item.points:g}", "lost": False, "message": ""}
        if first and item.kind == "manual" and index > 0 and cells[index - 1].get("cell_type") == "markdown":
            shown.add(index - 1)  # the question, under the item's title
            rows[item.id]["anchor"] = f"{item.id}-question"
            headed[index - 1] = {"title": item.title, "role": "", "id": rows[item.id]["anchor"]}
            first = False
        headed[index] = {"title": item.title if first else "", "role": _role(cell, meta), "id": meta["grade_id"]}
        if meta.get("grade"):
            _score(rows[item.id], cell, meta, item)
    for cell in cells:  # a comment on the code, where no check said what to fix
        meta = _nbgrader(cell)
        row = rows.get(item_of_cell(meta.get("grade_id")))
        if row and row["lost"] and not row["message"] and meta.get("comment"):
            row["message"] = _first_line(meta["comment"])
    folds, ends = _folds(cells, shown)
    return {"rows": list(rows.values()), "cells": headed, "folds": folds, "fold_ends": ends}


def _score(row: dict, cell, meta: dict, item):
    score, points = meta.get("score"), meta.get("points", item.points)
    row["score"], row["points"] = _points(score), _points(points)
    row["lost"] = score is None or float(score) < float(points)
    if item.kind == "manual" and meta.get("needs_manual_grade"):
        row["score"], row["message"] = "–", ANSWER_NOT_GRADED
    elif item.kind == "manual":
        row["message"] = _first_line(meta.get("comment") or "") if row["lost"] else ""
    elif row["lost"]:
        row["message"] = next((clip(o.get("metadata", {}).get(FIRST_MESSAGE), "check") for o in cell.get("outputs", [])
                               if o.get("output_type") == "execute_result"
                               and isinstance(o.get("metadata", {}).get(FIRST_MESSAGE), str)), "")


def _role(cell, meta: dict) -> str:
    if meta.get("solution"):
        return "Your answer" if cell.get("cell_type") == "markdown" else "Your code"
    return "Check"


def _folds(cells, shown: set) -> tuple:
    """The runs of cells not in `shown`: {first index: label}, {last index}."""
    folds, ends, start = {}, set(), None
    for index in range(len(cells) + 1):
        inside = index < len(cells) and index not in shown
        if inside and start is None:
            start = index
        elif not inside and start is not None:
            run = cells[start:index]
            headings = [h for c in run if c.get("cell_type") == "markdown" for h in HEADING.findall(_text(c))]
            folds[start] = lesson_fold([_plain(h) for h in headings], len(run))
            ends.add(index - 1)
            start = None
    return folds, ends


def _nbgrader(cell) -> dict:
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def _text(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _plain(heading: str) -> str:
    return clip(re.sub(r"[`*]", "", heading), "name")


def _first_line(text: str) -> str:
    return clip(next((line.strip() for line in str(text).splitlines() if line.strip()), ""), "check")


def _points(value) -> str:
    return "" if value is None else f"{float(value):g}"
