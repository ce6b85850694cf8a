"""autograder.text: text from student code is cut to its kind's limit, without writing the whole value out; and
the status vocabularies beside what carries them (their words never change)."""
from typing import get_args

import pytest

from autograder.checks.read import CheckReason
from autograder.grading import NotebookStatus
from autograder.instructor.state import StudentStatus
from autograder.sandbox.errors import SandboxReason
from autograder.text import HINTS, LIMITS, bounded_repr, clip
from tests.submissions import VARIANTS


@pytest.mark.parametrize("kind", sorted(LIMITS))
def test_a_string_is_cut_to_its_kinds_limit(kind):
    assert clip("x" * 10**6, kind) == "x" * LIMITS[kind]
    assert clip("short", kind) == "short" and clip(None, kind) == ""


def test_other_values_are_written_by_a_bounded_repr():
    huge = list(range(10**6))
    assert len(clip(huge, "message")) <= LIMITS["message"] and clip(huge, "message").startswith("[0, 1, 2")
    nested = [[[[[["deep"]]]]]]
    assert "deep" not in bounded_repr(nested)  # levels below the limit are elided
    assert clip([1, 2], "note") == repr([1, 2])  # a small value reads as its repr


def test_a_repr_that_raises_is_named_not_raised():
    class Hostile:
        def __repr__(self):
            raise RuntimeError("no")
    assert bounded_repr(Hostile()).startswith("<Hostile")
    assert bounded_repr([Hostile()]).startswith("[<Hostile")


def words(vocabulary) -> set:
    return set(get_args(vocabulary))


def test_a_status_passed_on_is_a_word_of_the_vocabulary_it_is_passed_into():
    assert words(SandboxReason) < words(CheckReason)      # a sandbox failure fails the check for that reason
    assert words(NotebookStatus) < words(StudentStatus)   # a notebook's status is its student's
    assert set(HINTS) <= words(SandboxReason)


def test_the_statuses_the_corpus_expects_are_notebook_statuses():
    """tests/integration/test_submissions.py checks each variant's status against these, so they too are in the vocabulary."""
    expected = {v.status for v in VARIANTS.values()}
    assert expected <= words(NotebookStatus) and len(expected) > 1
