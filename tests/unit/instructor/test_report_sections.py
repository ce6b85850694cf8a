"""autograder.instructor.report_sections: the class report's tables as plain data: what was not checked, what was
set aside and who was late or of unknown lateness, from grades.json's rows; one row per student; the lesson's ideas
from the exercises' declarations; the graded quiz's letters from the records."""
from autograder.exercise import CONCEPTS
from autograder.exercises import EXERCISES
from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
from autograder.instructor.report_sections import (LETTER_UNKNOWN, NOT_A_LETTER, STUBBED, around, concept_of,
                                                   late_rows, not_checked_rows, quiz_letter, quiz_letters,
                                                   set_aside_rows, student_rows, summary)
from autograder.items import ITEMS
from autograder.text import NOT_IMPLEMENTED

DOC = {"students": {
    "ada": {"status": "graded", "submission": {"time": "t", "late_seconds": 0.0, "penalty": 0.0}},
    "bob": {"status": "graded", "not_checked": {"accumulate_gradients": ["one_graph"]},
            "weaker_isolation": ["memory_cgroup"],
            "set_aside": [{"reason": "submitted under the id bob by the account <b>eve</b>", "owner": "eve",
                           "folder": "bob+lesson20+2099", "time": "2026-12-10T06:03:00Z"}],
            "submission": {"time": "2026-12-10T06:03:00Z", "due": "2026-12-10T05:30:00Z", "late_seconds": 1980.0,
                           "penalty": 1.0, "source": "the exchange"}},
    "cy": {"status": "graded", "submission": {"time": None, "late_seconds": None, "penalty": 0.0,
                                              "flags": ["lateness unknown"]}}},
    "set_aside": [{"reason": "its student id cannot be held", "folder": "a" * 100, "owner": "mallory"}]}


def test_each_section_lists_only_what_needs_a_person():
    assert [r[:3] for r in not_checked_rows(DOC)] == [["bob", "accumulate_gradients", "one_graph"]]
    assert [r[0] for r in set_aside_rows(DOC)] == ["bob", "(no usable student id)"]
    late = late_rows(DOC)
    assert [r[0] for r in late] == ["bob", "cy"]
    assert late[0][3] == "33 min" and late[1][3] == "unknown"
    assert summary(DOC) == ("Needs a person: 1 items with behaviours not checked, 2 submissions set aside, "
                            "1 submissions of unknown lateness.")


def test_empty_sections_say_so():
    sections = {a["id"]: a for a in around({"students": {"ada": DOC["students"]["ada"]}})}
    assert set(sections) == {"not_checked", "set_aside", "late"}
    assert not sections["set_aside"]["rows"] and sections["set_aside"]["empty"] == "No submission was set aside."
    assert summary({"students": {}}) == ""


def test_one_row_per_student_with_each_items_score_and_their_page():
    doc = {"students": {**DOC["students"], "ada": {**DOC["students"]["ada"], "total": 3.5, "max_total": 8.0,
                                                   "items": {ITEMS[0].id: {"score": 0.5, "max_score": 1.0}}}}}
    for row in doc["students"].values():
        row.setdefault("total", 0.0), row.setdefault("max_total", 8.0), row.setdefault("items", {})
    rows = student_rows(doc, {"cy": {"q5_answer": ["reading frames"]}}, {"ada": "feedback/ada/lesson20/lesson20.html"})
    assert [r["student"] for r in rows] == ["ada", "bob", "cy"]
    ada, bob, cy = rows
    assert ada["page"].endswith("lesson20.html") and bob["page"] == ""
    assert ada["items"][0] == 0.5 and ada["items"][1:] == [None] * (len(ITEMS) - 1) and ada["late"] == ""
    assert bob["late"] == "33 min" and bob["set_aside"] == "1 submission(s) not theirs"
    assert cy["late"] == "unknown" and cy["set_aside"] == "q5_answer"


def test_every_behaviour_checks_one_of_the_lessons_ideas_and_each_idea_has_one():
    used = {concept_of(e.id, b.id) for e in EXERCISES for b in e.behaviours}
    assert used == set(CONCEPTS), (used ^ set(CONCEPTS))
    assert concept_of("accumulate_gradients", "full_batch_gradient") == "micro_batches"
    assert concept_of("mixed_precision_train_step", "overflow_skips") == "overflow"


def quiz_item(letter):
    """q5_answer's record as the grader writes it for a student who answered `letter` (its hidden check's message)."""
    right = letter == PRACTICE_5_ANSWER
    a_letter = letter in PRACTICE_5_FEEDBACK
    messages = {}
    if not a_letter:
        messages["a_letter"] = [f"Q5_ANSWER is {letter!r}; set it to one letter, for example Q5_ANSWER = \"a\"."]
    if not right:
        why = PRACTICE_5_FEEDBACK.get(letter, "Read each claim against sections 3 to 5.")
        messages["right_letter"] = [f"Q5_ANSWER is {letter!r}, which is not the right answer. {why}"]
    return {"rubric": {"a_letter": {"score": 0.1 if a_letter else 0.0, "max_score": 0.1},
                       "right_letter": {"score": 0.9 if right else 0.0, "max_score": 0.9}}, "messages": messages}


def test_the_quiz_letter_is_read_from_what_its_check_said():
    for letter in PRACTICE_5_FEEDBACK:
        assert quiz_letter(quiz_item(letter)) == letter
    assert quiz_letter(quiz_item("e")) == NOT_A_LETTER
    stub = quiz_item("e")
    stub["messages"]["a_letter"] = [NOT_IMPLEMENTED]
    assert quiz_letter(stub) == STUBBED
    older = quiz_item("c")
    older["messages"] = {}  # a record that kept no message
    assert quiz_letter(older) == LETTER_UNKNOWN
    wrong = next(letter for letter in PRACTICE_5_FEEDBACK if letter != PRACTICE_5_ANSWER)
    judged = [("ada", "q5_answer", quiz_item(wrong)), ("bob", "q5_answer", quiz_item(wrong)),
              ("cy", "q5_answer", quiz_item(PRACTICE_5_ANSWER)), ("dan", "q5_answer", quiz_item("zz")),
              ("eve", "underflow_fraction", {})]
    letters = {q["letter"]: q for q in quiz_letters(judged)}
    assert list(letters) == [*PRACTICE_5_FEEDBACK, NOT_A_LETTER]  # a to d always, the rest when someone chose it
    assert {k: (q["count"], q["right"]) for k, q in letters.items()} == {
        **{k: (0, False) for k in PRACTICE_5_FEEDBACK}, wrong: (2, False), PRACTICE_5_ANSWER: (1, True),
        NOT_A_LETTER: (1, False)}
    assert letters[wrong]["students"] == ["ada", "bob"]
