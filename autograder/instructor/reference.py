"""The reference implementation, taken from the instructor notebooks in solutions/.

There is no second copy: the grader executes the same cells a submission would contribute
(`extract.runnable_cells`), from the instructor's own notebooks, in this trusted process.
"""
import functools
from pathlib import Path

from ..backends import Reference
from ..extract import read_notebook, runnable_cells
from ..items import solution_notebooks
from .hidden.rubric import hidden_check_map

ROOT = Path(__file__).resolve().parents[2]


@functools.lru_cache(maxsize=None)
def reference_namespace(root: Path = ROOT) -> dict:
    """Names defined by the solution notebooks' code, executed once per process."""
    notebooks = solution_notebooks(root)
    if not notebooks:
        raise FileNotFoundError(f"no instructor notebooks under {root}")
    namespace = {"__name__": "__reference__"}
    for path in notebooks:
        for cell in runnable_cells(read_notebook(path)):
            exec(compile(cell.source, f"{path.name} {cell.label}", "exec"), namespace)
    return namespace


def reference(root: Path = ROOT) -> Reference:
    """The backend the hidden checks compare a submission with, and the hidden checks' rubric map."""
    return Reference(reference_namespace(root), hidden_check_map())
