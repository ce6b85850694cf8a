"""autograder.quizzes: each question is data with choices; a graded one ships no key and no feedback
(tests/test_quizzes.py checks the questions against the notebook)."""
from autograder.quizzes import QUIZZES


def test_self_checking_questions_have_one_right_choice_and_graded_ones_none():
    assert QUIZZES
    for qid, question in QUIZZES.items():
        right = [c for c in question.choices if c.right]
        assert len(question.choices) >= 2, qid
        if question.graded:
            assert not right and not any(c.feedback for c in question.choices), qid
        else:
            assert len(right) == 1 and all(c.feedback for c in question.choices), qid
