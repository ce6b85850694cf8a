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
