"""autograder.instructor.stubs: ClearSolutionsNamed's stubs name the exercise and what to write
(tests/test_release.py checks lessons/ against solutions/ and for leaks)."""
import nbformat
import pytest

from autograder.instructor.stubs import ClearSolutionsNamed


def stub(source, grade_id="master_weights_solution"):
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"solution": True, "grade": False,
                                                                    "grade_id": grade_id, "locked": False}})
    ClearSolutionsNamed()._replace_solution_region(cell, "python")
    return cell.source


def test_a_method_body_names_the_exercise_and_the_method():
    source = "class Scaler:\n    def step(self):\n        ### BEGIN SOLUTION\n        return 1\n        ### END SOLUTION\n"
    assert 'raise NotImplementedError("master_weights: write the body of Scaler.step()")' in stub(source)
    assert "return 1" not in stub(source)


def test_an_answer_becomes_an_ellipsis_and_a_broken_region_is_an_error():
    assert stub('### BEGIN SOLUTION\nQ5_ANSWER = "b"\n### END SOLUTION', "q5_answer_solution") == \
        "Q5_ANSWER = ...  # YOUR ANSWER HERE"
    with pytest.raises(RuntimeError, match="no end solution"):
        stub("### BEGIN SOLUTION\nx = 1\n")
