"""autograder.instructor.readme: the README's generated tables, written by release and held fresh."""
import pytest

from autograder import rubric
from autograder.instructor import readme
from autograder.items import AUTO_ITEMS, ROOT


def test_the_readme_in_the_repository_is_fresh():
    assert readme.stale(ROOT) == [], "README.md's generated tables are stale: run python -m autograder release"


def test_a_stale_table_is_reported_and_rewritten(tmp_path):
    text = (ROOT / readme.README).read_text()
    first = rubric.RUBRIC[AUTO_ITEMS[0].id][0]
    (tmp_path / readme.README).write_text(text.replace(f"| {first.text} **(central)** |", "| edited |", 1))
    assert readme.stale(tmp_path) == ["rubric"]
    assert readme.write(tmp_path) == ["rubric"] and readme.stale(tmp_path) == []
    assert (tmp_path / readme.README).read_text() == text


def test_missing_markers_name_the_table(tmp_path):
    text = (ROOT / readme.README).read_text().replace("<!-- /grades -->", "")
    (tmp_path / readme.README).write_text(text)
    with pytest.raises(SystemExit, match="grades"):
        readme.stale(tmp_path)


def test_the_tables_come_from_the_registries():
    assert all(f"| `{i.id}` | {i.points:g} | checks |" in readme.grades_table() for i in AUTO_ITEMS)
    assert all(b.text in readme.rubric_table() for behaviours in rubric.RUBRIC.values() for b in behaviours)


def test_a_course_root_without_a_readme_has_no_table_to_write(tmp_path):
    assert readme.stale(tmp_path) == [] and readme.write(tmp_path) == [] and not (tmp_path / readme.README).exists()
