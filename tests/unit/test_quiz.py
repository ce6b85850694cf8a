"""autograder.quiz: one widget for any question; an unknown id names the known ones; choice text is escaped."""
import pytest

from autograder import quiz as quiz_module
from autograder.quizzes import QUIZZES


def test_an_unknown_quiz_names_the_known_ones():
    with pytest.raises(KeyError, match=next(iter(QUIZZES))):
        quiz_module.quiz("no_such_quiz")


def test_shown_widget_holds_the_prompt_and_every_choice(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", shown.append)
    qid = next(q for q in QUIZZES if not QUIZZES[q].graded)
    quiz_module.quiz(qid)
    [box] = shown
    radio = next(w for w in box.children if hasattr(w, "options"))
    assert [label for label, _ in radio.options] == [f"{'abcd'[i]}) {c.text.replace('`', '')}"
                                                     for i, c in enumerate(QUIZZES[qid].choices)]


def test_inline_code_is_escaped_before_it_is_marked_up():
    assert quiz_module._inline_code("`x < y` & <b>") == "<code>x &lt; y</code> &amp; &lt;b&gt;"
