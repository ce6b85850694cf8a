"""SanitizeHtml: an nbgrader Autograde sanitize step that makes every text a student wrote safe in an HTML page.

nbgrader's formgrader and feedback pages put a markdown cell's HTML into the page as it is (nbconvert's
own cleaning does not reach those blocks), so a `<script>` or an `onerror` in a written answer would run
in the instructor's formgrader, with the instructor's session, and in the student's feedback. This step
runs last before the autograded notebook is written (after nbgrader's OverwriteCells, which may turn a written
answer handed in as a code cell back into markdown), and both pages are made from that notebook:

* markdown cells: rendered as those pages render them (nbconvert's markdown filter, then its
  strip_files_prefix), and cleaned by nh3 (the Rust sanitizer ammonia): no scripts, no event or style
  attributes, links only to http(s) and mailto, images only from those or from the cell's own raster
  attachments. A cell that already renders clean keeps its source (an unanswered cell stays unanswered
  for nbgrader); another gets the cleaned HTML as its source, if that renders clean in turn, else its
  text, every mark a character reference. The instructor's text, as released, is left as it is.
* rendering is bounded: mistune takes quadratic time on some text ("[" * n: 0.4 s at 5,000 characters,
  460 s at 200,000), so a cell longer than MAX_RENDERED, and every cell once a notebook has used up
  RENDER_BUDGET, is shown as text without being rendered.
* raw cells: their text, escaped.
* metadata: a cell keeps nbgrader's (known keys, grade ids as nbgrader writes them) and the grader's own
  copy mark; tags, widget state and the rest go. The notebook keeps its kernel's and the grader's repairs.
* attachments: raster images only, as valid base64.

The pages themselves render markdown with `page_markdown`: the same renderer, except that each formula is drawn as
MathML (latex2mathml), which the browser draws without a script, where JupyterLab draws it with MathJax; the
formula's MathML is cleaned to MathML's presentation elements (`math_html`), so that nothing in a formula
becomes a link, a script or a style. The check above covers the rest of the page, which renders as it did.
"""
import base64
import binascii
import html

import latex2mathml.converter
import nh3
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath
from nbconvert.filters.strings import strip_files_prefix
import nbformat
from nbformat import from_dict
from nbformat.v4.nbbase import random_cell_id
from nbgrader.preprocessors import NbGraderPreprocessor
from pygments.token import STANDARD_TYPES

from ..cells import COPY_KEY
from ..structure import CELL_ID, GRADE_ID, NAME
from ..items import ASSIGNMENT, ROOT

RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp")
# classes only from this list, so nothing can pass for formgrader's own buttons and fields: the heading
# anchors and code highlighting nbconvert writes
CLASSES = {"a": {"anchor-link"}, "div": {"highlight"}, "span": set(STANDARD_TYPES.values()) - {""}}
URL_SCHEMES = {"http", "https", "mailto", "data"}  # data: only as an <img>'s raster image (_raster_data_only)
NBGRADER_KEYS = {"grade", "solution", "locked", "task", "grade_id", "points", "schema_version", "checksum",
                 "cell_type"}
NOTEBOOK_KEYS = ("kernelspec", "language_info")
MAX_RENDERED = 5_000     # characters of one markdown cell that may be rendered (twice at most)
RENDER_BUDGET = 50_000   # characters of markdown rendered in one notebook, the instructor's text aside
MAX_SHOWN = 20_000       # characters of a cell shown as text; the submitted notebook keeps the whole of it
# MathML's presentation elements and attributes, as latex2mathml writes them: no href, no style, no event
MATHML_TAGS = {"math", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "msup", "msub", "msubsup", "mfrac",
               "msqrt", "mroot", "mover", "munder", "munderover", "mstyle", "mpadded", "mphantom", "merror",
               "mtable", "mtr", "mtd", "menclose", "semantics", "annotation"}
MATHML_ATTRIBUTES = {"math": {"xmlns", "display"}, "*": {
    "mathvariant", "mathcolor", "mathbackground", "displaystyle", "scriptlevel", "stretchy", "fence", "separator",
    "symmetric", "largeop", "movablelimits", "accent", "accentunder", "form", "lspace", "rspace", "minsize",
    "maxsize", "linethickness", "width", "height", "depth", "columnalign", "rowalign", "columnspacing",
    "rowspacing", "columnlines", "rowlines", "frame", "notation", "encoding"}}


class SanitizeHtml(NbGraderPreprocessor):

    def preprocess(self, nb, resources):
        released = released_markdown(resources.get("nbgrader", {}).get("notebook"))
        budget = Budget()
        kept = {k: v for k, v in nb.metadata.items() if k in NOTEBOOK_KEYS}
        if "language_info" in kept:
            kept["language_info"] = _language_info(kept["language_info"])
        nb.metadata = from_dict(kept)
        for index, cell in enumerate(nb.cells):
            if not CELL_ID.fullmatch(str(cell.get("id", "x"))):
                cell["id"] = random_cell_id()
            cell.metadata = from_dict(_cell_metadata(cell.get("metadata", {})))
            attachments = raster_attachments(cell.pop("attachments", None))
            if attachments and cell.get("cell_type") in ("markdown", "raw"):
                cell.attachments = from_dict(attachments)
            source = _text(cell.get("source", ""))
            if cell.get("cell_type") == "markdown" and source not in released:
                cell.source = safe_markdown(source, cell.get("attachments", {}), budget)
            elif cell.get("cell_type") == "raw":
                cell.source = html.escape(source)
            if cell.get("source") != source:
                self.log.info("Sanitized cell %d (%s) for the HTML pages", index, cell.get("cell_type"))
        return nb, resources


def page_html(source: str, attachments: dict) -> str:
    """A markdown cell's HTML as nbgrader's formgrader and feedback templates make it."""
    renderer = IPythonRenderer(escape=False, attachments=attachments)
    return strip_files_prefix(MarkdownWithMath(renderer=renderer).render(source))


def math_html(latex: str, display: bool):
    """A formula as MathML, cleaned to MathML's presentation elements; None where latex2mathml cannot read it."""
    try:
        mathml = latex2mathml.converter.convert(latex, display="block" if display else "inline")
    except Exception:  # latex2mathml's own errors, and RecursionError for a formula nested thousands deep
        return None
    return nh3.clean(mathml, tags=MATHML_TAGS, attributes=MATHML_ATTRIBUTES, url_schemes=set(),
                     strip_comments=True)


class MathRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, with each formula as MathML where latex2mathml reads it (else as
    nbconvert writes it, its text between dollars)."""

    def inline_math(self, body: str) -> str:
        return math_html(body, False) or super().inline_math(body)

    def block_math(self, body: str) -> str:
        return math_html(body, True) or super().block_math(body)

    def latex_environment(self, name: str, body: str) -> str:
        return math_html(f"\\begin{{{name}}}{body}\\end{{{name}}}", True) or super().latex_environment(name, body)


def page_markdown(source: str, attachments: dict) -> str:
    """A markdown cell's HTML on the feedback page and in formgrader: page_html, formulas drawn as MathML."""
    renderer = MathRenderer(escape=False, attachments=attachments)
    return strip_files_prefix(MarkdownWithMath(renderer=renderer).render(source))


def clean(fragment: str) -> str:
    """`fragment` with only what nh3 allows (its default tags and attributes) and absolute safe URLs."""
    return nh3.clean(fragment, url_schemes=URL_SCHEMES, url_relative="deny", allowed_classes=CLASSES,
                     attribute_filter=_raster_data_only)


def _raster_data_only(tag: str, attribute: str, value: str):
    if not value.strip().lower().startswith("data:"):
        return value
    raster = tuple(f"data:{mime};base64," for mime in RASTER)
    return value if (tag, attribute) == ("img", "src") and value.startswith(raster) else None


def renders_clean(source: str, attachments: dict) -> bool:
    """Whether this markdown renders, in nbgrader's pages, to HTML that nh3 would leave as it is."""
    try:
        page = page_html(source, attachments)
    except Exception:  # e.g. a missing attachment: nbconvert would fail on the page too
        return False
    return clean(page) == page


class Budget:
    """Characters of markdown a notebook may still have rendered."""

    def __init__(self, left: int = RENDER_BUDGET):
        self.left = left

    def spend(self, characters: int) -> bool:
        if characters > min(self.left, MAX_RENDERED):
            return False
        self.left -= characters
        return True


def safe_markdown(source: str, attachments: dict, budget: Budget = None) -> str:
    """The first of these that renders clean: the source itself, its cleaned HTML, its text.

    Each render is paid for with the source's length: the cleaned HTML has the same text (and tags,
    and the attachments' base64, which parse in linear time)."""
    budget = budget or Budget()
    page = _page(source, attachments, budget, len(source))
    if page is not None and clean(page) == page:
        return source
    if page is not None:
        cleaned = clean(page)
        again = _page(cleaned, attachments, budget, len(source))
        if again is not None and clean(again) == again:
            return cleaned
    return as_text(source)


def _page(source: str, attachments: dict, budget: Budget, cost: int):
    """page_html, or None when the budget does not cover it or nbconvert cannot render it."""
    if not budget.spend(cost):
        return None
    try:
        return page_html(source, attachments)
    except Exception:  # e.g. a missing attachment: nbconvert would fail on the page too
        return None


def as_text(source: str) -> str:
    """The cell's text in a <pre>, every character but letters, digits and spaces as a character reference:
    markdown finds no syntax in it (and parses it in linear time), HTML no markup."""
    more = len(source) - MAX_SHOWN
    text = "".join(c if c.isalnum() or c in " \n" else f"&#{ord(c)};" for c in source[:MAX_SHOWN])
    note = f"\n({more} more characters are in the submitted notebook.)" if more > 0 else ""
    return f"<pre>{text}{note}</pre>"


def released_markdown(notebook) -> set:
    """The markdown sources of the notebook as released to students: the instructor's text."""
    path = ROOT / "lessons" / ASSIGNMENT / f"{notebook}.ipynb"
    try:
        released = nbformat.read(str(path), as_version=4) if notebook else None
    except (OSError, ValueError):
        released = None
    return {_text(c.source) for c in released.cells if c.cell_type == "markdown"} if released else set()


def raster_attachments(attachments) -> dict:
    """{name: {mime: base64}} keeping only raster images whose data is valid base64 (re-encoded)."""
    kept = {}
    for name, bundle in (attachments if isinstance(attachments, dict) else {}).items():
        if not isinstance(name, str) or not isinstance(bundle, dict):
            continue
        images = {}
        for mime in RASTER:
            data = bundle.get(mime)
            if not data or not isinstance(data, (str, list)):
                continue
            try:
                images[mime] = base64.b64encode(base64.b64decode(_text(data), validate=True)).decode()
            except (binascii.Error, ValueError, TypeError):
                continue
        if images:
            kept[name] = images
    return kept


def _cell_metadata(metadata) -> dict:
    kept = {}
    nbgrader = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    if isinstance(nbgrader, dict) and GRADE_ID.fullmatch(str(nbgrader.get("grade_id", "x"))):
        kept["nbgrader"] = {k: v for k, v in nbgrader.items() if k in NBGRADER_KEYS}
    copy = metadata.get(COPY_KEY) if isinstance(metadata, dict) else None
    if isinstance(copy, dict) and isinstance(copy.get("copy_of"), str) and GRADE_ID.fullmatch(copy["copy_of"]):
        kept[COPY_KEY] = {"copy_of": copy["copy_of"]}
    return kept


def _language_info(info) -> dict:
    if not isinstance(info, dict):
        return {}
    return {k: v for k, v in info.items() if k in ("name", "pygments_lexer", "version", "file_extension")
            and isinstance(v, str) and NAME.fullmatch(v)}


def _text(source) -> str:
    return "".join(source) if isinstance(source, list) else str(source or "")
