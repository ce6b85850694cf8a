"""Hidden check for practice question 5: the letter, against the instructor's answer."""
import pytest

from autograder.checks.expect import shown


def normalise(answer: dict):
    return answer["value"].strip().strip("().").lower() if answer.get("type") == "str" else None


@pytest.mark.behaviour("right_letter")
def test_answer_is_right(student, reference):
    """Q5_ANSWER is the right letter"""
    got, want = student.run("q5_answer")["answer"], reference.run("q5_answer")["answer"]
    assert normalise(got) is not None and normalise(got) == normalise(want), (
        f"Q5_ANSWER is {shown(got)}, which is not the right answer. Check each of the three parts on its own: "
        "which numbers the fp32 master copy keeps that fp16 would lose (section 3 names two ways), which fp16 "
        "values the scale S multiplies (section 2), and which weight makes the micro-batches add up to the "
        "whole batch's mean (section 4).")
