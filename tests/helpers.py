"""Shared test helpers: the repository's notebooks and their nbgrader cells."""
import re
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
SOLUTION_NB = ROOT / "solutions" / "lesson20" / "lesson20.ipynb"
STUDENT_NB = ROOT / "lessons" / "lesson20" / "lesson20.ipynb"


def read(path):
    return nbformat.read(str(path), as_version=4)


def nbgrader_cells(nb) -> dict:
    """grade_id -> cell, for every cell with nbgrader metadata."""
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if "nbgrader" in c.metadata and "grade_id" in c.metadata["nbgrader"]}


def solution_regions(nb) -> list:
    """(grade_id, lines between BEGIN SOLUTION and END SOLUTION) for every code solution region."""
    regions = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        inside, lines = False, []
        for line in cell.source.split("\n"):
            if "BEGIN SOLUTION" in line:
                inside, lines = True, []
            elif "END SOLUTION" in line:
                inside = False
                regions.append((cell.metadata.get("nbgrader", {}).get("grade_id"), lines))
            elif inside:
                lines.append(line)
    return regions


def code_lines(text: str) -> set:
    """The distinct lines of some code, without comments or indentation."""
    return {ln.split("#")[0].strip() for ln in text.split("\n")} - {""}


def solution_only_lines() -> set:
    """Lines of the instructor notebook that appear only between its solution markers: the secret.

    Demos and text outside the markers are public, so a line that also appears there is not."""
    nb = read(SOLUTION_NB)
    inside = set().union(*(code_lines("\n".join(lines)) for _, lines in solution_regions(nb)))
    outside = set()
    for cell in nb.cells:
        kept, skipping = [], False
        for line in cell.source.split("\n"):
            if "BEGIN SOLUTION" in line:
                skipping = True
            elif "END SOLUTION" in line:
                skipping = False
            elif not skipping:
                kept.append(line)
        outside |= code_lines("\n".join(kept))
    return inside - outside


def model_answer_sentences(min_length: int = 40) -> set:
    """Sentences of the markdown model answers and rubrics (the written practice questions)."""
    sentences = set()
    for cell in read(SOLUTION_NB).cells:
        if cell.cell_type == "markdown" and cell.metadata.get("nbgrader", {}).get("solution"):
            text = cell.source.replace("**Model answer.**", " ")
            sentences |= {s.strip() for s in re.split(r"(?<=[.;:!?])\s+", text) if len(s.strip()) >= min_length}
    return sentences
