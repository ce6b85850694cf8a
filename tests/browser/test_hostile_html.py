"""Script in a submission never runs in the pages people read: formgrader's manual-grading page (the
instructor's session) and the feedback, for a class graded by `python -m autograder grade`.

One student hands in every payload of tests/submissions/hostile_html.py at once, plus attachments and a
code cell whose stored output is a script. Each payload, if it ran, would set `window.__pwned`, change
the title and open a dialog; the pages are opened in Chromium and all three are looked for.
"""
import base64
import json
import re

import nbformat
import pytest
from playwright.sync_api import expect

from autograder.items import ASSIGNMENT, MANUAL_ITEMS
from autograder.text import LIMITS
from tests.browser.test_instructor import open_formgrader, run_autograder
from tests.submissions import Outputs, apply_edit, make_submission
from tests.submissions.hostile_html import FORGED_NOTE, HOSTILE_HTML, payload

pytestmark = pytest.mark.browser
STUDENT = "mallory"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
SHOWN_TEXT = ["fp16 runs out of range.", "A master copy keeps small updates.", "Accumulate four micro-batches"]
# what still ran, read after the page has settled: the flag, the title, and any URL that could run script
STATE = """async () => {
    await new Promise(resolve => setTimeout(resolve, 1500));  // let failed images and toggles fire their events
    const urls = [...document.querySelectorAll('[href], [src], [action], [formaction], [data]')]
        .flatMap(e => ['href', 'src', 'action', 'formaction', 'data'].map(a => e.getAttribute(a)))
        .filter(u => u && /^\\s*(javascript|vbscript|data:(?!image\\/(png|jpeg|gif|webp);))/i.test(u));
    return {pwned: window.__pwned === undefined ? null : String(window.__pwned), title: document.title,
            urls: urls.map(u => u.slice(0, 80))};
}"""


def hostile_notebook():
    """Every hostile_html variant's edits on one reference notebook, and what they cannot express."""
    nb = make_submission(HOSTILE_HTML[0].name)
    for variant in HOSTILE_HTML[1:]:
        for edit in variant.edits:
            apply_edit(nb, edit)
    apply_edit(nb, Outputs("cell-26", ({"output_type": "display_data", "metadata": {}, "data": {
        "text/html": f"<script>{payload(8)}</script>", "text/plain": "x"}},)))
    pictures = nbformat.v4.new_markdown_cell("![plot](attachment:p.png) ![svg](attachment:e.svg)")
    pictures.attachments = {"p.png": {"image/png": PNG}, "e.svg": {"image/svg+xml": base64.b64encode(
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


# session-scoped: pytest runs this module's browser tests apart from its others, and a module fixture would grade twice
@pytest.fixture(scope="session")
def graded_hostile(tmp_path_factory, browser_type_launch_args):
    base = tmp_path_factory.mktemp("hostile-class")
    submitted, out = base / "submitted", base / "out"
    path = submitted / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(hostile_notebook(), str(path))
    run_autograder("grade", str(submitted), "--out", str(out), "--jobs", "1", "--quiet")
    return out


def watch_dialogs(page) -> list:
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    return dialogs


def assert_nothing_ran(page, dialogs):
    state = page.evaluate(STATE)
    assert state["pwned"] is None, f"a payload ran: window.__pwned = {state['pwned']}"
    assert not state["title"].startswith("pwned"), f"a payload set the title: {state['title']!r}"
    assert state["urls"] == [], f"links or sources that run script: {state['urls']}"
    assert dialogs == [], f"a payload opened dialogs: {dialogs}"


def test_feedback_runs_no_payload(page, graded_hostile):
    dialogs = watch_dialogs(page)
    feedback = graded_hostile / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    page.goto(feedback.as_uri())
    for text in SHOWN_TEXT:  # the written answers are shown, only inert
        expect(page.get_by_text(text, exact=False).first).to_be_visible()
    assert_nothing_ran(page, dialogs)


def test_formgrader_runs_no_payload(jupyter, page, graded_hostile):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded_hostile / 'gradebook.db'}", course_id=ASSIGNMENT) as gb:
        submission_id = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, STUDENT).id
    server = jupyter("lab", root_dir=graded_hostile, cwd=graded_hostile)
    open_formgrader(page, server)  # the instructor's session, as they would start it
    dialogs = watch_dialogs(page)
    page.goto(server.url(f"formgrader/submissions/{submission_id}"))
    for item in MANUAL_ITEMS:  # the manual-grading page, with its score fields, not an error page
        expect(page.locator(f"input.score#{item.id}")).to_have_count(1, timeout=30_000)
    for text in SHOWN_TEXT:
        expect(page.get_by_text(text, exact=False).first).to_be_visible()
    assert_nothing_ran(page, dialogs)


def test_forged_notes_reach_no_report_and_the_reason_is_bounded(graded_hostile):
    student = json.loads((graded_hostile / "grades.json").read_text())["students"][STUDENT]
    assert student["status"] == "graded", student["reason"]
    assert FORGED_NOTE not in student["reason"] and len(student["reason"]) <= LIMITS["reason"]
    assert len(json.dumps(student)) < 20_000
    feedback = (graded_hostile / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html").read_text()
    assert FORGED_NOTE not in feedback
    autograded = (graded_hostile / "autograded" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text()
    assert FORGED_NOTE not in autograded  # nor in any check's report, which the test cells' outputs hold
    assert not re.search(r"<img[^>]*onerror", feedback, re.IGNORECASE)


# every element as the browser built it: its tag and attributes (a class as its list of names, as CSS reads it:
# nbconvert's parse and write-out drops the template's stray spaces there), and the text the page shows
SHOWN = """() => ({text: document.body.innerText, images: document.images.length,
    elements: [...document.querySelectorAll('*')].map(e => [e.tagName, ...[...e.attributes].map(
        a => a.name + '=' + (a.name === 'class' ? [...e.classList].join(' ') : a.value)).sort()].join(' '))})"""


def nbconverts_own_page(out, folder):
    """The student's feedback page as nbgrader's GenerateFeedback makes it with nbconvert's own HTMLExporter."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback

    from autograder.instructor.course import nbgrader_config
    from autograder.instructor.pipeline import run_converter
    from autograder.limits import Limits
    cfg = nbgrader_config(out, f"sqlite:///{out / 'gradebook.db'}", Limits())
    cfg.CourseDirectory.feedback_directory = str(folder)
    cfg.GenerateFeedback.exporter_class = HTMLExporter
    assert run_converter(cfg, STUDENT, GenerateFeedback) == ""
    return folder / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"


def test_the_feedback_page_shows_what_nbconverts_own_shows(page, graded_hostile, tmp_path):
    ours = graded_hostile / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    theirs = nbconverts_own_page(graded_hostile, tmp_path / "nbconvert")
    assert ours.read_bytes() != theirs.read_bytes()  # written by the template, not again from a parsed tree
    shown = []
    for path in (ours, theirs):
        page.goto(path.as_uri())
        shown.append(page.evaluate(SHOWN))
    assert shown[0]["images"] > 0 and SHOWN_TEXT[0] in shown[0]["text"]
    assert shown[0]["text"] == shown[1]["text"]
    assert shown[0]["elements"] == shown[1]["elements"]
