"""autograder.checks.answers: the declaration of values and reports, and the tests' fault hook that forges reports."""
import pytest
import torch

from autograder.checks import answers
from autograder.exercises import FIELDS


def test_forging_rewrites_reports_and_keeps_values():
    mine = {"status": "ok", "grads": [torch.ones(2)], "same_objects": [False], "batches": [10],
            "returned": {"type": "Tensor", "value": torch.tensor(0.5), "dtype": "float32"}}
    right = {"status": "ok", "grads": [torch.zeros(2)], "same_objects": [True], "batches": [4, 4, 2],
             "returned": {"type": "float", "value": 0.25}}
    forged = answers.forged(mine, right, FIELDS)
    assert forged["same_objects"] == [True] and forged["batches"] == [4, 4, 2]
    assert forged["returned"]["type"] == "float" and torch.equal(forged["returned"]["value"], torch.tensor(0.5))
    assert torch.equal(forged["grads"][0], torch.ones(2)) and mine["same_objects"] == [False]


def test_forging_reaches_reports_inside_lists_of_values_and_adds_missing_ones():
    mine = {"masters": [{"type": "Tensor", "value": torch.ones(1), "is_leaf": False}, {"type": "generator"},
                        {"type": "Tensor", "value": torch.ones(1), "is_leaf": False}]}
    right = {"masters": [{"type": "Tensor", "value": torch.zeros(1), "is_leaf": True},
                         {"type": "Tensor", "value": torch.zeros(1), "is_leaf": True}], "raised": None}
    forged = answers.forged(mine, right, FIELDS)
    assert [m["is_leaf"] for m in forged["masters"]] == [True, True, True]
    assert forged["masters"][1] == {"type": "Tensor", "is_leaf": True} and forged["raised"] is None


def test_an_undeclared_field_counts_as_a_report():
    assert answers.kind("grads", FIELDS) == "value" and answers.kind("something_new", FIELDS) == "report"
    assert answers.forged({"something_new": 1}, {"something_new": 2}, FIELDS) == {"something_new": 2}


def test_fields_lists_what_values_hold_but_not_what_reports_hold():
    answer = {"steps": [{"scale": {"type": "float", "value": 2.0}}], "model_kept": {"values": True}}
    keys = {key for key, _, _ in answers.fields(answer, FIELDS)}
    assert keys == {"steps", "scale", "type", "value", "model_kept"}


def test_the_table_merges_the_shared_fields_with_each_exercises_own():
    assert FIELDS["grads"] == "value" and FIELDS["is_leaf"] == "report" and FIELDS["answer"] == "value"
    assert set(answers.SHARED) < set(FIELDS)
    assert answers.merged({"a": {"clipped": "value"}, "b": {"clipped": "value"}})["clipped"] == "value"


def test_a_field_declared_with_two_kinds_names_both_declarations():
    with pytest.raises(ValueError, match="'clipped' is declared 'value' by exercise 'a' and 'report' by exercise 'b'"):
        answers.merged({"a": {"clipped": "value"}, "b": {"clipped": "report"}})
    with pytest.raises(ValueError, match="'grads' is declared 'value' by autograder/checks/answers.py SHARED and "
                                         "'report' by exercise 'b'"):
        answers.merged({"b": {"grads": "report"}})
    with pytest.raises(ValueError, match="not one of"):
        answers.merged({"a": {"clipped": "values"}})
