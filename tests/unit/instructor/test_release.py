"""autograder.instructor.release: stamp_points makes each grade cell's points those of items.py, and refuses
solutions that lack an item's cells (tests/test_release.py checks lessons/ against solutions/)."""
import shutil

import nbformat
import pytest

from autograder.instructor.release import stamp_points
from autograder.items import ITEMS, ROOT, SOLUTIONS_DIR, solution_notebooks


@pytest.fixture
def solutions(tmp_path):
    shutil.copytree(ROOT / SOLUTIONS_DIR, tmp_path / SOLUTIONS_DIR)
    return tmp_path


def grade_cells(path):
    nb = nbformat.read(path, as_version=4)
    return nb, [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade")]


def test_points_changed_by_hand_are_stamped_back_from_items(solutions):
    [path] = solution_notebooks(solutions)
    assert stamp_points(solutions) == []  # the repository's notebooks agree with items.py
    nb, cells = grade_cells(path)
    cells[0].metadata.nbgrader.points = 99
    nbformat.write(nb, path)
    assert stamp_points(solutions) == [path]
    points = {i.id: float(i.points) for i in ITEMS}
    assert all(float(c.metadata.nbgrader.points) == points[c.metadata.nbgrader.grade_id]
               for c in grade_cells(path)[1] if c.metadata.nbgrader.grade_id in points)


def test_a_missing_grade_cell_is_refused_by_name(solutions):
    [path] = solution_notebooks(solutions)
    nb, cells = grade_cells(path)
    gone = cells[0].metadata.nbgrader.grade_id
    nb.cells.remove(cells[0])
    nbformat.write(nb, path)
    with pytest.raises(SystemExit, match=f"no grade cell with grade_id {gone!r}"):
        stamp_points(solutions)


def test_the_order_is_written_from_the_notebook_and_only_when_it_changed(tmp_path):
    """An exercise folder with a graded cell in the notebook joins the order where its cell is; the file is
    written only when that changes."""
    import json
    import shutil
    from autograder.instructor.release import ORDER_FILE, notebook_order, write_order
    from autograder.items import ROOT
    for folder in ("autograder/exercises", "solutions"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    assert write_order(tmp_path) is False
    (tmp_path / "autograder/exercises/toy").mkdir()
    (tmp_path / "autograder/exercises/toy/__init__.py").write_text("")
    notebook = next((tmp_path / "solutions").rglob("*.ipynb"))
    nb = json.loads(notebook.read_text())
    nb["cells"].insert(0, {"cell_type": "code", "execution_count": None, "id": "toy", "outputs": [], "source": "",
                           "metadata": {"nbgrader": {"grade": True, "grade_id": "toy", "points": 1}}})
    notebook.write_text(json.dumps(nb))
    assert write_order(tmp_path) is True and write_order(tmp_path) is False
    written = {}
    exec((tmp_path / ORDER_FILE.relative_to(ROOT)).read_text(), written)
    assert written["ORDER"] == notebook_order(tmp_path) == ("toy", *notebook_order(ROOT))
