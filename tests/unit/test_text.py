"""autograder.text: text from student code is cut to its kind's limit, without writing the whole value out."""
import pytest

from autograder.text import LIMITS, bounded_repr, clip


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
