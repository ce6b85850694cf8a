"""The feedback page against nbconvert's own: what each element shows and carries is the same, the attributes
nbconvert's BeautifulSoup pass adds (alt texts, tabindex) included, and its templates compile once."""
import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter

from autograder.instructor import feedback_page
from autograder.instructor.feedback_page import NO_ALT, FeedbackPage, accessible

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
HTML_OUTPUT = ('<div class="jp-Notebook"><div class="jp-OutputArea-output" tabindex="-1">x</div>'
               '<img src="a.png"><img alt="" src="b.png"/><div title="<img src=c.png>">t</div></div>'
               "<script>var s = '<img src=d.png>';</script><!-- <img src=e.png> -->")


def notebook():
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": PNG, "text/plain": "<Figure>"}}
    html = {"output_type": "display_data", "metadata": {}, "data": {"text/html": HTML_OUTPUT, "text/plain": "x"}}
    cells = [nbformat.v4.new_markdown_cell("# Title\n\n*some* text ![a plot](p.png) <img src='q.png'>"),
             nbformat.v4.new_code_cell("x = 1  # a comment < 2", outputs=[image, html]),
             nbformat.v4.new_code_cell("print('é &amp; <b>')", outputs=[nbformat.v4.new_output(
                 "stream", name="stdout", text="é &amp; <b>\n")])]
    return nbformat.v4.new_notebook(cells=cells)


def shown(page: str) -> list:
    """Every element of the page, parsed: its name, its attributes and its own text."""
    soup = BeautifulSoup(page, features="html.parser")
    return [(e.name, {k: " ".join(v) if isinstance(v, list) else v for k, v in e.attrs.items()},
             "".join(e.find_all(string=True, recursive=False)).strip()) for e in soup.find_all(True)]


@pytest.mark.parametrize("template", ["lab", "classic"])
def test_the_page_shows_what_nbconverts_shows(template):
    nb = notebook()
    expected, _ = HTMLExporter(template_name=template).from_notebook_node(nb)
    page, _ = FeedbackPage(template_name=template).from_notebook_node(nb)
    assert shown(page) == shown(expected)
    assert page != expected  # the page was not written out again from a parsed tree


def test_alt_texts_and_tabindex_go_where_nbconvert_puts_them():
    page = accessible("<main class='jp-Notebook'><div class='jp-Cell-inputWrapper'>a</div>"
                      "<div class='jp-OutputArea-output' tabindex='-1'>b</div><img src=x><br/><img alt=y src=z /></main>"
                      "<div class='jp-Cell-inputWrapper'>outside</div><style>img{}</style>")
    assert page == (f'<main class=\'jp-Notebook\'><div class="jp-Cell-inputWrapper" tabindex="0">a</div>'
                    f'<div class="jp-OutputArea-output" tabindex="0">b</div><img src="x" alt="{NO_ALT}"><br/>'
                    "<img alt=y src=z /></main><div class='jp-Cell-inputWrapper'>outside</div><style>img{}</style>")
    # a changed tag is written from the parse, its values escaped: nothing in them becomes markup
    assert accessible('<img src="a&quot; onerror=&quot;x">') == f'<img src="a&quot; onerror=&quot;x" alt="{NO_ALT}">'
    assert accessible("<p>nothing to add</p>") == "<p>nothing to add</p>"


def test_the_templates_compile_once(monkeypatch):
    from jinja2 import Environment
    FeedbackPage().from_notebook_node(notebook())
    compiled = []
    original = Environment.compile
    monkeypatch.setattr(Environment, "compile", lambda self, *a, **k: compiled.append(a) or original(self, *a, **k))
    FeedbackPage().from_notebook_node(notebook())  # a new exporter, as for the next student
    assert not compiled, "the second page compiled its templates again"
    assert feedback_page.FeedbackPage.compiled.client, "the cache holds nothing"


@pytest.mark.filterwarnings("ignore:No lexer found for language None")  # nbconvert's, for the null magics_language
def test_a_kept_result_is_the_one_its_own_text_and_lexer_give():
    """Highlighting and cleaning are kept across pages; a kept result is only reused for the same text, lexer
    and magics language (a %%bash cell's source seen before as Python is highlighted again, as bash)."""
    feedback_page._highlighted.clear()
    feedback_page._cleaned.clear()
    source = "%%bash\necho 'x' $HOME"
    first = notebook()
    first.cells.append(nbformat.v4.new_code_cell(source))
    FeedbackPage().from_notebook_node(first)
    second = notebook()
    second.cells[1].source = "y = 2  # changed"
    second.cells.append(nbformat.v4.new_code_cell(source, metadata={"magics_language": "bash"}))
    page, _ = FeedbackPage().from_notebook_node(second)
    assert feedback_page._highlighted.hits and feedback_page._cleaned.hits
    expected, _ = HTMLExporter().from_notebook_node(second)  # nbconvert's, which keeps nothing
    assert shown(page) == shown(expected)
    feedback_page._highlighted.clear()
    feedback_page._cleaned.clear()
    cold, _ = FeedbackPage().from_notebook_node(second)
    assert page == cold  # byte for byte, with nothing kept
    null = notebook()  # a magics_language of null is not none: nbconvert then highlights as plain text
    null.cells[1].metadata["magics_language"] = None
    page, _ = FeedbackPage().from_notebook_node(null)
    expected, _ = HTMLExporter().from_notebook_node(null)
    assert shown(page) == shown(expected)


def test_what_is_kept_stays_within_its_budget():
    """The least recent results go first, each counted with what keeping it costs besides its characters, and a
    text too large for the budget is not kept at all."""
    calls = []
    budget = 8 * (feedback_page.ENTRY + 200)  # room for ten results of 40 characters made from 40
    recent = feedback_page.Recent(lambda text: calls.append(text) or text.upper(), budget)
    for text in ["a" * 40, "b" * 40, "c" * 40]:
        assert recent(text) == text.upper()
    assert recent("a" * 40) == "A" * 40 and len(calls) == 3  # kept: not made again
    for i in range(20):
        recent(f"{i:02d}" * 20)
        assert recent.size == sum(cost for _, cost in recent.kept.values()) <= budget
    assert len(recent.kept) == budget // (feedback_page.ENTRY + 80)
    assert ("b" * 40,) not in recent.kept and ("a" * 40,) not in recent.kept  # the least recent went first
    recent("x" * 200)  # 400 characters with its result: more than an eighth of the budget
    assert ("x" * 200,) not in recent.kept
