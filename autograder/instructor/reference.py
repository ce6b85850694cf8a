"""The reference implementation, taken from the instructor notebooks in solutions/.

There is no second copy: the grader executes the instructor's own notebooks, in this trusted
process: their solution cells, plus the imports, definitions and literal constants of the other
cells (`runnable_cells`: no demos, it runs once, in the grader's own process). Of their imports it runs
those whose names that code uses (`used_imports`): matplotlib's pyplot, the quizzes and the self-checks
would cost every grading process memory (30 MiB) for nothing it calls.
"""
import ast
import copy
import functools
from pathlib import Path

from ..backends import Reference
from ..cells import CodeCell, read_notebook
from ..items import AUTO_ITEMS, ROOT, solution_notebooks
from ..sandbox.notebook import strip_magics  # the one blanking of magics, shared with the sandbox
from ..stand_in_plan import names_in

DEFINITIONS = (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


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


def _bound(alias: ast.alias) -> str:
    """The name an import binds: `import a.b` binds a, `import a.b as c` and `from a import b as c` bind c."""
    return alias.asname or alias.name.split(".")[0]


def used_imports(trees: list) -> list:
    """The parsed cells with each import statement cut to the names that some other statement of any cell
    loads (a function body's use counts; `from x import *` is kept whole); an import left with none goes. The
    trees passed in are left as they are."""
    used = set().union(*(names_in(statement) for tree in trees for statement in tree.body
                         if not isinstance(statement, (ast.Import, ast.ImportFrom))))
    cut = []
    for tree in trees:
        body = []
        for statement in tree.body:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                names = [a for a in statement.names if a.name == "*" or _bound(a) in used]
                if not names:
                    continue
                statement = copy.copy(statement)
                statement.names = names
            body.append(statement)
        cut.append(ast.Module(body, tree.type_ignores))
    return cut


@functools.lru_cache(maxsize=None)
def reference_namespace(root: Path = ROOT) -> dict:
    """Names defined by the solution notebooks' code, executed once per process."""
    notebooks = solution_notebooks(root)
    if not notebooks:
        raise FileNotFoundError(f"no instructor notebooks under {root}")
    labelled = [(f"{path.name} {cell.label}", cell.source) for path in notebooks
                for cell in runnable_cells(read_notebook(path))]
    trees = [ast.parse(source, label) for label, source in labelled]  # a cell that does not parse raises, named
    namespace = {"__name__": "__reference__"}
    for (label, _), tree in zip(labelled, used_imports(trees)):
        exec(compile(tree, label, "exec"), namespace)
    return namespace


@functools.lru_cache(maxsize=None)
def stand_in_units(root: Path = ROOT) -> dict:
    """The reference's code for the items' code names, one unit per item, for the sandbox's stand-ins:
    {"imports": every import of the solution notebooks, "units": [{"item", "names", "source", "needs"}]} in
    the lesson's order; `needs`: the other items whose names a unit's code uses (DynamicLossScaler's base)."""
    imports, sources = [], {}
    ids = {f"{item.id}_solution": item for item in AUTO_ITEMS if item.code}
    for path in solution_notebooks(root):
        nb = read_notebook(path)
        for cell in runnable_cells(nb):
            for node in ast.parse(cell.source).body:
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    imports.append(ast.unparse(node))
        for cell in nb.cells:
            item = ids.get(cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")) if cell.cell_type == "code" else None
            if item is not None:
                sources[item.id] = sources.get(item.id, "") + cell.source + "\n"
    units = []
    for item in AUTO_ITEMS:
        if item.id not in sources:
            continue
        used = names_in(ast.parse(sources[item.id]))
        needs = [other.id for other in AUTO_ITEMS if other.id != item.id and other.code and set(other.names) & used]
        units.append({"item": item.id, "names": list(item.names), "source": sources[item.id], "needs": needs})
    return {"imports": "\n".join(dict.fromkeys(imports)) + "\n", "units": units}


def reference(root: Path = ROOT) -> Reference:
    """The backend the hidden checks compare a submission with, and the reference's code that stands in
    for other items' code while an item is graded."""
    return Reference(reference_namespace(root), stand_in_units(root))
