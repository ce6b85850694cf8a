"""autograder.checks.compare: the differences of tensors the checks build their verdicts on."""
import math

import pytest
import torch

from autograder.checks import compare


def test_max_abs_diff_counts_nan_and_inf_only_when_they_disagree():
    a = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    assert compare.max_abs_diff(a, a.clone()) == 0.0
    assert compare.max_abs_diff(a, torch.tensor([1.0, 0.0, float("inf"), 2.0])) == math.inf
    assert compare.max_abs_diff(a, torch.tensor([1.5, float("nan"), float("inf"), 2.0])) == 0.5
    assert compare.max_abs_diff(a, a[:3]) == math.inf  # shapes differ


def test_max_abs_diff_can_round_the_expected_value_first():
    want = torch.tensor([1.0 + 2**-12], dtype=torch.float64)  # not a float16 number
    got = want.half()
    assert compare.max_abs_diff(got, want) > 0 and compare.max_abs_diff(got, want, round_to=torch.float16) == 0


def test_tensor_list_diff_names_where_the_lists_differ():
    want = [torch.zeros(2), None, torch.ones(3)]
    assert compare.tensor_list_diff([torch.zeros(2), None, torch.ones(3)], want) == (0.0, "")
    assert compare.tensor_list_diff([torch.zeros(2), None, torch.ones(3) * 1.5], want) == (0.5, "parameter 2")
    assert compare.tensor_list_diff([torch.zeros(2), torch.zeros(1), torch.ones(3)], want)[0] == math.inf
    assert compare.tensor_list_diff(want[:2], want) == (math.inf, "2 tensors instead of 3")


def test_relative_error_is_measured_against_the_updates_size():
    start, want = [torch.zeros(4)], [torch.ones(4)]
    assert compare.relative_error([torch.ones(4) * 1.1], want, start) == pytest.approx(0.1)
    assert compare.relative_error(start, start, start) == 0.0


def test_off_reference_gives_the_difference_and_the_references_scale():
    want = [torch.tensor([1.0, -4.0]), torch.tensor([[0.5]])]
    got = [torch.tensor([1.0, -4.5]), torch.tensor([[0.5]])]
    assert compare.off_reference(got, want, ["w", "b"]) == (*compare.tensor_list_diff(got, want, ["w", "b"]), 4.0)
    assert compare.off_reference(want, want, ["w", "b"]) == (0.0, "", 4.0)
