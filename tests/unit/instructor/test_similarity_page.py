"""The similarity page: escaped, no script, the class report's Content-Security-Policy, the shared parts marked."""
import html
import re

from autograder.instructor import class_report, similarity
from autograder.instructor.similarity_page import marked, render

HOSTILE = "<img src=x onerror=alert(1)>"


def _page(a: str, b: str, code_a: str, code_b: str) -> tuple:
    cells = similarity.Cells(code={"underflow_fraction": {a: code_a, b: code_b}}, skipped={"<script>x</script>": "why"})
    matches = {"underflow_fraction": similarity.compare_item("underflow_fraction", cells.code["underflow_fraction"], [])}
    return render(cells, matches, similarity.ranking(matches)), matches


def test_marked_escapes_the_code_and_marks_each_span():
    source = "x = '<b>' + y  # </pre><script>alert(1)</script>\nz = 2\n"
    out = marked(source, [(0, 13), (40, 47)])
    assert "<script>" not in out and "<b>" not in out
    assert out.count("<mark>") == 2
    assert html.unescape(re.sub(r"</?mark>", "", out)) == source  # nothing lost, nothing added


def test_the_page_shows_the_two_cells_side_by_side_with_the_shared_code_marked():
    code = ("def underflow_fraction(values, dtype):\n    kept = values[values != 0]\n"
            "    lost = (kept.to(dtype) == 0).sum().item()\n    return lost / max(kept.numel(), 1)\n")
    page, matches = _page(HOSTILE, "bob", code, code.replace("kept", "nonzero"))
    assert matches["underflow_fraction"] and "<mark>" in page
    assert f'content="{class_report.CONTENT_SECURITY_POLICY}"' in page
    assert "<script" not in page.lower() and HOSTILE not in page and html.escape(HOSTILE) in page
    assert page.count("<pre>") == 2 and "class='sides'" in page
    assert "&lt;script&gt;x&lt;/script&gt;" in page  # a skipped student, named as text


def test_a_class_with_nothing_shared_says_so():
    page, matches = _page("ada", "bob", "a = 1\n", "b = 2\n")
    assert matches == {"underflow_fraction": []}
    assert "No two students share code" in page
