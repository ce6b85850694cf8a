"""autograder.checks.expect: the plain-data readers and comparisons the checks build their verdicts on."""
import math

import pytest
import torch

from autograder.checks import expect


def test_max_abs_diff_counts_nan_and_inf_only_when_they_disagree():
    a = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    assert expect.max_abs_diff(a, a.clone()) == 0.0
    assert expect.max_abs_diff(a, torch.tensor([1.0, 0.0, float("inf"), 2.0])) == math.inf
    assert expect.max_abs_diff(a, torch.tensor([1.5, float("nan"), float("inf"), 2.0])) == 0.5
    assert expect.max_abs_diff(a, a[:3]) == math.inf  # shapes differ


def test_max_abs_diff_can_round_the_expected_value_first():
    want = torch.tensor([1.0 + 2**-12], dtype=torch.float64)  # not a float16 number
    got = want.half()
    assert expect.max_abs_diff(got, want) > 0 and expect.max_abs_diff(got, want, round_to=torch.float16) == 0


def test_number_and_shown_read_described_values():
    assert expect.number({"type": "Tensor", "value": torch.tensor(0.25)}) == 0.25
    assert expect.number({"type": "str", "value": "0.25"}) is None
    assert expect.shown({"type": "Tensor", "dtype": "float16", "value": torch.zeros(2, 3, dtype=torch.float16)}) == \
        "a float16 tensor of shape (2, 3)"
    assert expect.shown({"type": "tuple", "length": 1, "items": ({"type": "int", "value": 3},)}) == "(3,)"
    assert expect.shown({"type": "Widget"}) == "an object of type Widget"


def test_a_type_is_read_from_the_value_that_came_back_not_from_the_probes_word():
    """The probe's "type" and "dtype" are reports (checks/answers.py): a tensor said to be a float is a tensor."""
    assert expect.kind({"type": "float", "value": torch.tensor(0.25)}) == "Tensor"
    assert expect.kind({"type": "bool", "value": 1}) == "int"
    assert expect.kind({"type": "tuple", "items": [{"type": "float", "value": 1.0}], "length": 1}) == "list"
    assert expect.kind({"type": "float", "value": None}) == "NoneType"
    assert expect.kind({"type": "generator", "value": None}) == "generator"
    assert expect.shown({"type": "Tensor", "dtype": "float32", "value": torch.zeros(2, dtype=torch.bfloat16)}) == \
        "a bfloat16 tensor of shape (2,)"


def test_tensor_list_diff_names_where_the_lists_differ():
    want = [torch.zeros(2), None, torch.ones(3)]
    assert expect.tensor_list_diff([torch.zeros(2), None, torch.ones(3)], want) == (0.0, "")
    assert expect.tensor_list_diff([torch.zeros(2), None, torch.ones(3) * 1.5], want) == (0.5, "parameter 2")
    assert expect.tensor_list_diff([torch.zeros(2), torch.zeros(1), torch.ones(3)], want)[0] == math.inf
    assert expect.tensor_list_diff(want[:2], want) == (math.inf, "2 tensors instead of 3")


def test_relative_error_is_measured_against_the_updates_size():
    start, want = [torch.zeros(4)], [torch.ones(4)]
    assert expect.relative_error([torch.ones(4) * 1.1], want, start) == pytest.approx(0.1)
    assert expect.relative_error(start, start, start) == 0.0


def test_generated_inputs_are_seeded_and_in_range():
    values = expect.log_uniform(1000, -30, 5, seed=1)
    assert torch.equal(values, expect.log_uniform(1000, -30, 5, seed=1))
    logs = values.double().abs().log2()
    assert -30 - 1e-6 <= float(logs.min()) and float(logs.max()) <= 5 + 1e-6
    inputs, targets = expect.token_batch_of_lengths([3, 1], vocab=7, seed=0, masked_prefix=1)
    assert inputs.shape == targets.shape == (2, 3)
    assert targets[0].tolist()[0] == -100 and targets[1].tolist() == [-100, -100, -100]


def test_an_oracle_call_is_read_from_the_release_and_a_missing_one_is_named():
    assert expect.call_key("torch_scales", found_infs=(True,)) == expect.call_key("torch_scales", found_infs=(True,))
    assert expect.call_key("torch_scales", found_infs=(True,)) != expect.call_key("torch_scales", found_infs=(False,))
    # test_backoff_on_overflow's call, as the release keyed it (a list and a tuple are one key)
    values = expect._load(expect.EXPECTED_FILE)
    key = expect.call_key("torch_scales", init_scale=1024.0, found_infs=(True, True))
    assert key in values and expect._load(expect.EXPECTED_FILE) is values  # read once, then kept
    got = expect.released("torch_scales", init_scale=1024.0, found_infs=[True, True])
    assert got == values[key] and got is not values[key]  # a fresh copy: a check may change what it gets
    with pytest.raises(LookupError, match="no value of torch_scales"):
        expect.released("torch_scales", found_infs=("not", "a", "released", "call"))
