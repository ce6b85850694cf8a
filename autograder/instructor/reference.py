"""The reference implementation, taken from the instructor notebooks in solutions/.

There is no second copy: the grader executes the same cells a submission would contribute
(`extract.runnable_cells`), from the instructor's own notebooks, in this trusted process.
"""
import ast
import functools
from pathlib import Path

from ..backends import Reference
from ..extract import read_notebook, runnable_cells
from ..items import AUTO_ITEMS, solution_notebooks

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


@functools.lru_cache(maxsize=None)
def reference_components(root: Path = ROOT) -> str:
    """The reference's definitions of the items' code names, as one source text for the sandbox: every
    import of the solution notebooks, then each code item's solution cell (grading.py binds them in)."""
    imports, definitions = [], []
    ids = {f"{item.id}_solution" for item in AUTO_ITEMS if item.code}
    for path in solution_notebooks(root):
        nb = read_notebook(path)
        for cell in runnable_cells(nb):
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    imports.append(ast.unparse(node))
        definitions += [c.source for c in nb.cells if c.cell_type == "code"
                        and c.get("metadata", {}).get("nbgrader", {}).get("grade_id") in ids]
    return "\n".join(dict.fromkeys(imports)) + "\n\n" + "\n\n".join(definitions) + "\n"


def reference(root: Path = ROOT) -> Reference:
    """The backend the hidden checks compare a submission with, and the reference's code that stands
    in for other items' code while an item is graded."""
    return Reference(reference_namespace(root), reference_components(root))
