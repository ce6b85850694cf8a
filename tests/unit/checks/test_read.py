"""autograder.checks.read: a probe's plain-data answers, read as the student's code returned them."""
import torch

from autograder.checks import read


def test_number_and_shown_read_described_values():
    assert read.number({"type": "Tensor", "value": torch.tensor(0.25)}) == 0.25
    assert read.number({"type": "str", "value": "0.25"}) is None
    assert read.shown({"type": "Tensor", "dtype": "float16", "value": torch.zeros(2, 3, dtype=torch.float16)}) == \
        "a float16 tensor of shape (2, 3)"
    assert read.shown({"type": "tuple", "length": 1, "items": ({"type": "int", "value": 3},)}) == "(3,)"
    assert read.shown({"type": "Widget"}) == "an object of type Widget"


def test_a_type_is_read_from_the_value_that_came_back_not_from_the_probes_word():
    """The probe's "type" and "dtype" are reports (checks/answers.py): a tensor said to be a float is a tensor."""
    assert read.kind({"type": "float", "value": torch.tensor(0.25)}) == "Tensor"
    assert read.kind({"type": "bool", "value": 1}) == "int"
    assert read.kind({"type": "tuple", "items": [{"type": "float", "value": 1.0}], "length": 1}) == "list"
    assert read.kind({"type": "float", "value": None}) == "NoneType"
    assert read.kind({"type": "generator", "value": None}) == "generator"
    assert read.shown({"type": "Tensor", "dtype": "float32", "value": torch.zeros(2, dtype=torch.bfloat16)}) == \
        "a bfloat16 tensor of shape (2,)"
