"""autograder.instructor.quiz_key: the graded question's key is one of its choices, and each choice has its
own feedback, the key's alone saying it is right (tests/test_quizzes.py checks the key against the
reference notebook's Q5_ANSWER)."""
import string

from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
from autograder.quizzes import QUIZZES


def test_every_choice_has_feedback_and_the_key_is_one_of_them():
    letters = string.ascii_lowercase[:len(QUIZZES["practice_5"].choices)]
    assert sorted(PRACTICE_5_FEEDBACK) == list(letters) and PRACTICE_5_ANSWER in letters
    right = [letter for letter, text in PRACTICE_5_FEEDBACK.items() if text.startswith("Right")]
    assert right == [PRACTICE_5_ANSWER]
