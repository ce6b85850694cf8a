"""autograder.selfcheck: the check() a student calls in the notebook."""
import pytest

from autograder.selfcheck import check


def test_repr_is_the_score_nbgrader_reads():
    result = check("q5_answer", {"Q5_ANSWER": "b"})
    assert repr(result) == "1" and "q5_answer" in str(result)
    assert repr(check("q5_answer", {})) == "0"


def test_wrong_use_gets_a_clear_error():
    with pytest.raises(KeyError, match="the ids are"):
        check("no_such_item", {})
    with pytest.raises(ValueError, match="graded by your instructor"):
        check("practice_q1", {})
    with pytest.raises(TypeError, match="pass globals"):
        check("q5_answer", None)
