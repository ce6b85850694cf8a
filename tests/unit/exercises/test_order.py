"""autograder.exercises.order: what `release` wrote, the notebook's order of the exercises' folders."""
from autograder.exercises import EXERCISES, HERE
from autograder.exercises.order import ORDER
from autograder.instructor.release import ORDER_FILE, notebook_order, order_source


def test_the_order_is_the_notebooks_and_names_every_folder():
    assert ORDER == notebook_order() and ORDER_FILE.read_text() == order_source(ORDER)
    assert set(ORDER) == {p.parent.name for p in HERE.glob("*/__init__.py")} == {e.id for e in EXERCISES}
