"""The feedback page's summary, headings and folds (page_summary.py), and the page its template makes of them
(feedback_page.FeedbackPage with the course's configuration), on the lesson's own notebook graded as GetPageGrades
and GradeOutOfProcess leave it, without a gradebook."""
import copy
import re

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbformat.v4 import new_output

from autograder.instructor.course import course_config
from autograder.instructor.feedback_page import FeedbackPage
from autograder.instructor.page_summary import PAGE, SummarizePage, add_page_note
from autograder.instructor.preprocessor import FIRST_MESSAGE
from autograder.items import AUTO_ITEMS, ITEMS, ITEMS_BY_ID, MANUAL_ITEMS, item_of_cell
from autograder.text import ANSWER_NOT_GRADED
from tests.helpers import STUDENT_NB, read

LOST = "mixed_precision_train_step"  # the item that loses points, with a report and a first message
REPORT = ("Graded with the reference's DynamicLossScaler, in place of yours.\n"
          "mixed_precision_train_step: 7 of 10 behaviours pass, 1.5 of 3 points\n"
          "  ✓ 0.4/0.4   A clean step moves the fp32 masters\n"
          "  ✗ 0/0.4     The loss is multiplied by the scale before backward()" + " and more" * 30 + "\n"
          "        FAIL  Gradients of about 2^-27 survive\n"
          "              mixed_precision_train_step with a loss multiplied by 2^-24: the masters' update is 100% off.\n")
FIX = "mixed_precision_train_step with a loss multiplied by 2^-24: the masters' update is 100% off <b>."
COMMENTED = MANUAL_ITEMS[0].id  # graded by hand, 0.5 of 2, with a comment
WAITING = MANUAL_ITEMS[1].id    # not graded yet


def graded(answer="fp16 runs *out of range*: $2^{16}$ is too large.") -> nbformat.NotebookNode:
    """The student notebook as GradeOutOfProcess and GetPageGrades leave it: every check's report and score, the
    scores, one written answer graded with a comment, one waiting for its grader."""
    nb = copy.deepcopy(read(STUDENT_NB))
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        item = ITEMS_BY_ID.get(item_of_cell(meta.get("grade_id")))
        if item is None or not meta.get("grade"):
            continue
        full = float(item.points)
        score = 1.5 if item.id == LOST else 0.5 if item.id == COMMENTED else 0.0 if item.id == WAITING else full
        meta.update(score=score, points=full, needs_manual_grade=item.id == WAITING)
        if item.kind == "auto":
            report = REPORT if item.id == LOST else f"{item.id}: all behaviours pass, {full:g} of {full:g} points\n"
            cell.outputs = [new_output("stream", name="stdout", text=report),
                            new_output("execute_result", data={"text/plain": f"{score:g}"},
                                       metadata={FIRST_MESSAGE: FIX} if item.id == LOST else {})]
        else:
            cell.source = answer
            meta["comment"] = "Right for (a) and (d).\n\nFor (c), use the gap *below* 8." if item.id == COMMENTED else None
    return nb


def page(nb, notes=()) -> tuple:
    """(the page's HTML, its parsed tree), as GenerateFeedback makes it with the course's configuration."""
    resources = {"nbgrader": {"score": 17.5, "max_score": 22.0, "late_penalty": 0}}
    for note in notes:
        add_page_note(resources, note)
    nb, resources = SummarizePage().preprocess(nb, resources)
    html, _ = FeedbackPage(config=course_config()).from_notebook_node(nb, resources)
    return html, BeautifulSoup(html, "html.parser")


def test_one_row_per_item_in_notebook_order_with_the_first_thing_to_fix():
    nb = graded()
    summary = SummarizePage().preprocess(nb, {"nbgrader": {}})[1][PAGE]
    order = []
    for cell in nb.cells:
        item = item_of_cell(cell.metadata.get("nbgrader", {}).get("grade_id"))
        if item in ITEMS_BY_ID and item not in order:
            order.append(item)
    assert [r["id"] for r in summary["rows"]] == order and sorted(order) == sorted(i.id for i in ITEMS)
    rows = {r["id"]: r for r in summary["rows"]}
    assert rows[LOST]["message"] == FIX and rows[LOST]["lost"] and rows[LOST]["score"] == "1.5"
    assert rows[COMMENTED]["message"] == "Right for (a) and (d)." and rows[COMMENTED]["score"] == "0.5"
    assert rows[WAITING]["message"] == ANSWER_NOT_GRADED and rows[WAITING]["score"] == "–"
    full = [r for r in rows.values() if r["id"] not in (LOST, COMMENTED, WAITING)]
    assert full and all(not r["lost"] and r["message"] == "" for r in full)
    assert all(r["title"] == ITEMS_BY_ID[r["id"]].title for r in rows.values())


def test_the_lessons_own_cells_are_folded_and_the_students_work_is_not():
    nb = graded()
    summary = SummarizePage().preprocess(nb, {"nbgrader": {}})[1][PAGE]
    folds, ends, work = summary["folds"], summary["fold_ends"], summary["cells"]
    folded = set()
    for start in folds:
        end = min(e for e in ends if e >= start)
        folded |= set(range(start, end + 1))
    assert len(folds) == len(ends) and not folded & set(work)
    assert folded | set(work) == set(range(len(nb.cells)))  # every cell is either shown as work or folded
    for index, cell in enumerate(nb.cells):
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("solution"):
            assert index in work, index
        elif index in work:  # shown though not graded: only the question just before a written answer
            following = nb.cells[index + 1].metadata.get("nbgrader", {})
            assert cell.cell_type == "markdown" and following.get("grade_id") in {i.id for i in MANUAL_ITEMS}
    headings = [h for c in nb.cells[:next(iter(work))] if c.cell_type == "markdown"
                for h in re.findall(r"^#+ (.+)$", c.source, re.MULTILINE)]
    assert headings and headings[0] in folds[0]


def test_the_page_shows_the_summary_the_work_and_the_reports_and_folds_the_lesson():
    html, soup = page(graded())
    rows = soup.select("table.lesson20-summary tbody tr")
    assert [r.th.get_text(strip=True) for r in rows] == [r["title"] for r in
                                                         SummarizePage().preprocess(graded(), {})[1][PAGE]["rows"]]
    lost = next(r for r in rows if ITEMS_BY_ID[LOST].title in r.get_text())
    link = lost.select("td a")[0]
    assert link.get_text() == FIX and soup.find(id=link["href"][1:]) is not None  # escaped, and linked to its report
    for row in rows:  # every title links to something on the page
        assert soup.find(id=row.th.a["href"][1:]) is not None, row.th.a["href"]
    assert soup.find("h1").get_text(strip=True) == "lesson20: 17.5 of 22 points"
    # the report: every line of it, in order, each line a block of its own that can wrap; no bare score after it
    report = soup.find(id=LOST).find(class_="lesson20-report")
    assert [d.get_text() for d in report.find_all("div")] == [line.lstrip(" ") for line in REPORT.rstrip("\n").split("\n")]
    assert not soup.select(".output_execute_result") and "Out[" not in soup.get_text()
    # the lesson's prose is inside a fold; the written answer, its question and its formula are not
    lesson = soup.select("details.lesson20-lesson")
    assert lesson and all(d.summary.get_text().startswith("Lesson text") for d in lesson)
    answer = soup.find(id=COMMENTED)
    assert answer.find_parent("details") is None and "fp16 runs out of range" in answer.get_text()
    assert answer.find("math") is not None and "$" not in answer.get_text()
    assert "use the gap below 8" in answer.find(class_="lesson20-comment").get_text()
    assert soup.find(id=f"{COMMENTED}-question").find_parent("details") is None


def test_no_script_runs_and_notes_are_text():
    html, soup = page(graded("<img src=x onerror=alert(1)> $\\href{javascript:alert(1)}{x}$"),
                      notes=["Submitted 2 days late: <b>-10%</b>."])
    assert not soup.find_all("script")
    csp = soup.find("meta", attrs={"http-equiv": "Content-Security-Policy"})["content"]
    assert "default-src 'none'" in csp and "script-src" not in csp
    assert soup.select("ul.lesson20-notes li")[0].get_text() == "Submitted 2 days late: <b>-10%</b>."
    assert "javascript:" not in html


@pytest.mark.parametrize("item", [i.id for i in AUTO_ITEMS])
def test_an_item_that_lost_points_without_a_message_still_links_to_its_check(item):
    """A notebook graded before the score output carried the first message: the row says nothing more."""
    nb = graded()
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == item:
            cell.metadata.nbgrader["score"] = 0.0
            cell.outputs[-1].metadata = {}
    row = next(r for r in SummarizePage().preprocess(nb, {})[1][PAGE]["rows"] if r["id"] == item)
    assert row["lost"] and row["message"] == "" and row["anchor"] == f"{item}_solution"
