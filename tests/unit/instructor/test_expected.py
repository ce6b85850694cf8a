"""autograder.instructor.expected: `same` tells released values apart bit for bit, dtype and shape included
(tests/test_release.py checks that expected.pt is up to date)."""
import torch

from autograder.instructor.expected import same


def test_same_is_exact_equality_of_plain_data():
    a = {"k": [torch.tensor([1.0, float("nan")]), (1, "x")]}
    assert same(a, {"k": [torch.tensor([1.0, float("nan")]), (1, "x")]})  # NaN bits equal NaN bits
    assert not same(a, {"k": [torch.tensor([1.0, float("nan")], dtype=torch.float64), (1, "x")]})
    assert not same(a, {"k": [torch.tensor([[1.0, float("nan")]]), (1, "x")]})
    assert not same(a, {"k": [torch.tensor([1.0, float("nan")]), [1, "x"]]})  # a list is not a tuple
    assert not same(torch.tensor(0.0), torch.tensor(-0.0)) and not same(1, 1.0)


def test_float64_values_agree_to_their_last_bits_and_a_nan_is_a_nan_in_a_tensor_and_in_a_float():
    """A loss recorded as a Python float and one in a float64 tensor are held alike: a NaN (a diverged loss) is
    the same as itself, not a stale value that every release would write again."""
    nan = float("nan")
    assert same(nan, nan) and same([1.0, nan], [1.0, nan])
    assert same(torch.tensor([1.0, nan], dtype=torch.float64), torch.tensor([1.0, nan], dtype=torch.float64))
    assert not same(nan, 1.0) and not same(1.0, nan) and not same(nan, float("inf"))
    assert same(1.0, 1.0 + 1e-15) and not same(1.0, 1.0 + 1e-9)
    assert same(torch.tensor([1.0], dtype=torch.float64), torch.tensor([1.0 + 1e-15], dtype=torch.float64))
