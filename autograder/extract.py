"""Pull the code a grader runs out of a submitted notebook.

That is the solution cells, in notebook order, plus cells that only import or define
(a student's own helper functions), plus the imports, definitions and literal constants
(`EPS = 2.0**-24`) of every other cell. Everything else (demonstrations, plots, check cells,
test calls) is left out: nothing in them is graded, and it would cost time.
"""
import ast
from dataclasses import dataclass

import nbformat

DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass
class CodeCell:
    index: int        # position in the notebook, for messages ("cell 14")
    source: str
    solution: bool    # an nbgrader solution cell (the student's answer)

    @property
    def label(self) -> str:
        return f"<cell {self.index}>"

    def plain(self) -> dict:
        """What the sandbox is sent for this cell."""
        return {"index": self.index, "label": self.label, "source": self.source, "solution": self.solution}


def strip_magics(source: str) -> str:
    """Blank out IPython-only lines (%magic, !shell, %%cell magic), keeping line numbers."""
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        lines[0] = ""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def _only_defines(tree: ast.Module) -> bool:
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        if not (isinstance(node, DEFINITIONS) or docstring):
            return False
    return True


def _constant(node) -> bool:
    """An expression of literals only (`2.0**-24`, `(1, 2)`, `"b"`): safe to evaluate, needs no state."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _constant(node.operand)
    if isinstance(node, ast.BinOp):
        return _constant(node.left) and _constant(node.right)
    if isinstance(node, (ast.Tuple, ast.List)):
        return all(_constant(e) for e in node.elts)
    return False


def _kept(node) -> bool:
    """What the grader takes from a cell it does not run whole: imports, definitions, literal constants."""
    if isinstance(node, DEFINITIONS):
        return True
    return (isinstance(node, ast.Assign) and _constant(node.value)
            and all(isinstance(t, ast.Name) for t in node.targets))


def _definitions_of(source: str, tree: ast.Module) -> str:
    """The kept top-level statements of a cell, each on its original lines (the rest blanked)."""
    lines = [""] * len(source.split("\n"))
    for node in tree.body:
        if _kept(node):
            segment = ast.get_source_segment(source, node) or ""
            for offset, text in enumerate(segment.split("\n")):
                lines[node.lineno - 1 + offset] = text
    return "\n".join(lines)


def runnable_cells(nb) -> list:
    """The code cells a grader executes, in notebook order."""
    cells = []
    for index, cell in enumerate(nb.cells):
        if cell.get("cell_type") != "code":
            continue
        source = strip_magics(cell.get("source", ""))
        solution = bool(cell.get("metadata", {}).get("nbgrader", {}).get("solution", False))
        try:
            tree = ast.parse(source)
        except SyntaxError:
            if solution:  # run it anyway: the SyntaxError is the student's feedback
                cells.append(CodeCell(index, source, True))
            continue
        if solution or _only_defines(tree):
            cells.append(CodeCell(index, source, solution))
        elif any(_kept(node) for node in tree.body):
            cells.append(CodeCell(index, _definitions_of(source, tree), False))
    return cells


def read_notebook(path) -> "nbformat.NotebookNode":
    """Read a submitted notebook, or raise ValueError with a message a student can act on."""
    try:
        return nbformat.read(str(path), as_version=4)
    except Exception as exc:  # broken JSON, wrong schema, binary garbage
        raise ValueError(f"{path.name if hasattr(path, 'name') else path} could not be read as a "
                         f"Jupyter notebook ({type(exc).__name__}: {str(exc)[:200]})") from None
