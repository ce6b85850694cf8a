"""Shared test helpers: the repository's notebooks and their nbgrader cells."""
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
