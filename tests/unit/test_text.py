"""autograder.text, and the status vocabularies beside what carries them (their words never change)."""
from typing import get_args

from autograder.checks.expect import CheckReason
from autograder.grading import NotebookStatus
from autograder.instructor.state import StudentStatus
from autograder.sandbox.errors import SandboxReason
from autograder.text import HINTS
from tests.submissions import VARIANTS


def words(vocabulary) -> set:
    return set(get_args(vocabulary))


def test_a_status_passed_on_is_a_word_of_the_vocabulary_it_is_passed_into():
    assert words(SandboxReason) < words(CheckReason)      # a sandbox failure fails the check for that reason
    assert words(NotebookStatus) < words(StudentStatus)   # a notebook's status is its student's
    assert set(HINTS) <= words(SandboxReason)


def test_the_statuses_the_corpus_expects_are_notebook_statuses():
    """tests/test_submissions.py checks each variant's status against these, so they too are in the vocabulary."""
    expected = {v.status for v in VARIANTS.values()}
    assert expected <= words(NotebookStatus) and len(expected) > 1
