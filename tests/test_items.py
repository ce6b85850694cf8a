"""The item table agrees with the notebooks, the check modules and the student contract."""
import ast

import pytest

from autograder import items
from autograder.runner import EXERCISES_DIR, HIDDEN_DIR, check_file
from tests.helpers import SOLUTION_NB, STUDENT_NB, nbgrader_cells, read


def test_ids_are_unique_and_kinds_known():
    ids = [i.id for i in items.ITEMS]
    assert len(ids) == len(set(ids))
    assert {i.kind for i in items.ITEMS} <= {"auto", "manual"}
    assert all(i.points > 0 for i in items.ITEMS)
    assert [i.id for i in items.MANUAL_ITEMS] == ["practice_q1", "practice_q2", "practice_q3", "practice_q4"]


def test_unknown_id_names_the_valid_ones():
    with pytest.raises(KeyError, match="underflow_fraction"):
        items.get_item("no_such_item")


@pytest.mark.parametrize("path", [SOLUTION_NB, STUDENT_NB], ids=["instructor", "student"])
def test_every_item_has_its_cells(path):
    cells = nbgrader_cells(read(path))
    graded = {gid for gid, c in cells.items() if c.metadata.nbgrader.get("grade")}
    assert graded == {i.id for i in items.ITEMS}, "grade cells and items.py disagree"
    for item in items.ITEMS:
        cell = cells[item.id]
        assert float(cell.metadata.nbgrader.points) == float(item.points)
        if item.kind == "auto":
            assert cell.cell_type == "code" and cell.source.strip() == f'check("{item.id}", globals())'
            assert cell.metadata.nbgrader.locked and not cell.metadata.nbgrader.solution
            assert cells[item.solution_cell_id].metadata.nbgrader.solution
        else:
            assert cell.cell_type == "markdown" and cell.metadata.nbgrader.solution


def test_every_auto_item_has_visible_and_hidden_checks():
    for item in items.AUTO_ITEMS:
        assert check_file(EXERCISES_DIR, item.id).is_file(), item.id
        assert check_file(HIDDEN_DIR, item.id).is_file(), item.id


def _top_level_names(source: str) -> set:
    names = set()
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def test_contract_names_sit_in_their_solution_cells():
    cells = nbgrader_cells(read(STUDENT_NB))
    for item in items.AUTO_ITEMS:
        defined = _top_level_names(cells[item.solution_cell_id].source)
        assert set(item.names) <= defined, f"{item.id}: {set(item.names) - defined} missing from its cell"


def _stubbed_functions(source: str) -> dict:
    """{qualified name: parameter count} of the functions and methods of a cell whose body raises
    NotImplementedError: the stubs the release left for the student."""
    found = {}

    def visit(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, ast.FunctionDef):
                raises = any(isinstance(n, ast.Raise) and "NotImplementedError" in ast.unparse(n)
                             for n in ast.walk(child))
                if raises:
                    found[prefix + child.name] = len(child.args.args)
    visit(ast.parse(source))
    return found


def test_student_stubs_raise_naming_the_exercise():
    """Every contract function and method of the student notebook raises NotImplementedError naming its exercise:
    each stubbed function of each item's cell (the registry's items and contract names), called with Nones."""
    import torch
    import torch.nn as nn
    cells = nbgrader_cells(read(STUDENT_NB))
    namespace = {"torch": torch, "nn": nn}
    for item in items.AUTO_ITEMS:
        exec(cells[item.solution_cell_id].source, namespace)
    for item in items.AUTO_ITEMS:
        if not item.code:
            continue
        stubs = _stubbed_functions(cells[item.solution_cell_id].source)
        assert {name.split(".")[0] for name in stubs} == set(item.names), (item.id, sorted(stubs))
        for name, arity in stubs.items():
            owner, _, method = name.partition(".")
            fn = getattr(namespace[owner], method) if method else namespace[owner]
            with pytest.raises(NotImplementedError, match=item.id):
                fn(*[None] * arity)
    assert namespace["Q5_ANSWER"] is Ellipsis, "the student's Q5 cell should read Q5_ANSWER = ..."


@pytest.mark.parametrize("path", [SOLUTION_NB, STUDENT_NB], ids=["instructor", "student"])
def test_the_exercise_list_is_in_the_notebooks_order(path):
    """The exercise list's order decides which earlier answers a later item's fork may hold: it must be the order
    in which the notebook defines them."""
    in_notebook = [c.metadata.nbgrader["grade_id"] for c in read(path).cells
                   if c.metadata.get("nbgrader", {}).get("grade") and c.metadata.nbgrader.get("grade_id") in
                   {i.id for i in items.AUTO_ITEMS}]
    assert in_notebook == [i.id for i in items.AUTO_ITEMS], (
        "autograder/exercises/order.py lists the exercises in another order than the notebook's grade cells: run "
        "`python -m autograder release`")
