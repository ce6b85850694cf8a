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
