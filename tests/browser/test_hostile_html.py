"""Script in a submission never runs in the pages people read: formgrader's manual-grading page (the
instructor's session) and the feedback, for a class graded by `python -m autograder grade`.

One student of the shared class (tests/graded_class.py), mallory, hands in every payload of
tests/submissions/hostile_html.py at once, plus attachments and a code cell whose stored output is a script. Each payload, if it ran, would set `window.__pwned`, change
the title and open a dialog; the pages are opened in Chromium and all three are looked for.
"""
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from autograder.items import ASSIGNMENT, MANUAL_ITEMS
from autograder.text import LIMITS
from tests.browser.test_instructor import open_formgrader
from tests.submissions.hostile_html import FORGED_NOTE

pytestmark = pytest.mark.browser
STUDENT = "mallory"
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


@pytest.fixture
def graded_hostile(browser_type_launch_args, graded_class) -> Path:
    """OUT of the shared class (tests/graded_class.py), in which mallory handed in the hostile notebook."""
    return graded_class["out"]


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


def test_formgrader_runs_no_payload(jupyter, page, browser_type_launch_args, graded_copy):
    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded_copy / 'gradebook.db'}", course_id=ASSIGNMENT) as gb:
        submission_id = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, STUDENT).id
    server = jupyter("lab", root_dir=graded_copy, cwd=graded_copy)
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
    """The student's feedback page as nbgrader's GenerateFeedback makes it with nbconvert's own HTMLExporter, from
    the same template, steps and filters."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback

    from autograder.instructor.course import nbgrader_config
    from autograder.instructor.pipeline import run_converter
    from autograder.limits import Limits

    class NbconvertsOwn(HTMLExporter):  # a name of its own, to take FeedbackPage's settings and only those
        pass

    cfg = nbgrader_config(out, f"sqlite:///{out / 'gradebook.db'}", Limits())
    cfg.CourseDirectory.feedback_directory = str(folder)
    cfg.GenerateFeedback.exporter_class = NbconvertsOwn
    cfg.NbconvertsOwn = cfg.FeedbackPage
    assert run_converter(cfg, STUDENT, GenerateFeedback) == ""
    return folder / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"


def test_the_feedback_page_shows_what_nbconverts_own_shows(page, browser_type_launch_args, graded_copy, tmp_path):
    ours = graded_copy / "feedback" / STUDENT / ASSIGNMENT / f"{ASSIGNMENT}.html"
    theirs = nbconverts_own_page(graded_copy, tmp_path / "nbconvert")
    assert ours.read_bytes() != theirs.read_bytes()  # written by the template, not again from a parsed tree
    shown = []
    for path in (ours, theirs):
        page.goto(path.as_uri())
        shown.append(page.evaluate(SHOWN))
    assert shown[0]["images"] > 0 and SHOWN_TEXT[0] in shown[0]["text"]
    assert shown[0]["text"] == shown[1]["text"]
    assert shown[0]["elements"] == shown[1]["elements"]
