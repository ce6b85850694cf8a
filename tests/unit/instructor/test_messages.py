"""autograder.instructor.messages: what the instructor reads keeps a student's text from breaking a line, a row
or a page: names and reasons on one printable line, an unusable id quoted."""
from autograder.instructor.messages import duplicate_cell_id, one_line, refused_id_cell


def test_one_line_is_one_printable_line_within_its_limit():
    assert one_line("a\nb\tc") == "a b c"
    assert one_line("x" * 500, limit=40) == "x" * 39 + "…"
    shown = one_line("evil\x1b[2Jname")
    assert "\x1b" not in shown and shown.isprintable()


def test_an_unusable_id_is_quoted_and_starts_no_formula():
    cell = refused_id_cell("=HYPERLINK(1)\n")
    assert cell.startswith("'=HYPERLINK(1)\\n'") and "not a usable student id" in cell


def test_a_repair_is_said_as_one():
    assert "given a new one" in duplicate_cell_id(3, "abc", 1)
