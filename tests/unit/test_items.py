"""autograder.items: the table's derived views and lookups (tests/test_items.py checks the table against the
notebooks and the check modules)."""
import pytest

from autograder import items


def test_views_partition_the_table():
    assert items.AUTO_ITEMS + items.MANUAL_ITEMS == tuple(sorted(items.ITEMS, key=lambda i: i.kind == "manual"))
    assert list(items.ITEMS_BY_ID) == [i.id for i in items.ITEMS]


def test_an_unknown_id_lists_the_valid_ones():
    with pytest.raises(KeyError) as caught:
        items.get_item("nope")
    assert all(i.id in str(caught.value) for i in items.ITEMS)


def test_each_item_is_declared_once():
    """The auto-graded items are the exercises' own declarations, not copies of their fields."""
    from autograder.exercises import EXERCISES
    assert all(item is exercise for item, exercise in zip(items.AUTO_ITEMS, EXERCISES, strict=True))
    assert all(item.kind == "manual" and item.names == () for item in items.MANUAL_ITEMS)


def test_a_solution_cell_belongs_to_its_item():
    for item in items.AUTO_ITEMS:
        assert items.item_of_cell(item.solution_cell_id) == items.item_of_cell(item.id) == item.id
    assert items.item_of_cell(None) == ""


def test_the_folders_it_names_exist():
    assert items.CHECKS_DIR.is_dir() and items.EXERCISES_DIR.is_dir() and items.HIDDEN_DIR.is_dir()
    assert items.solution_notebooks(items.PACKAGE_DIR.parent)
    for item in items.AUTO_ITEMS:
        assert items.check_file(items.EXERCISES_DIR, item.id).is_file() and items.check_file(items.HIDDEN_DIR, item.id).is_file()
