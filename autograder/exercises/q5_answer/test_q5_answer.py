"""Visible check for practice question 5: the answer's form only (the grader checks the letter)."""
import pytest

from autograder.checks.read import shown


@pytest.mark.behaviour("a_letter")
def test_answer_is_a_letter(student):
    """Form only, not the answer: Q5_ANSWER is one letter, a to d (the letter itself is checked when graded)"""
    out = student.run("q5_answer")
    answer = out["answer"]
    ok = answer["type"] == "str" and answer["value"].strip().strip("().").lower() in ("a", "b", "c", "d")
    assert ok, (f'Q5_ANSWER is {shown(answer)}; set it to one letter, for example Q5_ANSWER = "a".')
