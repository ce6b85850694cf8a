"""The feedback page's exporter: nbconvert's HTMLExporter, as nbgrader's GenerateFeedback uses it, made cheaper
in two ways that leave what a browser shows the same.

1. Its templates are compiled once per grading process rather than once per student (jinja2's bytecode
   cache, keyed by each template's name and checked against its source).
2. nbconvert's last step parses the whole page again with BeautifulSoup, only to give every image without an
   alt text nbconvert's placeholder and to make each cell's input and outputs focusable (tabindex="0") inside a
   `.jp-Notebook`; it then writes the page out again from the parsed tree (60% of the page's time, for a
   page of 0.4 MB). Here `accessible` scans the page with the standard library's HTML tokenizer (the one
   BeautifulSoup's "html.parser" uses) and writes out again, from that parse and with those attributes, only
   the start tags that get one, as BeautifulSoup would write them; every other byte of the page stays as the
   template wrote it, so the sanitized cells (sanitize.py) reach the browser as the sanitizer wrote them.
3. The template highlights each code cell with pygments and cleans the result with bleach (clean_html, which
   it also applies to HTML outputs, and to markdown cells where it sanitizes them): two thirds of what is left. Both are functions of their text alone, and most
   cells are the lesson's own, the same on every student's page: each result is kept (`Recent`, the most
   recent within 4 M characters per grading process) and a cell seen before costs a dictionary lookup.

4. The page's markdown (`page_markdown`, formulas as MathML: sanitize.py) is kept the same way.

Its template is templates/lesson20_feedback.html.j2, which page_summary.py's GenerateFeedback steps feed;
`configure_pages` installs both pages' templates and filters: this one, and formgrader's manual-grading page.

tests/browser/test_hostile_html.py opens this page and nbconvert's own, made with the same template, side by side
and compares what they show: every element's visible text and attributes.
"""
import json
from collections import OrderedDict
from html import escape
from html.parser import HTMLParser
from pathlib import Path

from jinja2 import MemcachedBytecodeCache, pass_context
from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.strings import clean_html
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

from .sanitize import clean, page_html, page_markdown

NO_ALT = "No description has been provided for this image"  # nbconvert's own placeholder
FOCUSABLE = ("jp-Cell-inputWrapper", "jp-OutputArea-output")  # div classes nbconvert makes focusable
NOTEBOOK = "jp-Notebook"
VOID = frozenset("area base br col embed hr img input link meta param source track wbr".split())
KEPT = 1 << 22  # characters kept of each kind per grading process: the lesson's cells' (about 0.2 M), and a class's common answers
ENTRY = 256  # what keeping one result costs besides its characters (the key, the dictionary's entry), counted as characters
TEMPLATES = Path(__file__).parent / "templates"  # the two pages' templates, and what they share
FILTERS = "autograder.instructor.feedback_page"


class _Kept(dict):
    """jinja2's MemcachedBytecodeCache stores through a client's get and set: here, a dict kept for the life of
    the grading process."""

    def set(self, key, value, timeout=None):
        self[key] = value


class _Attributes(HTMLParser):
    """Finds the start tags that nbconvert's BeautifulSoup pass gives an attribute, and writes each out again
    with it."""

    def __init__(self):
        super().__init__(convert_charrefs=False)  # character references are left to the page, as written
        self.open = []         # the open elements: (tag, whether it is a .jp-Notebook)
        self.notebooks = 0     # how many of them are
        self.changed = []      # (line, column of the tag's start, its length, the tag written out again)

    def handle_starttag(self, tag, attrs):
        self._start(tag, attrs)
        if tag not in VOID:
            notebook = NOTEBOOK in _classes(attrs)
            self.open.append((tag, notebook))
            self.notebooks += notebook

    def handle_startendtag(self, tag, attrs):
        self._start(tag, attrs)

    def handle_endtag(self, tag):
        for depth in range(len(self.open) - 1, -1, -1):  # as html.parser's tree builder: close up to its match
            if self.open[depth][0] == tag:
                self.notebooks -= sum(notebook for _, notebook in self.open[depth:])
                del self.open[depth:]
                return

    def _start(self, tag, attrs):
        names = {name for name, _ in attrs}
        attrs = list(dict(attrs).items())  # a repeated attribute: its last value, as BeautifulSoup keeps it
        if tag == "img" and "alt" not in names:
            attrs = [*attrs, ("alt", NO_ALT)]
        elif (tag == "div" and self.notebooks and any(c in _classes(attrs) for c in FOCUSABLE)
              and ("tabindex", "0") not in attrs):  # nbconvert sets it to 0, whatever it was
            attrs = [(name, value) for name, value in attrs if name != "tabindex"] + [("tabindex", "0")]
        else:
            return
        self.changed.append((*self.getpos(), len(self.get_starttag_text()), _start_tag(tag, attrs)))


def _start_tag(tag: str, attrs) -> str:
    """A start tag written out from its parsed attributes, each value quoted and escaped, as BeautifulSoup
    writes every tag of the page: a tag that changes is written from the parse, as nbconvert's would be."""
    return f"<{tag}" + "".join(f' {name}="{escape(value or "")}"' for name, value in attrs) + ">"


def _classes(attrs) -> list:
    return " ".join(value or "" for name, value in attrs if name == "class").split()


def accessible(html: str) -> str:
    """The page with an alt text on every image that has none, and tabindex="0" on each cell's input and output
    inside a .jp-Notebook, as nbconvert's HTMLExporter adds them; every other byte as it was."""
    scan = _Attributes()
    scan.feed(html)
    scan.close()
    if not scan.changed:
        return html
    starts = [0]  # where each line begins: the tokenizer reports (line, column)
    position = html.find("\n")
    while position != -1:
        starts.append(position + 1)
        position = html.find("\n", position + 1)
    pieces, done = [], 0
    for line, column, length, tag in scan.changed:  # each changed tag in place of the one there
        start = starts[line - 1] + column
        pieces += [html[done:start], tag]
        done = start + length
    pieces.append(html[done:])
    return "".join(pieces)


class Recent:
    """A function's results for the arguments seen most recently, within `budget` characters of arguments and
    results together: what a grading process keeps stays small whatever a class hands in (a notebook of
    megabyte cells keeps none of them: one result takes at most an eighth of the budget)."""

    def __init__(self, function, budget: int):
        self.function, self.budget = function, budget
        self.kept = OrderedDict()  # arguments -> (result, its cost in characters), the least recent first
        self.size = self.hits = 0

    def __call__(self, *args) -> str:
        found = self.kept.get(args)
        if found is not None:
            self.kept.move_to_end(args)
            self.hits += 1
            return found[0]
        result = self.function(*args)
        cost = ENTRY + len(result) + sum(len(a) for a in args if isinstance(a, str))
        if cost <= self.budget // 8:
            self.kept[args] = (result, cost)
            self.size += cost
            while self.size > self.budget:
                self.size -= self.kept.popitem(last=False)[1][1]
        return result

    def clear(self):
        self.kept.clear()
        self.size = self.hits = 0


def _highlight(lexer: str, options: tuple, language, magics: tuple, source: str) -> str:
    """magics: () for a cell without a magics_language, else (its magics_language,)."""
    metadata = {"magics_language": magics[0]} if magics else None
    return Highlight2HTML(pygments_lexer=lexer, extra_formatter_options=dict(options))(source, language, metadata)


_cleaned = Recent(clean_html, KEPT)
_highlighted = Recent(_highlight, KEPT)


@pass_context
def markdown_filter(context, source) -> str:
    """The template's filter for a markdown cell: page_markdown with the cell's attachments, kept for a cell
    seen before."""
    cell = context.get("cell", {})
    attachments = cell.get("attachments") if isinstance(cell, dict) else None
    return _markdown(str(source), json.dumps(attachments, sort_keys=True) if attachments else "")


def _page_markdown(source: str, attachments: str) -> str:
    return page_markdown(source, json.loads(attachments) if attachments else {})


_markdown = Recent(_page_markdown, KEPT)


def comment_html(comment) -> str:
    """A grader's comment, markdown rendered and cleaned (sanitize.clean): it is shown on the student's page."""
    return clean(page_html(str(comment), {}))


def configure_pages(c):
    """The pages' templates and filters, in the traitlets Config `c`. The feedback page: FeedbackPage's own
    settings. formgrader's page: its exporter is nbconvert's HTMLExporter (nbgrader names the template folder
    `formgrade`; this names the file, ours, which extends nbgrader's); as FeedbackPage is an HTMLExporter too,
    its own settings replace these."""
    c.HTMLExporter.template_file = "lesson20_formgrade.html.j2"
    c.HTMLExporter.extra_template_paths = [str(TEMPLATES)]
    c.HTMLExporter.filters = {"markdown2html": f"{FILTERS}.markdown_filter",
                              "model_answer": "autograder.instructor.model_answers.model_answer"}
    c.FeedbackPage.template_file = "lesson20_feedback.html.j2"
    c.FeedbackPage.extra_template_paths = [str(TEMPLATES)]
    c.FeedbackPage.filters = {"page_markdown": f"{FILTERS}.markdown_filter", "comment_html": f"{FILTERS}.comment_html"}
    c.FeedbackPage.exclude_input_prompt = True
    c.FeedbackPage.exclude_output_prompt = True


def _clean_html(element) -> str:
    """nbconvert's clean_html (bleach), kept for text seen before."""
    return _cleaned(element.decode() if isinstance(element, bytes) else str(element))


class _KeptHighlight(Highlight2HTML):
    """nbconvert's highlight_code filter, kept for a source seen before with the same lexer and options."""

    def __call__(self, source, language=None, metadata=None):
        # all of the metadata pygments reads (present, even as null, is not absent)
        magics = (metadata["magics_language"],) if metadata and "magics_language" in metadata else ()
        options = tuple(sorted(self.extra_formatter_options.items()))
        try:
            hash((self.pygments_lexer, options, language, magics, source))
        except TypeError:  # an option or value that cannot be part of a key: not kept
            return super().__call__(source, language, metadata)
        return _highlighted(self.pygments_lexer, options, language, magics, source)


class FeedbackPage(HTMLExporter):
    """The exporter GenerateFeedback uses for the feedback page (pipeline.configure)."""

    compiled = MemcachedBytecodeCache(_Kept(), prefix="lesson20/")

    def _create_environment(self):
        environment = super()._create_environment()
        environment.bytecode_cache = self.compiled
        return environment

    def from_notebook_node(self, nb, resources=None, **kw):
        """HTMLExporter.from_notebook_node (nbconvert 7), with `accessible` in place of its BeautifulSoup pass."""
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get("highlight_code", _KeptHighlight(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        filter_data_type = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self, resources=resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", filter_data_type)
        self.register_filter("clean_html", self.filters.get("clean_html", _clean_html))
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return accessible(html), resources
