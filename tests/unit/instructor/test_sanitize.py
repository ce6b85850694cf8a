"""autograder.instructor.sanitize: after SanitizeHtml, no cell of a hostile submission renders to active HTML.

The oracle is independent of nh3: Python's own HTML parser lists what the page HTML of each cell holds
(tags, attributes, URLs), and `active` names whatever could run or navigate to script. It is checked
against the unsanitized pages first, so it cannot pass by seeing nothing.
"""
import base64
import copy
from html.parser import HTMLParser

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.cells import COPY_KEY
from autograder.instructor.repair import RepairStructure
from autograder.instructor.sanitize import (MAX_RENDERED, RENDER_BUDGET, Budget, SanitizeHtml, as_text, math_html,
                                            page_html, page_markdown, raster_attachments, renders_clean, safe_markdown)
from tests.submissions import make_submission
from tests.submissions.hostile_html import HOSTILE_HTML

ACTIVE_TAGS = {"script", "style", "iframe", "frame", "object", "embed", "form", "button", "input", "meta", "base",
               "link", "svg", "math", "noscript", "body", "html", "template", "textarea", "select", "applet"}
URL_ATTRIBUTES = {"href", "src", "action", "formaction", "data", "srcset", "background", "poster", "xlink:href"}
RASTER_DATA = tuple(f"data:image/{kind};base64," for kind in ("png", "jpeg", "gif", "webp"))
KERNEL = {"name": "python3", "display_name": "Python 3", "language": "python"}
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
# MathML Core's presentation elements, which the pages draw formulas with: allowed there, with no active attribute
MATHML_CORE = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac", "msqrt",
               "mroot", "mover", "munder", "munderover", "mstyle", "mpadded", "mphantom", "merror", "mtable", "mtr",
               "mtd", "semantics", "annotation"}


class Elements(HTMLParser):
    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.found = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))

    def handle_data(self, data):
        self.text = getattr(self, "text", "") + data


def active(page: str) -> list:
    """What in this HTML could run script: tags, event and style attributes, and URLs other than
    http(s), mailto and raster data images."""
    found = []
    for tag, attrs in Elements(page).found:
        if tag in ACTIVE_TAGS:
            found.append(f"<{tag}>")
        for name, value in attrs:
            value = (value or "").strip().lower()
            if name.startswith("on") or name in ("style", "id"):
                found.append(f"<{tag} {name}>")
            elif name in URL_ATTRIBUTES and not (value.startswith(("http:", "https:", "mailto:"))
                                                 or (tag, name) == ("img", "src") and value.startswith(RASTER_DATA)):
                found.append(f"<{tag} {name}={value[:40]!r}>")
            elif name == "class" and any(c in value.split() for c in ("btn", "full-credit", "score", "comment")):
                found.append(f"<{tag} class={value!r}>")
    return found


def active_on_page(page: str) -> list:
    """`active`, except MathML Core's elements themselves: what could run on the feedback or formgrader page."""
    return [found for found in active(page) if found.strip("<>") not in MATHML_CORE]


def sanitized(nb):
    nb, _ = RepairStructure().preprocess(nb, {})
    nb, _ = SanitizeHtml().preprocess(nb, {})
    return nb


def active_cells(nb, render=page_html, oracle=active) -> dict:
    """cell index -> what is active in its page HTML, for markdown and raw cells (raw as nbconvert shows it)."""
    found = {}
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            page = render(cell.source, cell.get("attachments", {}))
        elif cell.cell_type == "raw":
            page = cell.source
        else:
            continue
        if oracle(page):
            found[index] = oracle(page)
    return found


@pytest.mark.parametrize("variant", [v.name for v in HOSTILE_HTML])
def test_hostile_cells_render_inert(variant):
    nb = sanitized(make_submission(variant))
    assert active_cells(nb) == {}
    assert active_cells(nb, page_markdown, active_on_page) == {}  # as the pages draw it, formulas as MathML
    for cell in nb.cells:
        assert set(cell.metadata) <= {"nbgrader", COPY_KEY}, cell.metadata
    assert set(nb.metadata) <= {"kernelspec", "language_info"}


def test_the_oracle_sees_the_payloads_before_sanitizing():
    for variant in ("hostile_html_script", "hostile_html_event_attributes", "hostile_html_links",
                    "hostile_html_styles", "hostile_html_raw_cells_and_tags"):
        assert active_cells(make_submission(variant)), variant


def test_written_answers_that_render_clean_keep_their_source():
    """An unanswered cell keeps nbgrader's checksum ("No response"), and plain answers are not rewritten."""
    nb = make_submission("stub")
    answers = ["YOUR ANSWER HERE", "fp16 *loses* values below $2^{-24}$; the master copy keeps `w += lr * g`.",
               "- one\n- two\n\n| a | b |\n|---|---|\n| 1 | 2 |"]
    cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id", "").startswith("practice_q")]
    for cell, answer in zip(cells, answers):
        cell.source = answer
    before = copy.deepcopy(nb)
    after = sanitized(nb)
    for old, new in zip(before.cells, after.cells):
        if old.metadata.get("nbgrader", {}).get("grade_id", "").startswith("practice_q"):
            assert new.source == old.source


def test_a_rewritten_cell_shows_the_same_text():
    source = '# A "quoted" heading\n\nSee <b onclick="x()">this</b> & [that](javascript:x()), $a<b$.'
    result = safe_markdown(source, {})
    assert result != source and renders_clean(result, {})
    shown = Elements(page_html(result, {})).text.strip()
    assert shown == Elements(page_html(source, {})).text.strip() == 'A "quoted" heading¶See this & that, $a<b$.'


NASTY = st.lists(st.sampled_from(["<", ">", "/", "\"", "'", "=", "&", ";", ":", "\n", "\n\n", " ", "    ", "`", "*",
                                  "[", "]", "(", ")", "$", "!", "#", "-", "script", "img", "a", "pre", "href", "src",
                                  "onerror", "x", "javascript", "files/", "data:", "attachment:p.png", "<!--", "-->",
                                  "<pre>", "</pre>", "<svg>", "<style>", "&lt;", "&#106;"]), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(NASTY)
def test_whatever_is_written_comes_out_inert(source):
    attachments = {"p.png": {"image/png": PNG}}
    result = safe_markdown(source, attachments)
    assert renders_clean(result, attachments) or page_html(result, attachments).strip() == result == as_text(source)
    assert active(page_html(result, attachments)) == []
    assert active_on_page(page_markdown(result, attachments)) == []


FORMULAS = [r"$\href{javascript:alert(1)}{x}$", r"$\text{<img src=x onerror=alert(1)>}$", r"$\text{<script>x</script>}$", "$<script>alert(1)</script>$",
            r"$$\color{red}{x} \mathrm{<svg onload=alert(1)>}$$", r"\begin{align}a&=\href{javascript:x}{b}\end{align}",
            r"$\style{color:red}{x}$", r"$x$<img src=x onerror=alert(1)>$y$"]


@pytest.mark.parametrize("source", FORMULAS)
def test_formulas_are_drawn_inert(source):
    result = safe_markdown(source, {})
    assert active_on_page(page_markdown(result, {})) == []


def test_the_page_oracle_sees_what_latex2mathml_lets_through():
    """latex2mathml itself writes \\href's URL and \\text's tags into its MathML: the oracle sees both."""
    import latex2mathml.converter
    assert active_on_page(latex2mathml.converter.convert(r"\href{javascript:alert(1)}{x}"))
    assert active_on_page(latex2mathml.converter.convert(r"\text{<script>alert(1)</script>}"))


def test_formulas_and_tables_are_drawn_as_in_jupyterlab():
    """A formula is MathML, in a table too (JupyterLab draws both; nbconvert leaves $2^k$ for MathJax to find),
    and a formula latex2mathml cannot read is left as nbconvert writes it."""
    import latex2mathml.converter
    page = page_markdown("| # | scale |\n|---|---|\n| 1 | $2^k$ |\n\n$$\\frac{n_i}{N}$$ and $\\nosuchmacro{$", {})
    assert "$2^k$" in page_html("| # | scale |\n|---|---|\n| 1 | $2^k$ |", {})
    assert "<td>" + latex2mathml.converter.convert("2^k") + "</td>" in page
    assert latex2mathml.converter.convert(r"\frac{n_i}{N}", display="block") in page
    assert "$\\nosuchmacro{$" in page and math_html(r"\nosuchmacro{", False) is None

def test_rendering_is_bounded_per_cell_and_per_notebook():
    """mistune is quadratic on "[" * n: a long cell is shown as text, unrendered, and so is every cell
    once the notebook's budget is spent."""
    long = "[" * (MAX_RENDERED + 1) + "<script>"
    assert safe_markdown(long, {}) == as_text(long)
    budget = Budget()
    answer = "x" * (MAX_RENDERED // 2) + ' "quoted" <b onclick="y()">z</b>'
    shown = [safe_markdown(answer, {}, budget) for _ in range(2 * RENDER_BUDGET // MAX_RENDERED)]
    assert shown[0] != as_text(answer) and shown[-1] == as_text(answer)
    assert budget.left >= 0


def test_text_shown_unrendered_is_inert_and_kept_whole_up_to_a_limit():
    source = "</pre><script>alert(1)</script> [x](javascript:y) " + "\u202e&#60;" * 10
    shown = as_text(source)
    assert page_html(shown, {}).strip() == shown and active(shown) == []
    assert Elements(shown).text == source


def test_attachments_keep_only_raster_images():
    kept = raster_attachments({
        "p.png": {"image/png": PNG, "image/svg+xml": "PHN2Zz48L3N2Zz4=", "text/html": "PHNjcmlwdD4="},
        "s.svg": {"image/svg+xml": "PHN2Zz48L3N2Zz4="},
        "bad.png": {"image/png": "not base64 \" onerror=x"},
        "h.gif": {"text/html": "PHNjcmlwdD4="}})
    assert kept == {"p.png": {"image/png": PNG}}


def test_an_attached_image_is_shown_and_a_dropped_one_falls_back_to_text():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("![plot](attachment:p.png)"),
                nbformat.v4.new_markdown_cell("![evil](attachment:e.svg) <b>bold</b>")]
    nb.cells[0].attachments = {"p.png": {"image/png": PNG}}
    nb.cells[1].attachments = {"e.svg": {"image/svg+xml": "PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+"}}
    nb, _ = SanitizeHtml().preprocess(nb, {})
    shown = page_html(nb.cells[0].source, nb.cells[0].attachments)
    assert f'src="data:image/png;base64,{PNG}"' in shown
    assert "attachments" not in nb.cells[1]
    assert nb.cells[1].source == as_text("![evil](attachment:e.svg) <b>bold</b>")
    assert active_cells(nb) == {}


def test_the_instructors_text_as_released_is_left_alone():
    nb = make_submission("stub")
    lesson_text = [c for c in nb.cells if c.cell_type == "markdown" and "nbgrader" not in c.metadata]
    lesson_text[1].source += "\n<img src=x onerror=alert(1)>"
    before = copy.deepcopy(nb)
    nb, _ = SanitizeHtml().preprocess(nb, {"nbgrader": {"notebook": "lesson20"}})
    changed = [i for i, (old, new) in enumerate(zip(before.cells, nb.cells)) if old.source != new.source]
    assert changed == [nb.cells.index(lesson_text[1])] and changed[0] not in active_cells(nb)


def test_metadata_keeps_what_nbgrader_needs():
    nb = nbformat.v4.new_notebook(metadata={"kernelspec": KERNEL, "title": "<script>",
                                            "language_info": {"name": "python", "pygments_lexer": "<x>"}})
    good = nbformat.v4.new_code_cell("x = 1", metadata={
        "nbgrader": {"grade": False, "solution": True, "grade_id": "ok_id", "locked": False, "schema_version": 3,
                     "comment": "<script>", "extra": 1}, "tags": ["a\" onclick=\"x"], "editable": False})
    bad = nbformat.v4.new_markdown_cell("text", metadata={
        "nbgrader": {"solution": True, "grade_id": "\"><img src=x onerror=alert(1)>"},
        COPY_KEY: {"copy_of": "<b>"}})
    good["id"], bad["id"] = "fine-id_1", "\"><script>"
    nb.cells = [good, bad]
    nb, _ = SanitizeHtml().preprocess(nb, {})
    assert nb.metadata == {"kernelspec": KERNEL, "language_info": {"name": "python"}}
    assert nb.cells[0].metadata == {"nbgrader": {"grade": False, "solution": True, "grade_id": "ok_id",
                                                 "locked": False, "schema_version": 3}}
    assert nb.cells[1].metadata == {}
    assert nb.cells[0].id == "fine-id_1" and nb.cells[1].id.replace("-", "").isalnum()


def test_raw_cells_are_escaped():
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_raw_cell("<script>alert(1)</script>", metadata={"raw_mimetype": "text/html"})]
    nb, _ = SanitizeHtml().preprocess(nb, {})
    assert nb.cells[0].source == "&lt;script&gt;alert(1)&lt;/script&gt;" and nb.cells[0].metadata == {}
