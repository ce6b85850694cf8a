"""Quizzes are data: every self-checking question has exactly one right answer, the graded one ships no key,
and one renderer shows them all."""
import json
import re
from pathlib import Path

import pytest

from autograder import quiz as quiz_module
from autograder.quizzes import QUIZZES
from tests.helpers import ROOT, STUDENT_NB, read


@pytest.mark.parametrize("qid", sorted(q for q in QUIZZES if not QUIZZES[q].graded))
def test_exactly_one_right_answer_and_feedback_for_each(qid):
    question = QUIZZES[qid]
    assert sum(c.right for c in question.choices) == 1
    assert len(question.choices) >= 3
    assert all(c.text.strip() and c.feedback.strip() for c in question.choices)


@pytest.mark.parametrize("qid", sorted(q for q in QUIZZES if not QUIZZES[q].graded))
def test_the_right_choice_is_not_the_longest_by_far(qid):
    """A key that is much longer than the other choices gives itself away."""
    lengths = [len(c.text) for c in QUIZZES[qid].choices]
    right = next(len(c.text) for c in QUIZZES[qid].choices if c.right)
    assert right <= 1.15 * min(lengths), lengths


def test_graded_questions_carry_no_key():
    """The student package holds the graded question's choices only: no right flag, no feedback."""
    graded = [q for q in QUIZZES.values() if q.graded]
    assert graded
    for question in graded:
        assert not any(c.right for c in question.choices)
        assert not any(c.feedback for c in question.choices)


def test_notebook_uses_every_quiz_and_only_known_ones():
    used = {c.source.strip()[len('quiz("'):-2] for c in read(STUDENT_NB).cells
            if c.cell_type == "code" and c.source.strip().startswith("quiz(")}
    assert used == set(QUIZZES)


def test_practice_5_key_matches_its_graded_answer():
    """The instructor's key to Practice 5 names one of its letters, the one the reference notebook's Q5_ANSWER
    records, and has feedback for every choice."""
    from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
    from autograder.instructor.reference import reference_namespace
    letters = [quiz_module.label(QUIZZES["practice_5"], i)[0] for i in range(len(QUIZZES["practice_5"].choices))]
    assert letters == sorted(PRACTICE_5_FEEDBACK) and all(PRACTICE_5_FEEDBACK.values())
    assert PRACTICE_5_ANSWER == reference_namespace()["Q5_ANSWER"] and PRACTICE_5_ANSWER in letters


def test_practice_5_poses_the_seed_lessons_question_with_its_four_options():
    """The seed's Practice 5, as it words it: the stem and options a to d, graded (the key is b)."""
    question = QUIZZES["practice_5"]
    assert question.graded and len(question.choices) == 4
    assert question.prompt.endswith("Which claim correctly describes what mixed precision and gradient accumulation "
                                    "change about training?")
    assert [c.text.split()[:3] for c in question.choices] == [
        ["Both", "techniques", "change"], ["Mixed", "precision", "shrinks"], ["Gradient", "accumulation", "requires"],
        ["Loss", "scaling", "permanently"]]


def test_the_right_answers_feedback_says_what_it_overstates():
    """Option b is right but imprecise for the weights: its feedback, shown once graded, says they cost more."""
    from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
    feedback = PRACTICE_5_FEEDBACK[PRACTICE_5_ANSWER]
    assert "not stored at half cost" in feedback and "6 bytes per parameter against fp32's 4" in feedback


@pytest.mark.parametrize("qid", sorted(QUIZZES))
def test_each_quiz_reads_as_plain_text_without_widgets(qid, shown):
    """Where no widget front end shows the quiz (jupyter execute, a terminal), its text/plain is the question itself,
    with every choice and its letter, not the widget's repr."""
    quiz_module.quiz(qid)
    text = shown[-1]._repr_mimebundle_()["text/plain"]
    question = QUIZZES[qid]
    assert text.startswith(question.prompt.replace("`", "")) and "VBox" not in text
    for index, choice in enumerate(question.choices):
        assert f"{'abcd'[index]}) {choice.text.replace('`', '')}" in text
    assert (quiz_module.GRADED in text) == question.graded


@pytest.mark.parametrize("qid", sorted(q for q in QUIZZES if not QUIZZES[q].graded))
def test_an_answer_by_letter_gets_the_checks_verdict(qid, capsys):
    question = QUIZZES[qid]
    for index, choice in enumerate(question.choices):
        quiz_module.quiz(qid, "abcd"[index])
        said = capsys.readouterr().out
        assert said.startswith("Correct." if choice.right else "Not quite.")
        assert choice.feedback.replace("`", "") in said
    quiz_module.quiz(qid, "z")
    assert "not one of the choices" in capsys.readouterr().out


def test_a_graded_question_answered_by_letter_gives_nothing_away(capsys):
    for letter in "abcd":
        quiz_module.quiz("practice_5", letter)
        said = capsys.readouterr().out
        assert "Correct" not in said and "Not quite" not in said and "record your letter" in said


def parts(box):
    """The quiz's radio buttons, Check button and feedback, found by type rather than position."""
    import ipywidgets as widgets
    radio = next(w for w in box.children if isinstance(w, widgets.RadioButtons))
    button = next(w for w in box.children if isinstance(w, widgets.Button))
    feedback = next(w for w in box.children if "lesson20-quiz-feedback" in w._dom_classes)
    return radio, button, feedback


@pytest.fixture
def shown(monkeypatch):
    boxes = []
    monkeypatch.setattr("IPython.display.display", lambda *objs, **kw: boxes.extend(objs))
    return boxes


@pytest.mark.parametrize("qid", sorted(q for q in QUIZZES if not QUIZZES[q].graded))
def test_each_choice_shows_its_own_feedback(qid, shown):
    quiz_module.quiz(qid)
    radio, button, feedback = parts(shown[-1])
    for index, choice in enumerate(QUIZZES[qid].choices):
        radio.value = index
        button.click()
        assert ("lesson20-quiz-right" in feedback.value) == choice.right
        assert quiz_module._inline_code(choice.feedback) in feedback.value


def test_practice_5_is_graded_so_its_widget_gives_nothing_away(shown):
    """The widget above the graded Q5_ANSWER cell poses the question only: no Check button, no verdict, no feedback."""
    import ipywidgets as widgets
    assert QUIZZES["practice_5"].graded
    quiz_module.quiz("practice_5")
    box = shown[-1]
    radio, feedback = parts_without_button(box)
    assert not any(isinstance(w, widgets.Button) for w in box.children)
    for index, _ in enumerate(QUIZZES["practice_5"].choices):
        radio.value = index
        assert "lesson20-quiz-right" not in feedback.value and "lesson20-quiz-wrong" not in feedback.value
    from autograder.instructor.quiz_key import PRACTICE_5_FEEDBACK
    texts = " ".join(w.value for w in box.children if isinstance(w, widgets.HTML))
    assert not any(feedback[:40] in texts for feedback in PRACTICE_5_FEEDBACK.values())


def parts_without_button(box):
    import ipywidgets as widgets
    radio = next(w for w in box.children if isinstance(w, widgets.RadioButtons))
    feedback = next(w for w in box.children if "lesson20-quiz-feedback" in w._dom_classes)
    return radio, feedback


def test_check_without_an_answer_asks_for_one(shown):
    quiz_module.quiz("warmup_1")
    radio, button, feedback = parts(shown[-1])
    button.click()
    assert "Pick an answer" in feedback.value


def test_unknown_quiz_is_a_clear_error():
    with pytest.raises(KeyError, match="warmup_1"):
        quiz_module.quiz("nope")


SEED = Path(__file__).resolve().parents[1].parent / "shared" / "seed" / "lesson20.txt"


def _plain(text: str) -> str:
    return " ".join(text.replace("`", "").replace("*", "").split())


def _seed_questions(seed: str) -> list:
    """The seed lesson's questions as it words them: each numbered stem, and each lettered option."""
    stems = [m.group(1) for m in re.finditer(r"^\d+\. ▢ (.+)$", seed, re.M)]
    options = [m.group(1) for m in re.finditer(r"^\s*• [a-d]\) (.+)$", seed, re.M)]
    return stems + options


@pytest.mark.skipif(not SEED.is_file(), reason="the seed lesson is not beside this checkout")
def test_every_question_of_the_seed_is_posed_as_it_words_it():
    """Warm-up 1-2 and Practice 1-5's stems, and Practice 5's four options, word for word (markdown aside) in the
    lesson: in its markdown or in its quizzes."""
    questions = _seed_questions(SEED.read_text())
    assert len(questions) == 11, questions  # 2 warm-up and 5 practice stems, 4 options
    nb = json.loads((ROOT / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    lesson = [_plain("".join(c["source"])) for c in nb["cells"] if c["cell_type"] == "markdown"]
    lesson += [_plain(q.prompt) for q in QUIZZES.values()]
    lesson += [_plain(c.text) for q in QUIZZES.values() for c in q.choices]
    text = "\n".join(lesson)
    missing = [q for q in questions if _plain(q) not in text]
    assert not missing, f"the seed's questions not posed as it words them: {missing}"
