"""The written answers' model answers and rubrics, for formgrader's manual-grading page only.

They are read from the instructor notebook (solutions/), the one source: the cell with each written answer's
grade id holds them there (lessons/ has "YOUR ANSWER HERE" in its place). formgrader's template
(templates/lesson20_formgrade.html.j2) shows one beside each student's answer through the `model_answer`
filter (pipeline.configure); the feedback page's template has no such filter and never calls it.
"""
import nbformat

from ..items import MANUAL_ITEMS, ROOT, solution_notebooks
from .sanitize import page_markdown

_read = {}  # (each instructor notebook and its modification time) -> {grade id: HTML}: read again when one changes


def model_answers(root=ROOT) -> dict:
    """{grade id of a written answer: (the markdown of its cell in the instructor notebook, its attachments)}."""
    wanted, found = {item.id for item in MANUAL_ITEMS}, {}
    for path in solution_notebooks(root):
        for cell in nbformat.read(str(path), as_version=4).cells:
            grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
            if grade_id in wanted and cell.cell_type == "markdown":
                found[grade_id] = (cell.source, cell.get("attachments", {}))
    return found


def model_answer(grade_id, root=ROOT) -> str:
    """The model answer and rubric of this written answer as HTML, drawn as the page draws markdown; "" for any
    other grade id."""
    key = tuple((str(p), p.stat().st_mtime_ns) for p in solution_notebooks(root))
    if key not in _read:
        _read.clear()
        _read[key] = {g: page_markdown(source, attachments) for g, (source, attachments) in model_answers(root).items()}
    return _read[key].get(grade_id, "")
