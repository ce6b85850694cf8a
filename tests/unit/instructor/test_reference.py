"""autograder.instructor.reference: which code of the instructor notebooks the reference runs
(runnable_cells), that it is executed from the instructor notebook, and that its code for the stand-ins holds
every code item's names (tests/test_reference.py judges it against oracles)."""
import ast
import subprocess
import sys

import nbformat

from autograder.instructor.reference import (reference, reference_namespace, runnable_cells, stand_in_units,
                                            used_imports)
from autograder.items import AUTO_ITEMS


def test_the_namespace_defines_every_contract_name():
    namespace = reference_namespace()
    assert all(name in namespace for item in AUTO_ITEMS for name in item.names)


def test_the_stand_in_units_define_each_code_items_names_alone_and_no_answer():
    """One unit per code item, each defining exactly its item's names; `needs` names the items whose names its
    code uses (DynamicLossScaler derives from StaticLossScaler)."""
    units = stand_in_units()
    code = [item for item in AUTO_ITEMS if item.code]
    assert [u["item"] for u in units["units"]] == [item.id for item in code]
    for unit, item in zip(units["units"], code):
        defined = {node.name for node in ast.parse(unit["source"]).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        assert defined == set(item.names), unit["item"]
        assert "Q5_ANSWER" not in unit["source"]
    needs = {u["item"]: u["needs"] for u in units["units"]}
    assert needs["dynamic_loss_scaler"] == ["static_loss_scaler"] and needs["static_loss_scaler"] == []
    assert "import torch" in units["imports"]


def test_the_backend_carries_the_units():
    assert reference().units == stand_in_units()


def notebook(*cells):
    nb = nbformat.v4.new_notebook()
    for source, solution in cells:
        cell = nbformat.v4.new_code_cell(source)
        if solution:
            cell.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": f"x{len(nb.cells)}"}
        nb.cells.append(cell)
    nb.cells.insert(1, nbformat.v4.new_markdown_cell("text"))
    return nb


def test_solution_cells_definitions_and_imports_run_in_order():
    nb = notebook(("import torch\nDEVICE = pick()\nimport math as m", False),   # imports only
                  ("def helper():\n    return 1", False),                      # definitions: whole cell
                  ("plot(train())", False),                                   # a demo: left out
                  ("def f():\n    return helper()\nprint('hi')", True))       # solution: whole cell
    cells = runnable_cells(nb)
    assert [c.index for c in cells] == [0, 2, 4]
    assert cells[0].source == "import torch\n\nimport math as m" and not cells[0].solution
    assert cells[2].solution and "print('hi')" in cells[2].source


def test_definitions_and_constants_are_taken_from_mixed_cells():
    """A helper written next to a test call still reaches the grader; the call does not."""
    source = "EPS = 2.0**-24\ndef helper(x):\n    return x + EPS\nprint(helper(1))\nN = len([1])"
    cells = runnable_cells(notebook((source, False)))
    assert cells[0].source == "EPS = 2.0**-24\ndef helper(x):\n    return x + EPS\n\n"


def test_magics_in_the_instructors_cells_are_blanked_keeping_line_numbers():
    cells = runnable_cells(notebook(("%matplotlib inline\nimport math\n!pip list\nTAU = 2 * 3.14", False)))
    assert cells[0].source == "\nimport math\n\nTAU = 2 * 3.14"


def test_broken_solution_cell_still_runs_so_the_student_sees_the_error():
    cells = runnable_cells(notebook(("def f(:\n    pass", True), ("def g(:\n", False)))
    assert [(c.index, c.solution) for c in cells] == [(0, True)]


def test_only_the_imports_the_code_uses_run():
    """An import whose name no kept statement loads (pyplot for the demos) is not run in the grader's process;
    a name used only inside a function body keeps its import, and `import *` is kept whole."""
    sources = ["import math, copy\nimport matplotlib.pyplot as plt\nfrom os import path as p, sep\nfrom x import *",
               "def f():\n    return math.pi + len(sep)"]
    trees = [ast.parse(s) for s in sources]
    cut = used_imports(trees)
    assert ast.unparse(cut[0]) == "import math\nfrom os import sep\nfrom x import *"
    assert ast.unparse(cut[1]) == sources[1]
    assert [ast.unparse(t) for t in trees] == [ast.unparse(ast.parse(s)) for s in sources]  # the input is left whole


def test_the_grading_process_does_not_import_the_demos_libraries():
    script = ("import sys\nfrom autograder.instructor.reference import reference\nreference()\n"
              "print(sorted(m for m in ('matplotlib', 'ipywidgets', 'autograder.quiz') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
