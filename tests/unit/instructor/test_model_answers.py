"""The written answers' model answers and rubrics: beside each answer in formgrader's manual-grading page, read
from the instructor notebook; never on the student's feedback page (nor in lessons/ or the wheel: test_release,
test_wheel). The oracle is the instructor notebook's own cells, found by grade id, and their shown text."""
import re

import nbformat
from bs4 import BeautifulSoup

from autograder.instructor import model_answers
from autograder.instructor.course import course_config
from autograder.instructor.sanitize import page_markdown
from autograder.items import MANUAL_ITEMS
from tests.helpers import SOLUTION_NB, read
from tests.unit.instructor.test_page_summary import graded, page


def sentences(html: str) -> set:
    """The sentences a reader sees in the paragraphs and list items of this HTML."""
    blocks = BeautifulSoup(html, "html.parser").find_all(["p", "li"])
    texts = [" ".join(block.get_text("").split()) for block in blocks]
    return {s.strip() for text in texts for s in re.split(r"(?<=[.;:!?])\s+", text) if len(s.strip()) >= 30}


def shown_sentences(markdown: str) -> set:
    """The sentences a reader sees of this markdown, as the pages render it."""
    return sentences(page_markdown(markdown, {}))


def instructor_answers() -> dict:
    cells = {c.metadata.get("nbgrader", {}).get("grade_id"): c for c in read(SOLUTION_NB).cells}
    return {item.id: cells[item.id].source for item in MANUAL_ITEMS}


def formgrader_page(nb, submission_id="abc123") -> BeautifulSoup:
    """formgrader's manual-grading page of `nb`, as its handler makes it: nbconvert's HTMLExporter under the
    course's configuration and formgrader's own settings, with the resources its request gives."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    cfg = course_config()
    cfg.HTMLExporter.template_name = "formgrade"  # what FormgradeExtension.build_extra_config sets, before it
    cfg.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    resources = {"assignment_id": "lesson20", "notebook_id": "lesson20", "index": 0, "total": 1, "base_url": "",
                 "student": "bob", "last_name": None, "first_name": None, "notebook_path": "x"}
    if submission_id:
        resources["submission_id"] = submission_id
    html, _ = HTMLExporter(config=cfg).from_notebook_node(nb, resources=resources)
    return BeautifulSoup(html, "html.parser")


def test_the_model_answers_are_the_instructor_notebooks_cells():
    answers = instructor_answers()
    assert all(len(s) > 100 for s in answers.values())
    assert {g: source for g, (source, _) in model_answers.model_answers().items()} == answers
    assert model_answers.model_answer("underflow_fraction") == "" and model_answers.model_answer("nope") == ""


def test_formgrader_shows_each_model_answer_beside_its_answer():
    soup = formgrader_page(graded())
    for item in MANUAL_ITEMS:
        score = soup.find("input", id=item.id)  # nbgrader's score field of the student's answer
        beside = score.find_parent(class_="lesson20-beside")
        assert beside is not None, item.id
        expected = shown_sentences(instructor_answers()[item.id])
        assert expected and expected <= sentences(str(beside.find(class_="lesson20-model"))), item.id
        # the student's answer is in the other column, with its score field and comment box
        assert beside.find(class_="lesson20-student").find("textarea", id=f"{item.id}-comment") is not None


def test_formgrader_draws_tables_and_formulas_and_wrapping_reports():
    soup = formgrader_page(graded())
    assert not [s for s in soup.find_all("script") if "mathjax" in (s.get("src") or "").lower()]
    intro = soup.find("table")  # the lesson's table of exercises
    assert intro is not None and len(intro.find_all("th")) >= 3
    assert soup.find("math") is not None  # a formula of the lesson, drawn as MathML
    assert soup.find(class_="lesson20-report") is not None and not soup.select(".output_execute_result")


def test_no_model_answer_reaches_the_feedback_page():
    """Nor any page made without formgrader's request: a GenerateFeedback run with nbconvert's plain
    HTMLExporter would take formgrader's template file from the same configuration."""
    secret = set().union(*map(shown_sentences, instructor_answers().values()))
    assert len(secret) >= 12
    for soup in (page(graded())[1], formgrader_page(graded(), submission_id=None)):
        text = " ".join(soup.get_text(" ").split())
        leaked = secret & sentences(str(soup)) or [s for s in secret if s in text]
        assert not leaked, f"a model answer is on a student's page: {sorted(leaked)[0][:60]}"
        assert not soup.find(class_="lesson20-model")


def test_a_changed_instructor_notebook_is_read_again(tmp_path):
    from autograder.items import ASSIGNMENT, SOLUTIONS_DIR
    folder = tmp_path / SOLUTIONS_DIR / ASSIGNMENT
    folder.mkdir(parents=True)
    nb = read(SOLUTION_NB)
    nbformat.write(nb, str(folder / f"{ASSIGNMENT}.ipynb"))
    first = model_answers.model_answer(MANUAL_ITEMS[0].id, root=tmp_path)
    assert "Model answer" in first
    cell = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == MANUAL_ITEMS[0].id)
    cell.source = "**Model answer.** Changed since the page was made: $2^k$."
    nbformat.write(nb, str(folder / f"{ASSIGNMENT}.ipynb"))
    import os
    os.utime(folder / f"{ASSIGNMENT}.ipynb", ns=(1, 10**18))  # a different modification time, however fast
    again = model_answers.model_answer(MANUAL_ITEMS[0].id, root=tmp_path)
    assert "Changed since the page was made" in again and "<math" in again
