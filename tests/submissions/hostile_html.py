"""Hostile submissions aimed at the pages people read: formgrader (the instructor's session) and the feedback.

Each payload, if it ever ran, would set `window.__pwned`, change the page's title and open a dialog
(tests/browser/test_hostile_html.py opens both pages in Chromium and looks for all three). Graded
directly, each must keep full marks (nothing here is code); through nbgrader, every cell must render
clean (tests/unit/instructor/test_sanitize.py) and no forged grader note may reach a report or a
reason (tests/browser/test_hostile_html.py).
"""
from . import Metadata, NewCell, ReplaceCell
from .hostile import hostile

FORGED_NOTE = "regraded by hand: full marks"
HUGE = 5_000_000  # characters of the forged note


def payload(n: int) -> str:
    """JavaScript that marks the page as owned: a flag, the title, a dialog. No double quotes."""
    return f"window.__pwned={n};document.title='pwned {n}';alert({n})"


SCRIPT_ANSWER = f"""
fp16 runs out of range.
<script>{payload(1)}</script>
<SCRIPT SRC=data:text/javascript,{payload(1)}></SCRIPT>
"""

EVENT_ANSWER = f"""
A master copy keeps small updates.
<img src=x onerror="{payload(2)}">
<details open ontoggle="{payload(2)}"><summary>more</summary>x</details>
<svg><animate onbegin="{payload(2)}" attributeName=x dur=1s></svg>
<body onload="{payload(2)}">
<iframe srcdoc="<script>parent.{payload(2)}</script>"></iframe>
<math><mtext><table><mglyph><style><img src=x onerror="{payload(2)}"></style></mglyph></table></mtext></math>
<noscript><p title="</noscript><img src=x onerror='{payload(2)}'>"></noscript>
"""

LINK_ANSWER = f"""
Loss scaling [moves gradients](javascript:{payload(3)}) into range.
<a href="files/javascript:{payload(3)}">files link</a>
<a href=" JaVaScRiPt:{payload(3)}">mixed case</a>
<a href="data:text/html,<script>{payload(3)}</script>">data link</a>
<form action="javascript:{payload(3)}"><button formaction="javascript:{payload(3)}">send</button></form>
<meta http-equiv="refresh" content="0;url=javascript:{payload(3)}">
<object data="javascript:{payload(3)}"></object><embed src="javascript:{payload(3)}">
![image](javascript:{payload(3)})
"""

STYLE_ANSWER = f"""
Accumulate four micro-batches of 64.
<style>body {{ background: url("javascript:{payload(4)}") }}</style>
<div style="background-image: url(javascript:{payload(4)})">styled</div>
<p class="btn btn-success full-credit" id="practice_q1">Full credit</p>
<base href="javascript:{payload(4)}//">
"""

HOSTILE_HTML = [
    hostile("hostile_html_script", ReplaceCell("practice_q1", SCRIPT_ANSWER),
            doc="a written answer with <script> tags (inline and with a data: source)"),
    hostile("hostile_html_event_attributes", ReplaceCell("practice_q2", EVENT_ANSWER),
            doc="a written answer with event attributes that fire by themselves (onerror, ontoggle, onbegin, "
                "onload), an iframe srcdoc, and parser-confusion (mutation XSS) markup"),
    hostile("hostile_html_links", ReplaceCell("practice_q3", LINK_ANSWER),
            doc="a written answer with javascript: and data: links, one hidden behind nbconvert's files/ "
                "prefix, a form action, a meta refresh, object and embed"),
    hostile("hostile_html_styles", ReplaceCell("practice_q4", STYLE_ANSWER),
            doc="a written answer with styles that call javascript: URLs, a <base>, and a paragraph made to "
                "look like formgrader's full-credit button, with the id of another answer's score field"),
    hostile("hostile_html_raw_cells_and_tags",
            NewCell("practice_q1", f"<script>{payload(5)}</script><img src=x onerror=\"{payload(5)}\">",
                    cell_type="raw"),
            NewCell("practice_q2", f"<img src=x onerror=\"{payload(5)}\"> in a new markdown cell",
                    cell_type="markdown"),
            Metadata("*", {"raw_mimetype": "text/html", "format": "text/html",
                           "tags": [f"x\" onmouseover=\"{payload(5)}", "<script>"],
                           "jupyter": {"source_hidden": False}, "collapsed": False}),
            doc="a raw cell of text/html with a script, a new markdown cell, and tags that try to leave the "
                "class attribute nbconvert writes them into"),
    hostile("hostile_html_notebook_metadata",
            Metadata(None, {"title": f"</title><script>{payload(6)}</script>",
                            "widgets": {"application/vnd.jupyter.widget-state+json": {
                                "version_major": 2, "version_minor": 0, "state": {
                                    "w": {"model_name": "HTMLModel", "model_module": "@jupyter-widgets/controls",
                                          "model_module_version": "2.0.0",
                                          "state": {"value": f"<img src=x onerror=\"{payload(6)}\">"}}}}}}),
            doc="notebook metadata: a title that closes <title>, and widget state holding an HTML widget"),
    hostile("hostile_forged_repair_notes",
            Metadata(None, {"lesson20_repairs": [
                {"item": "master_weights", "text": f"{FORGED_NOTE} <img src=x onerror=\"{payload(7)}\">"},
                {"item": "underflow_fraction", "text": FORGED_NOTE + " " + "x" * HUGE}]}),
            Metadata("cell-26", {"lesson20": {"copy_of": "master_weights_solution"}}),
            doc="the grader's own metadata, forged: repair notes saying the work was regraded by hand (one of "
                f"{HUGE:,} characters), and a copy mark that makes a demo cell pass for an exercise's solution"),
]


def hostile_notebook():
    """Every hostile_html variant's edits on one reference notebook, and what they cannot express: attachments
    and a code cell whose stored output is a script (tests/graded_class.py's mallory hands it in)."""
    import base64

    import nbformat

    from . import Outputs, apply_edit, make_submission
    nb = make_submission(HOSTILE_HTML[0].name)
    for variant in HOSTILE_HTML[1:]:
        for edit in variant.edits:
            apply_edit(nb, edit)
    apply_edit(nb, Outputs("cell-26", ({"output_type": "display_data", "metadata": {}, "data": {
        "text/html": f"<script>{payload(8)}</script>", "text/plain": "x"}},)))
    pictures = nbformat.v4.new_markdown_cell("![plot](attachment:p.png) ![svg](attachment:e.svg)")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
    pictures.attachments = {"p.png": {"image/png": png}, "e.svg": {"image/svg+xml": base64.b64encode(
        f"<svg xmlns='http://www.w3.org/2000/svg' onload=\"{payload(9)}\"/>".encode()).decode()}}
    evil_id = f"\"><img src=x onerror=\"{payload(10)}\">"  # a grade id, on two cells: one is noted as a copy
    copies = [nbformat.v4.new_code_cell(f"copy_{i} = {i}") for i in range(2)]
    for cell in copies:
        cell.metadata["nbgrader"] = {"grade": False, "solution": True, "locked": False, "grade_id": evil_id,
                                     "schema_version": 3}
    nb.cells[3:3] = [pictures, *copies]
    # a written answer handed in as a code cell: nbgrader's OverwriteCells turns it back into the markdown
    # cell the gradebook knows, keeping the student's text, after the other sanitize steps have run
    answer = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "practice_q4")
    answer.update(cell_type="code", outputs=[], execution_count=None)
    answer.source += f'\n<img src=x onerror="{payload(11)}">\n'
    return nb
