"""autograder.instructor.doc_tables: docs/grading-design.md's generated tables, written by release and held fresh."""
import pytest

from autograder import rubric
from autograder.instructor import doc_tables
from autograder.items import AUTO_ITEMS, ROOT


def _write(root, text: str) -> None:
    (root / doc_tables.DOC).parent.mkdir(parents=True, exist_ok=True)
    (root / doc_tables.DOC).write_text(text)


def test_the_document_in_the_repository_is_fresh():
    assert doc_tables.stale(ROOT) == [], "docs/grading-design.md's generated tables are stale: run python -m autograder release"


def test_a_stale_table_is_reported_and_rewritten(tmp_path):
    text = (ROOT / doc_tables.DOC).read_text()
    first = rubric.RUBRIC[AUTO_ITEMS[0].id][0]
    _write(tmp_path, text.replace(f"| {first.text} **(central)** |", "| edited |", 1))
    assert doc_tables.stale(tmp_path) == ["rubric"]
    assert doc_tables.write(tmp_path) == ["rubric"] and doc_tables.stale(tmp_path) == []
    assert (tmp_path / doc_tables.DOC).read_text() == text


def test_missing_markers_name_the_table(tmp_path):
    text = (ROOT / doc_tables.DOC).read_text().replace("<!-- /grades -->", "")
    _write(tmp_path, text)
    with pytest.raises(SystemExit, match="grades"):
        doc_tables.stale(tmp_path)


def test_the_tables_come_from_the_registries():
    assert all(f"| `{i.id}` | {i.points:g} | checks |" in doc_tables.grades_table() for i in AUTO_ITEMS)
    assert all(b.text in doc_tables.rubric_table() for behaviours in rubric.RUBRIC.values() for b in behaviours)


def test_a_course_root_without_the_document_has_no_table_to_write(tmp_path):
    assert doc_tables.stale(tmp_path) == [] and doc_tables.write(tmp_path) == [] and not (tmp_path / doc_tables.DOC).exists()
