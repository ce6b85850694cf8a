"""A notebook and its code cells: reading it, and the cells a submission is graded by.

A submission is graded as it ran: every code cell in notebook order, as nbgrader's own execution
would run it, except nbgrader's test cells (and copies of them); the sandbox turns IPython's syntax
(magics, `!shell`, `obj?`) into calls that do nothing.
"""
import re
from dataclasses import dataclass

import nbformat

from .items import item_of_cell


@dataclass
class CodeCell:
    index: int        # position in the notebook, for messages ("cell 14")
    source: str
    solution: bool    # an nbgrader solution cell (the student's answer), or a copy of one
    item: str = ""    # the item whose solution cell this is (or a copy of), else ""

    @property
    def label(self) -> str:
        return f"<cell {self.index}>"

    def plain(self) -> dict:
        """What the sandbox is sent for this cell."""
        return {"index": self.index, "label": self.label, "source": self.source, "solution": self.solution}


def read_notebook(path) -> "nbformat.NotebookNode":
    """Read a submitted notebook, or raise ValueError with a message a student can act on."""
    return parse_notebook(None, path)


def parse_notebook(data, path) -> "nbformat.NotebookNode":
    """read_notebook, of the bytes `data` already read from `path` (None: read them from `path`)."""
    try:
        return nbformat.read(str(path), as_version=4) if data is None else nbformat.reads(data, as_version=4)
    except Exception as exc:  # broken JSON, wrong schema, binary garbage
        raise ValueError(f"{path.name if hasattr(path, 'name') else path} could not be read as a "
                         f"Jupyter notebook ({type(exc).__name__}: {str(exc)[:200]})") from None


COPY_KEY = "lesson20"  # cell metadata for a cell that lost its nbgrader role in a repair: {"copy_of": grade id}
CHECK_CALL = re.compile(r"""\s*check\(\s*["'](\w+)["']\s*,\s*globals\(\)\s*\)\s*;?\s*""")


def nbgrader_meta(cell) -> dict:
    """A cell's nbgrader metadata; {} where it has none, or none that is a dict."""
    meta = cell.get("metadata", {}).get("nbgrader")
    return meta if isinstance(meta, dict) else {}


def is_test_cell(cell) -> bool:
    """An nbgrader test cell (graded, not a solution), or a copy of one: a bare `check("<id>", globals())`."""
    meta = nbgrader_meta(cell)
    if meta.get("grade") and not meta.get("solution"):
        return True
    return bool(CHECK_CALL.fullmatch(cell.get("source", "")))


def cell_item(cell) -> str:
    """The item a cell's code answers: its solution grade id, or the one it was copied from."""
    meta = nbgrader_meta(cell)
    grade_id = meta.get("grade_id") if meta.get("solution") else None
    grade_id = grade_id or cell.get("metadata", {}).get(COPY_KEY, {}).get("copy_of", "")
    item = item_of_cell(grade_id)
    return item if grade_id and grade_id != item else ""


def notebook_cells(nb) -> list:
    """Every code cell the student's kernel ran, in order, as the grader runs it."""
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code" or is_test_cell(cell):
            continue
        item = cell_item(cell)
        # IPython syntax is transformed in the sandbox, on the cell's own clock (sandbox/worker.py)
        cells.append(CodeCell(index, _text(cell.get("source", "")), bool(item), item))
    return cells


def _text(source) -> str:
    """A cell's source as one string with \\n line ends (a list of lines, CRLF or CR line ends happen)."""
    if isinstance(source, list):
        source = "".join(source)
    return source.replace("\r\n", "\n").replace("\r", "\n")
