"""autograder.instructor.class_report: messages grouped by their wording without numbers, each behaviour's pass
rate, an escaped page, and a clear refusal for a folder that holds no graded class; all from hand-made records."""
from html.parser import HTMLParser

import pytest

from autograder.instructor.class_report import (VARIES, ClassData, ReportError, common_wording, gather,
                                                message_groups, pass_rates, render, slowest, without_numbers)
from autograder.instructor.state import StudentRecord, save_state, state_path
from autograder.items import AUTO_ITEMS, ITEMS
from autograder.rubric import behaviours
from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
from autograder.text import NOT_IMPLEMENTED
from autograder.instructor.messages import NO_MESSAGE

STEP = "mixed_precision_train_step"
HOSTILE = "<img src=x onerror=alert(1)>"
AUTO_POINTS = float(sum(i.points for i in AUTO_ITEMS))


def record(student, failing=None, review=None, seconds=5.0, status="graded"):
    """A graded record: every autograded item, each behaviour passing unless `failing` ({item: {behaviour:
    [messages]}}) says otherwise."""
    failing, items = failing or {}, {}
    for item in AUTO_ITEMS:
        fails = failing.get(item.id, {})
        rubric = {b.id: {"score": 0.0 if b.id in fails else b.points, "max_score": b.points, "central": b.central}
                  for b in behaviours(item.id)}
        items[item.id] = {"score": round(sum(r["score"] for r in rubric.values()), 4),
                          "max_score": float(item.points), "rubric": rubric,
                          "messages": {b: m for b, m in fails.items() if m}}
    return StudentRecord(student, "f", status, "", items if status == "graded" else {}, review or {}, seconds)


def scaled(times):
    return f"The update is {times} times the right one: the gradients were never divided by the scale 2^16."


# ---- messages, grouped by their wording with the numbers stripped ----

def test_numbers_are_stripped_but_not_the_digits_of_a_name():
    assert without_numbers("off by 1.8e-01 (37%) in layer 0.weight, lr=-0.5, 2^-24, 1e-4, 3 calls") == \
        "off by # (#%) in layer #.weight, lr=#, #^#, #, # calls"
    assert without_numbers("fp16 and bfloat16 params, 3x slower, x2, v0.9") == \
        "fp16 and bfloat16 params, 3x slower, x2, v0.9"


def test_a_groups_wording_keeps_the_numbers_its_messages_share():
    assert common_wording([scaled(65536), scaled(1024)]) == scaled(VARIES)
    assert common_wording([scaled(8)]) == scaled(8)


def test_messages_that_differ_only_in_numbers_are_one_group_with_its_students():
    records = {
        "ada": record("ada"),
        "bob": record("bob", {STEP: {"loss_scaling": [scaled(65536)]}}),
        "cy": record("cy", {STEP: {"loss_scaling": [scaled(1024), scaled(512)]}}),  # twice: one student
        "dan": record("dan", {STEP: {"loss_scaling": ["the loss was not multiplied by scaler.scale before "
                                                      "backward()"]}}),
        "eve": record("eve", {STEP: {"loss_scaling": [scaled(3)]}}),
        "fay": record("fay", {STEP: {"loss_scaling": []}}),  # an older record: no message kept
        "gus": record("gus", {STEP: {"loss_scaling": [scaled(7)]}}, review={STEP: ["reading frames"]}),
    }
    groups = message_groups(records, STEP, "loss_scaling")
    assert [(g.wording, g.students, g.count) for g in groups] == [
        (scaled(VARIES), ["bob", "cy", "eve"], 3),  # gus's item is set aside for review: not counted
        (NO_MESSAGE, ["fay"], 1),
        ("the loss was not multiplied by scaler.scale before backward()", ["dan"], 1),
    ]
    assert message_groups(records, STEP, "clean_step") == []


# ---- each behaviour's pass rate ----

def test_pass_rates_count_the_graded_students_and_come_worst_first():
    records = {
        "ada": record("ada"),
        "bob": record("bob", {STEP: {"loss_scaling": ["m"], "clip_after_unscale": ["m"]}}),
        "cy": record("cy", {STEP: {"loss_scaling": ["m"], "clip_after_unscale": ["m"]},
                            "q5_answer": {"a_letter": ["m"]}}),
        "dan": record("dan", {STEP: {"clip_after_unscale": ["m"]}}, review={"q5_answer": ["reading frames"]}),
        "eve": record("eve", status="failed"),  # nothing graded: no behaviour counts it
    }
    rates = pass_rates(records)
    top = [(r.item, r.behaviour.id, r.behaviour.central, r.passed, r.judged, r.failing) for r in rates[:3]]
    assert top == [
        (STEP, "clip_after_unscale", False, 1, 4, ["bob", "cy", "dan"]),
        (STEP, "loss_scaling", True, 2, 4, ["bob", "cy"]),
        ("q5_answer", "a_letter", False, 2, 3, ["cy"]),  # dan's q5_answer is set aside for review
    ]
    assert len(rates) == sum(len(behaviours(i.id)) for i in AUTO_ITEMS)
    assert all(r.rate == 1.0 and not r.failing for r in rates[3:])
    first_central = next(i for i, r in enumerate(rates[3:]) if not r.behaviour.central)  # ties: central first
    assert all(r.behaviour.central for r in rates[3:3 + first_central])
    assert not any(r.behaviour.central for r in rates[3 + first_central:])


def test_the_slowest_come_first_and_untimed_records_are_left_out():
    records = {"a": record("a", seconds=3.0), "b": record("b", seconds=9.5), "c": record("c", seconds=None)}
    assert [r.student for r in slowest(records)] == ["b", "a"]


# ---- the page ----

class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attributes, self.text = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attributes += [name for name, _ in attrs]

    def handle_data(self, data):
        self.text.append(data)


def doc_of(records, extra=None):
    rows = {}
    for student, r in records.items():
        items = {i: {"score": v["score"], "max_score": v["max_score"]} for i, v in r.items.items()}
        rows[student] = {"status": r.status, "reason": r.reason, "items": items,
                         "total": sum(v["score"] for v in items.values()), "max_total": AUTO_POINTS}
    return {"assignment": "lesson20", "students": {**rows, **(extra or {})}}


def test_every_students_text_is_escaped():
    records = {HOSTILE: record(HOSTILE, {STEP: {"loss_scaling": [f"came back {HOSTILE} after 3 calls"]}},
                               review={"q5_answer": ["<script>alert(2)</script>"]}),
               "ada": record("ada")}
    failed = {"<b>bob</b>": {"status": "failed", "reason": "<script>alert(3)</script>", "items": {}, "total": 0.0,
                             "max_total": AUTO_POINTS}}
    page = Page()
    text = render(ClassData(doc_of(records, failed), records, {}, {HOSTILE: ["practice_q1"]}))
    page.feed(text)
    assert not {"script", "img"} & set(page.tags)
    assert not [a for a in page.attributes if a.startswith("on")]
    shown = "".join(page.text)
    for words in (f"1 student came back {HOSTILE} after 3 calls", "<script>alert(2)</script>",
                  "<script>alert(3)</script>", "<b>bob</b>", HOSTILE):
        assert words in shown, words
    assert "http" not in text.replace("http-equiv", "").replace("http://www.w3.org", "")  # nothing to fetch


def test_the_page_shows_each_section_and_every_item_plotted():
    records = {"ada": record("ada", seconds=4.0), "bob": record("bob", {STEP: {"loss_scaling": [scaled(8)]}},
                                                                 seconds=11.0)}
    text = render(ClassData(doc_of(records), records, {}, {"ada": ["practice_q2"]}))
    page = Page()
    page.feed(text)
    shown = "".join(page.text)
    assert "2 students: 2 graded." in shown and "1 written answer still to grade (1 student)" in shown
    assert "1 student " + scaled(8) in shown and "50%" in shown
    assert page.tags.count("svg") == 1 + sum(1 for i in ITEMS if i.kind == "auto")  # the totals, each item
    assert "Every submission was graded." in shown and "No item is set aside for review." in shown
    assert "Nothing set aside for review." in shown
    assert shown.index("bob") < shown.rindex("ada")  # the slowest first


# ---- what is not a graded class ----

def test_a_folder_without_a_graded_class_is_refused_with_its_cause(tmp_path):
    with pytest.raises(ReportError, match="no such folder"):
        gather(tmp_path / "missing")
    with pytest.raises(ReportError, match="has no state/ folder"):
        gather(tmp_path)
    (tmp_path / "state").mkdir()
    with pytest.raises(ReportError, match="state/ holds no student record"):
        gather(tmp_path)
    save_state(tmp_path, StudentRecord("ada", "f"))
    with pytest.raises(ReportError, match="no gradebook at .*gradebook.db"):
        gather(tmp_path)
    (tmp_path / "gradebook.db").write_text("not a database")
    with pytest.raises(ReportError, match="could not be read"):
        gather(tmp_path)


def test_a_broken_record_is_shown_with_its_cause(tmp_path):
    from nbgrader.api import Gradebook

    from autograder.instructor.course import prepare_alembic
    from autograder.instructor.gradebook import COURSE_ID
    prepare_alembic()
    with Gradebook(f"sqlite:///{tmp_path / 'gradebook.db'}", course_id=COURSE_ID):  # an empty gradebook
        pass
    save_state(tmp_path, record("ada"))
    state_path(tmp_path, "bob").write_text("{ half a record")
    data = gather(tmp_path)
    assert set(data.records) == {"ada"} and "bob.json is not a student record" in data.unreadable["bob"]
    page = Page()
    page.feed(render(data))
    assert "its record cannot be read" in "".join(page.text) and "JSONDecodeError" in "".join(page.text)


class Tree(HTMLParser):
    """The page's elements as (tag, attributes, the text directly inside, the enclosing tags)."""
    VOID = {"meta", "br", "img", "input", "link", "hr"}

    def __init__(self):
        super().__init__()
        self.open, self.elements = [], []

    def handle_starttag(self, tag, attrs):
        element = (tag, dict(attrs), [], [t for t, *_ in self.open])
        self.elements.append(element)
        if tag not in self.VOID:
            self.open.append(element)

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        if self.open:
            self.open[-1][2].append(data)


def test_messages_count_first_in_plain_weight_names_folded_and_a_stub_once_per_item():
    stub = {b.id: [NOT_IMPLEMENTED] for b in behaviours(STEP)}
    records = {"ada": record("ada", {STEP: stub}), "bob": record("bob", {STEP: stub}),
               "cy": record("cy", {STEP: {"loss_scaling": [scaled(8)]}}), "dan": record("dan", {STEP: {
                   "loss_scaling": [scaled(9)]}})}
    text = render(ClassData(doc_of(records), records))
    tree = Tree()
    tree.feed(text)
    assert not [t for t, *_ in tree.elements if t in ("b", "strong")]  # no bold walls
    assert text.count("Not implemented yet") == 1  # once for the item, not once per behaviour
    messages = section(text, "messages")  # each line: the count first, the wording, then who, folded
    assert f"2 students {STEP} who ada, bob" in messages and f"2 students {scaled(VARIES)} who cy, dan" in messages
    folded = [el for el in tree.elements if el[0] == "details" and el[1].get("class") == "who"]
    assert len(folded) == 2 and all(el[3][-1] == "li" for el in folded)


def section(text: str, name: str) -> str:
    """The text shown in one section of the page."""
    page = Page()
    page.feed(text[text.index(f'<section id="{name}">'):][:text[text.index(f'<section id="{name}">'):].index(
        "</section>")])
    return " ".join(" ".join(page.text).split())


def test_each_student_has_a_row_linked_to_their_page_and_the_quiz_and_ideas_are_summed_up():
    wrong = {"q5_answer": {"right_letter": ["Q5_ANSWER is 'c', which is not the right answer. "
                                            + PRACTICE_5_FEEDBACK["c"]]}}
    records = {"ada": record("ada"), "bob": record("bob", {**wrong, "accumulate_gradients": {
        "full_batch_gradient": ["m"]}}), "cy": record("cy", wrong)}
    pages = {"ada": "feedback/ada/lesson20/lesson20.html"}
    text = render(ClassData(doc_of(records), records, pages=pages))
    tree = Tree()
    tree.feed(text)
    links = [el[1]["href"] for el in tree.elements if el[0] == "a" and "feedback/" in el[1].get("href", "")]
    assert links == [pages["ada"]]  # bob and cy have no page: their names are not links
    students = section(text, "students")
    for s in records:
        total = doc_of(records)["students"][s]["total"]
        assert f"{s} graded {total:g} / {AUTO_POINTS:g}" in students, (s, students)
    ideas = section(text, "concepts")
    assert "weighting micro-batches: 2 of 3 students" in ideas  # bob misses the full-batch gradient
    assert "the graded quiz: 1 of 3 students" in ideas
    quiz = section(text, "quiz")
    right = PRACTICE_5_ANSWER
    assert f"{right} (right) 1 " in quiz and "c 2 " in quiz and "bob, cy" in quiz
