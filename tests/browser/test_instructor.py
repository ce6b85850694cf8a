"""The course as an instructor meets it: nbgrader's formgrader, in JupyterLab, on a class graded by
`python -m autograder grade`, started the way docs/instructors.md says (JupyterLab in OUT)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from autograder.items import ASSIGNMENT, MANUAL_ITEMS
from tests.browser.conftest import ARTIFACTS
from tests.graded_class import ANSWERS

REPO = Path(__file__).resolve().parents[2]
SCORED = MANUAL_ITEMS[1].id  # the written answer the test grades in formgrader
SCORE = 1.5


def formgraders_view(out: Path) -> tuple:
    """(students with a submission, notebooks listed for manual grading) of OUT, as nbgrader's own API, which
    formgrader's pages call, finds them with OUT's nbgrader_config.py."""
    from nbgrader.apps.api import NbGraderAPI
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader
    cfg = PyFileConfigLoader("nbgrader_config.py", path=str(out)).load_config()
    api = NbGraderAPI(CourseDirectory(config=cfg), config=cfg)
    return (sorted(api.get_submitted_students(ASSIGNMENT)),
            [nb["student"] for nb in api.get_notebook_submissions(ASSIGNMENT, ASSIGNMENT)])


pytestmark = pytest.mark.browser


class FormgraderUnavailable(AssertionError):
    """The formgrader page shows nbgrader's error page instead of the course."""


@pytest.fixture
def graded_class_copy(browser_type_launch_args, graded_copy) -> Path:
    """A copy of OUT of the shared class (tests/graded_class.py), in which formgrader may write: bob handed in
    the student notebook with his written answers filled in, the others the reference, a mistake, a stub,
    or something that could not be graded."""
    return graded_copy


def run_autograder(*args):
    done = subprocess.run([sys.executable, "-m", "autograder", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, f"python -m autograder {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}"


def open_formgrader(page, server):
    """Lab's Nbgrader > Formgrader menu; returns the formgrader's frame once its page has loaded."""
    page.goto(server.url("lab"))
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Formgrader", exact=True).click()
    frame = page.frame_locator("iframe")
    heading = frame.locator(".page-header h1").nth(1)
    expect(heading).to_be_visible(timeout=30_000)
    if heading.inner_text().strip() == "Error":
        hints = [line for line in server.log().splitlines() if "nbgrader" in line and ("[E" in line or "[W" in line)]
        raise FormgraderUnavailable("formgrader shows its error page; server log:\n" + "\n".join(hints))
    return frame


def test_formgrader_lists_lesson20(jupyter, page, graded_class_copy):
    server = jupyter("lab", root_dir=graded_class_copy, cwd=graded_class_copy)
    frame = open_formgrader(page, server)
    expect(frame.get_by_role("heading", name="Manage Assignments")).to_be_visible()
    row = frame.locator("tr").filter(has=frame.get_by_role("link", name=ASSIGNMENT, exact=True))
    expect(row).to_have_count(1)
    submitted, _ = formgraders_view(graded_class_copy)
    assert len(submitted) > 2 and "bob" in submitted  # the shared class, not a class of its own
    expect(row.locator(".num-submissions")).to_have_text(str(len(submitted)))


def test_manual_grade_reaches_gradebook(jupyter, page, graded_class_copy):
    """bob's manual-grading page shows his four written answers with score fields; a score typed
    there is in the gradebook and, after `python -m autograder export`, in grades.json."""
    before = json.loads((graded_class_copy / "grades.json").read_text())["students"]["bob"]
    assert SCORED not in before["items"], "a written answer was scored before anyone graded it"

    server = jupyter("lab", root_dir=graded_class_copy, cwd=graded_class_copy)
    frame = open_formgrader(page, server)
    frame.get_by_role("link", name="Manual Grading").click()
    frame.get_by_role("link", name=ASSIGNMENT, exact=True).click()            # the assignment
    frame.locator("#main-table").get_by_role("link", name=ASSIGNMENT, exact=True).click()  # its notebook
    _, autograded = formgraders_view(graded_class_copy)
    assert "bob" in autograded
    expect(frame.locator("#main-table a.name-hidden")).to_have_count(len(autograded))
    frame.get_by_role("button", name="Show All Names").click()
    frame.get_by_role("link", name="bob", exact=True).click()

    for item in MANUAL_ITEMS:
        score = frame.locator(f"input.score#{item.id}")
        expect(score, item.id).to_be_visible(timeout=30_000)
        panel = frame.locator(".nbgrader_cell").filter(has=score)
        expect(panel).to_contain_text(ANSWERS[item.id])
        expect(panel).to_contain_text(f"/ {float(item.points)}")

    score = frame.locator(f"input.score#{SCORED}")
    with page.expect_response(lambda r: "/formgrader/api/grade/" in r.url and r.request.method == "PUT") as saved:
        score.fill(str(SCORE))
        score.press("Tab")  # formgrader saves on change
    assert saved.value.ok, f"saving the score failed: HTTP {saved.value.status}"

    from nbgrader.api import Gradebook
    with Gradebook(f"sqlite:///{graded_class_copy / 'gradebook.db'}", course_id="lesson20") as gb:
        grades = {g.name: g for g in gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "bob").grades}
        assert grades[SCORED].manual_score == SCORE

    run_autograder("export", "--out", str(graded_class_copy))
    after = json.loads((graded_class_copy / "grades.json").read_text())["students"]["bob"]
    item = next(i for i in MANUAL_ITEMS if i.id == SCORED)
    assert after["items"][SCORED] == {"score": SCORE, "max_score": float(item.points)}
    assert after["total"] == pytest.approx(before["total"] + SCORE)


def test_formgrader_shows_the_model_answer_and_rubric_beside_each_written_answer(jupyter, page, graded_class_copy):
    """bob's manual-grading page: beside each written answer, with its score field, the model answer and rubric
    of the instructor notebook; the lesson's table and formulas drawn; the check reports wrapped."""
    from nbgrader.api import Gradebook

    from tests.unit.instructor.test_model_answers import instructor_answers, shown_sentences
    with Gradebook(f"sqlite:///{graded_class_copy / 'gradebook.db'}", course_id=ASSIGNMENT) as gb:
        submission_id = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, "bob").id
    server = jupyter("lab", root_dir=graded_class_copy, cwd=graded_class_copy)
    open_formgrader(page, server)
    page.goto(server.url(f"formgrader/submissions/{submission_id}"))
    viewport = page.viewport_size["width"]
    for item in MANUAL_ITEMS:
        score = page.locator(f"input.score#{item.id}")
        expect(score).to_be_visible(timeout=30_000)
        beside = page.locator(".lesson20-beside").filter(has=score)
        answer, model = beside.locator(".lesson20-student"), beside.locator(".lesson20-model")
        expect(answer).to_contain_text(ANSWERS[item.id])
        for sentence in shown_sentences(instructor_answers()[item.id]):
            expect(model).to_contain_text(sentence)
        left, right = answer.bounding_box(), model.bounding_box()
        assert left["x"] + left["width"] <= right["x"] and right["y"] < left["y"] + left["height"], (left, right)
        assert right["x"] + right["width"] <= viewport, "the rubric is cut off at the right edge"
    intro = page.locator(".rendered_html table").first  # the lesson's table of exercises, its columns apart
    cells = intro.locator("tbody tr").first.locator("td")
    first, second = cells.nth(1).bounding_box(), cells.nth(2).bounding_box()
    assert first["x"] + first["width"] <= second["x"]
    intro.screenshot(path=str(ARTIFACTS / "formgrader_intro_table.png"))
    assert page.locator("math").count() > 0 and page.locator("math").first.bounding_box()["width"] > 0
    wide = page.evaluate("""() => [...document.querySelectorAll('.lesson20-report')]
        .filter(e => e.scrollWidth > e.clientWidth + 1).length""")
    assert wide == 0 and page.evaluate("document.documentElement.scrollWidth") <= viewport
    assert page.locator(".output_execute_result").count() == 0
    page.locator(".lesson20-beside").first.scroll_into_view_if_needed()  # for the screenshot the fixture takes
    page.evaluate("window.scrollBy(0, -200)")
