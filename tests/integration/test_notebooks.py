"""Both notebooks run top to bottom, headless: the instructor's passes every check, the student's runs to the
end with stubs in place (so "Run All" reaches every quiz and demo).

The facts asserted here are the CPU's: the notebooks run with LESSON20_DEVICE=cpu, even on a machine with a
GPU. The same run on CUDA, with the figures it prints, is `python -m benchmarks.gpu`.
"""
import os

import pytest
from nbclient import NotebookClient

from autograder.items import ITEMS_BY_ID
from tests.helpers import SOLUTION_NB, STUDENT_NB, read

pytestmark = pytest.mark.slow


def execute(path, tmp_path):
    nb = read(path)
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute(env={**os.environ, "LESSON20_DEVICE": "cpu"})
    return nb


def check_cells(nb):
    return [(c.metadata.nbgrader.grade_id, c) for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]


def outputs(nb, kind):
    return [o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == kind]


@pytest.fixture(scope="module")
def instructor(tmp_path_factory):
    return execute(SOLUTION_NB, tmp_path_factory.mktemp("instructor"))


@pytest.fixture(scope="module")
def student(tmp_path_factory):
    return execute(STUDENT_NB, tmp_path_factory.mktemp("student"))


def test_instructor_notebook_passes_every_check(instructor):
    assert not outputs(instructor, "error")
    cells = check_cells(instructor)
    assert len(cells) == 8
    for grade_id, cell in cells:
        result = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert result and float(result[0].data["text/plain"]) == ITEMS_BY_ID[grade_id].points, grade_id
        assert "lesson20-check-pass" in result[0].data["text/html"], grade_id


def test_instructor_demos_draw_their_plots(instructor):
    images = [o for o in outputs(instructor, "display_data") if "image/png" in o.data]
    assert len(images) >= 4  # gradient histogram, training curves, loss scale, memory bars
    text = "".join(o.text for o in outputs(instructor, "stream") if o.name == "stdout")
    assert "mixed precision / fp32 final loss" in text and "naive fp16: final training loss nan" in text
    ratio = float(text.split("mixed precision / fp32 final loss:")[1].split()[0])
    assert abs(ratio - 1) <= 0.02, f"mixed precision should end within 2% of fp32, got a ratio of {ratio}"


def test_student_notebook_runs_to_the_end_with_stubs(student):
    assert not outputs(student, "error"), "an error stops Run All before the later quizzes and demos"
    for grade_id, cell in check_cells(student):
        result = [o for o in cell.outputs if o.output_type == "execute_result"]
        assert result and float(result[0].data["text/plain"]) == 0, grade_id
        html = result[0].data["text/html"]
        assert grade_id in html and "Traceback" not in html and len(html) < 1500, grade_id
    widgets = [o for o in outputs(student, "display_data") if "application/vnd.jupyter.widget-view+json" in o.data]
    assert len(widgets) >= 4  # three quizzes and the scale sweep (plus progress bars)
