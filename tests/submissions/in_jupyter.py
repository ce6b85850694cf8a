"""Run variants top to bottom in a real Jupyter kernel, as a student would, and print the visible checks'
scores on the namespace the notebook leaves: the evidence that a realistic variant is correct code.

    python -m tests.submissions.in_jupyter [variant ...]    (default: every realistic variant)

Cells may fail, as in Jupyter; demos run at autograding sizes. The notebook's own check cells are
emptied, and one last cell runs every visible check once (with its own `check`, which a student may
have shadowed). 10 to 50 s a notebook on the course machine, so it is a tool, not a test.
"""
import json
import os
import sys
import time

import nbformat
from nbclient import NotebookClient

from . import ROOT, make_submission, names
from autograder.items import AUTO_ITEMS

LAST_CELL = '''
import json as _json
from autograder.selfcheck import check as _check
from autograder.items import AUTO_ITEMS as _ITEMS
print("SCORES" + _json.dumps({item.id: _check(item.id, globals()).result.score for item in _ITEMS}))
'''


def scores_in_jupyter(name: str, timeout: int = 300) -> dict:
    """{item: visible-check score} after running variant `name` in a fresh kernel; {} if the last cell failed."""
    nb = nbformat.reads(nbformat.writes(make_submission(name)), as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade"):
            cell.source = ""
    last = nbformat.v4.new_code_cell(LAST_CELL)
    if nb.nbformat_minor < 5:
        del last["id"]
    nb.cells.append(last)
    os.environ.update(NBGRADER_EXECUTION="autograde", LESSON20_DEVICE="cpu")
    NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    printed = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    return json.loads(printed.split("SCORES", 1)[1]) if "SCORES" in printed else {}


def main(argv):
    full = {item.id: float(item.points) for item in AUTO_ITEMS}
    wrong = 0
    for name in argv or names("realistic"):
        started = time.monotonic()
        scores = scores_in_jupyter(name)
        short = {i: s for i, s in scores.items() if s < full[i]} if scores else "no scores: the last cell failed"
        wrong += bool(short)
        print(f"{name:40s} {time.monotonic() - started:5.1f} s  {short or 'full marks'}", flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
