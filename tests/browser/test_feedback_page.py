"""The feedback page as a student opens it: OUT/feedback/<student>/lesson20/lesson20.html of the shared class
(tests/graded_class.py), in Chromium, from the file itself. What the student sees first is their score per
item and what to fix; what is on the page is what they submitted, nothing cut off at the right edge; the
lesson's own text is folded away."""
import nbformat
import pytest
from playwright.sync_api import expect

from autograder.instructor.page_summary import summarize
from autograder.items import ASSIGNMENT, AUTO_ITEMS, ITEMS, MANUAL_ITEMS, SOLUTION_SUFFIX
from tests.browser.conftest import ARTIFACTS
from tests.graded_class import ANSWERS, BUGGY
from tests.unit.instructor.test_model_answers import instructor_answers, shown_sentences

pytestmark = pytest.mark.browser
PARTIAL = BUGGY[0]  # the class's typical student: some items right, one central mistake
# what overflows its box or the page, and how tall the page is, as the browser laid it out
LAYOUT = """() => {
    const wide = [...document.querySelectorAll('.lesson20-report, table.lesson20-summary, .lesson20-work')]
        .filter(e => e.getBoundingClientRect().width > 0)
        .filter(e => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > window.innerWidth)
        .map(e => e.className + ': ' + e.scrollWidth + ' > ' + e.clientWidth);
    return {wide, pageWidth: document.documentElement.scrollWidth, viewport: window.innerWidth,
            height: document.documentElement.scrollHeight,
            reports: document.querySelectorAll('.lesson20-report').length};
}"""


def feedback(out, student):
    return out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html"


def submitted(graded_class, student) -> nbformat.NotebookNode:
    return nbformat.read(str(graded_class["submitted"] / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"), as_version=4)


def test_the_page_opens_on_the_score_per_item_and_what_to_fix(page, browser_type_launch_args, graded_class):
    row = graded_class["grades"]["students"][PARTIAL]
    page.goto(feedback(graded_class["out"], PARTIAL).as_uri())
    points = sum(item.points for item in ITEMS)  # the written answers count, graded or not yet
    expect(page.locator("main > h1")).to_have_text(f"{ASSIGNMENT}: {row['total']:g} of {points:g} points")
    rows = page.locator("table.lesson20-summary tbody tr")
    expect(rows).to_have_count(len(ITEMS))
    for item in AUTO_ITEMS:  # each item named after its exercise, with the score grades.json has
        line = rows.filter(has=page.get_by_role("link", name=item.title, exact=True))
        expect(line.locator("td.score")).to_have_text(f"{row['items'][item.id]['score']:g} / {item.points:g}")
    lost = [i for i in AUTO_ITEMS if row["items"][i.id]["score"] < i.points]
    assert lost, f"{PARTIAL} lost no points: the test would show nothing"
    fix = rows.filter(has=page.get_by_role("link", name=lost[0].title, exact=True)).locator("td a")
    expect(fix).to_be_visible()
    assert fix.bounding_box()["y"] < 1000, "the first thing to fix is not on the first screen"
    message = fix.inner_text()
    fix.click()  # to the item's report, which says the same
    report = page.locator(f"[id='{lost[0].id}'] .lesson20-report")
    expect(report).to_be_in_viewport()
    expect(report).to_contain_text(message[:80])
    layout = page.evaluate(LAYOUT)
    assert layout["wide"] == [] and layout["pageWidth"] <= layout["viewport"], layout
    assert layout["reports"] == len(AUTO_ITEMS)
    assert page.get_by_text("Out[").count() == 0
    page.goto(feedback(graded_class["out"], PARTIAL).as_uri())
    page.screenshot(path=str(ARTIFACTS / "feedback_page_top.png"))
    page.screenshot(path=str(ARTIFACTS / "feedback_page_full.png"), full_page=True)
    print(f"{PARTIAL}'s feedback page: {layout['height']} px tall at {layout['viewport']} px wide")


def test_the_page_shows_what_the_student_submitted_and_folds_the_lesson(page, browser_type_launch_args,
                                                                       graded_class):
    """Every solution cell's code and every written answer as the student handed it in, in view; each cell of
    the lesson's own is folded away, and opens."""
    out = graded_class["out"]
    for student in (PARTIAL, "bob"):
        nb = submitted(graded_class, student)
        page.goto(feedback(out, student).as_uri())
        shown = page.locator("#notebook").inner_text()
        for cell in nb.cells:
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            if grade_id.endswith(SOLUTION_SUFFIX) or grade_id in {i.id for i in MANUAL_ITEMS}:
                for line in filter(str.strip, cell.source.splitlines()):
                    text = line.strip()
                    if cell.cell_type == "markdown":  # as rendered: no emphasis marks or backticks
                        text = text.replace("*", "").replace("`", "")
                    assert text in shown, f"{student}'s {grade_id}: {text!r} is not shown"
        for item in MANUAL_ITEMS if student == "bob" else ():
            expect(page.locator(f"[id='{item.id}']")).to_contain_text(ANSWERS[item.id])
        secret = set().union(*map(shown_sentences, instructor_answers().values()))
        leaked = [s for s in secret if s in " ".join(page.locator("body").text_content().split())]
        assert len(secret) >= 12 and not leaked, f"a model answer is on {student}'s page: {leaked[:1]}"
        folds = page.locator("details.lesson20-lesson")
        expected = summarize(nbformat.read(str(out / "autograded" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
                                           as_version=4).cells)["folds"]
        expect(folds).to_have_count(len(expected))
        heading = folds.first.locator("h1, h2, h3").first
        expect(heading).to_be_hidden()
        folds.first.locator("summary").click()
        expect(heading).to_be_visible()
