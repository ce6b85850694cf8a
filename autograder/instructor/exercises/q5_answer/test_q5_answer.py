"""Hidden check for practice question 5: the letter, against the instructor's answer; the feedback of the letter
recorded, right or wrong, comes with the grade."""
import pytest

from autograder.checks.read import shown
from autograder.instructor.quiz_key import PRACTICE_5_FEEDBACK


def normalise(answer: dict):
    return answer["value"].strip().strip("().").lower() if answer.get("type") == "str" else None


@pytest.mark.behaviour("right_letter")
def test_answer_is_right(student, reference, record_property):
    """Q5_ANSWER is the right letter"""
    got, want = student.run("q5_answer")["answer"], reference.run("q5_answer")["answer"]
    letter = normalise(got)
    right = letter is not None and letter == normalise(want)
    if right:
        record_property("note", f"Practice 5: {PRACTICE_5_FEEDBACK[letter]}")  # the right answer's fine print
    why = PRACTICE_5_FEEDBACK.get(letter, "Read each claim against sections 3 to 5: what each technique stores, "
                                          "what it computes, and when it zeroes and unscales.")
    assert right, f"Q5_ANSWER is {shown(got)}, which is not the right answer. {why}"
