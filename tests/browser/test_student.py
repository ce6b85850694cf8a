"""The lesson as a student meets it: the notebook in JupyterLab 4 and Notebook 7, in headless Chromium."""
import re

import nbformat
import pytest
from playwright.sync_api import expect

from autograder.items import AUTO_ITEMS, ITEMS_BY_ID
from autograder import quiz as quiz_module
from autograder.quizzes import QUIZZES

pytestmark = pytest.mark.browser


def plain(text: str) -> str:
    """A quiz text as the page shows it: the widget turns `code` into <code>code</code>."""
    return text.replace("`", "")


def stub_ids(path) -> list:
    """Exercise ids whose solution cell in this notebook still raises NotImplementedError."""
    nb = nbformat.read(path, as_version=4)
    ids = []
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if cell.cell_type == "code" and grade_id.endswith("_solution") and "raise NotImplementedError" in cell.source:
            ids.append(ITEMS_BY_ID[grade_id[:-len("_solution")]].id)
    return ids


def assert_quizzes_work(page):
    """Every quiz renders; each wrong choice shows its own feedback, the right one says it is right (a graded
    question shows neither)."""
    quizzes = page.locator(".lesson20-quiz")
    expect(quizzes).to_have_count(len(QUIZZES))
    for question_id, question in QUIZZES.items():
        box = quizzes.filter(has_text=plain(question.prompt))
        expect(box).to_have_count(1)
        box.scroll_into_view_if_needed()
        labels = box.locator(".widget-radio-box label")
        expect(labels).to_have_count(len(question.choices))
        # a long choice must wrap inside its own row, not over the next one: compare where the text is drawn
        rows = labels.evaluate_all("""ls => ls.map(l => {
            const range = document.createRange();
            range.selectNodeContents(l);
            const box = range.getBoundingClientRect();
            return [box.top, box.bottom];
        })""")
        for (_, bottom), (top, _) in zip(rows, rows[1:]):
            assert bottom <= top + 0.5, f"{question_id}: the choices overlap on screen: {rows}"
        feedback = box.locator(".lesson20-quiz-feedback")
        if question.graded:  # posed only: no Check button, no verdict, nothing that gives the answer away
            expect(box.get_by_role("button", name="Check")).to_have_count(0)
            box.get_by_role("radio", name=quiz_module.label(question, 0), exact=True).check()
            expect(feedback.locator(".lesson20-quiz-right")).to_have_count(0)
            continue
        # wrong answers first, so the right answer must replace a "wrong" verdict
        for index, choice in sorted(enumerate(question.choices), key=lambda pair: pair[1].right):
            box.get_by_role("radio", name=quiz_module.label(question, index), exact=True).check()
            box.get_by_role("button", name="Check").click()
            verdict = feedback.locator(".lesson20-quiz-right" if choice.right else ".lesson20-quiz-wrong")
            expect(verdict, f"{question_id}: {choice.text[:40]}...").to_contain_text(plain(choice.feedback))
            expect(verdict).to_contain_text("Correct." if choice.right else "Not quite.")
            other = feedback.locator(".lesson20-quiz-wrong" if choice.right else ".lesson20-quiz-right")
            expect(other).to_have_count(0)
        feedback.scroll_into_view_if_needed()  # for the screenshot


def test_lab_student_notebook(jupyter, open_notebook, page, student_notebook):
    """Run All in Lab: no traceback anywhere, quizzes answer, stub checks say "not implemented" in a few lines."""
    server = jupyter("lab", notebooks={"lesson20.ipynb": student_notebook})
    ui = open_notebook(server, "lesson20.ipynb")
    ui.run_all()
    assert ui.problems() == []

    stubs = stub_ids(student_notebook)
    assert stubs, "the student notebook has no stubs left to check"
    reports = page.locator(".lesson20-check")
    expect(reports).to_have_count(len(AUTO_ITEMS))
    for exercise_id in stubs:
        report = reports.filter(has_text=re.compile(rf"^\W*{exercise_id}:"))
        expect(report, exercise_id).to_have_count(1)
        expect(report).to_have_class(re.compile(r"\blesson20-check-fail\b"))
        expect(report).to_contain_text("Not implemented yet")
        text = report.inner_text()
        assert len(text) < 600 and len(text.strip().splitlines()) <= 3, f"{exercise_id}: not short:\n{text}"
        assert "Traceback" not in text and "File \"" not in text
        # the check cell shows this report and nothing else (no stderr, no second output)
        cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has=report)
        expect(cell.locator(".jp-OutputArea-output")).to_have_count(1)

    assert_quizzes_work(page)


def test_lab_reference_notebook(jupyter, open_notebook, page, instructor_notebook):
    """The instructor notebook (reference code filled in): every check passes, every plot is an image,
    and moving the scale-sweep slider redraws its plot."""
    server = jupyter("lab", notebooks={"lesson20.ipynb": instructor_notebook})
    ui = open_notebook(server, "lesson20.ipynb")
    ui.run_all()
    assert ui.problems() == []

    reports = page.locator(".lesson20-check")
    expect(reports).to_have_count(len(AUTO_ITEMS))
    expect(page.locator(".lesson20-check-pass")).to_have_count(len(AUTO_ITEMS))
    for item in AUTO_ITEMS:
        expect(reports.filter(has_text=re.compile(rf"^\W*{item.id}: (\d+) of \1 behaviours (checked here )?pass"))).to_have_count(1)

    # every cell that draws with `plots.` shows a decoded PNG
    nb = nbformat.read(instructor_notebook, as_version=4)
    cells = ui.cells()
    expect(cells).to_have_count(len(nb.cells))
    plot_cells = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and re.search(r"\bplots\.\w+\(", c.source)]
    assert len(plot_cells) >= 5
    for i in plot_cells:
        images = cells.nth(i).locator(".jp-OutputArea-output[data-mime-type='image/png'] img")
        expect(images.first, f"cell {i} has no plot").to_be_attached()
        assert images.first.evaluate("img => img.complete && img.naturalWidth > 100"), f"cell {i}: image not decoded"

    sweep = page.locator(".lesson20-scale-sweep")
    expect(sweep).to_have_count(1)
    image = sweep.locator("img")
    expect(image).to_have_count(1)
    before = image.get_attribute("src")
    readout = sweep.locator(".widget-readout")
    expect(readout).to_have_text("0")
    # drag the handle to 40% of the track; hover() scrolls it into view and waits until it stops moving
    handle = sweep.locator(".noUi-handle")
    handle.hover()
    box, track = handle.bounding_box(), sweep.locator(".noUi-target").bounding_box()
    page.mouse.down()
    page.mouse.move(track["x"] + track["width"] * 0.4, box["y"] + box["height"] / 2, steps=8)
    page.mouse.up()
    expect(readout).not_to_have_text("0")
    moved_to = int(readout.inner_text())
    assert 5 <= moved_to <= 35, f"the slider moved to {moved_to}, expected about 40% of 0..40"
    expect(image).not_to_have_attribute("src", before, timeout=20_000)
    expect(image).to_have_count(1)
    assert image.evaluate("img => img.complete && img.naturalWidth > 100")


def test_notebook7_quizzes(jupyter, open_notebook, page, student_notebook, tmp_path):
    """The same quiz interaction in Notebook 7, on the student notebook's set-up cell and quiz cells."""
    nb = nbformat.read(student_notebook, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    nb.cells = code[:1] + [c for c in code if re.match(r"quiz\(", c.source)]
    assert len(nb.cells) == 1 + len(QUIZZES)
    quizzes_only = tmp_path / "quizzes.ipynb"
    nbformat.write(nb, quizzes_only)
    server = jupyter("notebook", notebooks={"lesson20.ipynb": quizzes_only})
    ui = open_notebook(server, "lesson20.ipynb", app="notebook")
    ui.run_all()
    assert ui.problems() == []
    assert_quizzes_work(page)
