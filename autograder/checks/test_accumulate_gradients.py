"""Visible checks for Exercise 5: accumulate_gradients, against one float64 backward over the whole batch."""
import math

import pytest
import torch

from autograder.checks.expect import classification_batch, expected, number, shown, tensor_list_diff

MODEL = {"arch": "mlp", "sizes": [5, 7, 3], "seed": 2, "dtype": "float64"}


def compare(student, batch, micro, stale=False, seed=0):
    inputs, targets = classification_batch(batch, 5, 3, seed, dtype=torch.float64)
    want, loss = expected("full_batch_grads", MODEL, "cross_entropy", inputs, targets)
    out = student.run("accumulate_gradients", model=MODEL, inputs=inputs, targets=targets, loss="cross_entropy",
                      micro_batch_size=micro, stale_grads=stale)
    diff, where = tensor_list_diff(out["grads"], want, out["names"])
    return out, diff, where, loss


@pytest.mark.parametrize("batch,micro", [(12, 4), (10, 4)])
def test_matches_one_full_batch(student, batch, micro):
    """The accumulated gradient equals one backward over the whole batch"""
    out, diff, where, _ = compare(student, batch, micro)
    last = batch % micro or micro
    hint = (f"The last micro-batch has {last} examples: did you weight each micro-batch's loss by its share "
            "of the batch (its size / batch size)?" if last != micro else
            "Did you divide each micro-batch's loss so that the sum is the mean over the whole batch?")
    assert diff < 1e-9, (
        f"accumulate_gradients(batch of {batch}, micro_batch_size={micro}): grads differ from one full batch "
        f"by {diff:.2g} in {where}. {hint}")


def test_never_more_than_micro_batch_size(student):
    """The model never sees more than micro_batch_size examples at once"""
    out, *_ = compare(student, 10, 3)
    assert out["batches"] and max(out["batches"]) <= 3, (
        f"accumulate_gradients(batch of 10, micro_batch_size=3) called the model on batches of {out['batches']}; "
        "none may be larger than 3. Hint: slice inputs[start:start + micro_batch_size].")


def test_stale_gradients_are_discarded(student):
    """Gradients left over from before the call do not leak into the result"""
    out, diff, where, _ = compare(student, 8, 4, stale=True)
    assert diff < 1e-9, (
        f"Every .grad held 3.0 before the call; afterwards the grads differ from the full-batch gradient by "
        f"{diff:.2g} in {where}. Hint: zero the gradients once, at the start (model.zero_grad()).")


def test_returns_the_whole_batch_mean_loss(student):
    """Returns the whole-batch mean loss as a Python float"""
    out, _, _, loss = compare(student, 10, 4)
    got = number(out["returned"])
    assert got is not None and math.isclose(got, loss, rel_tol=1e-7), (
        f"accumulate_gradients(batch of 10, micro_batch_size=4) returned {shown(out['returned'])}; the mean loss "
        f"over the whole batch is {loss:.6f}. Hint: add up loss.item() * share, where share = micro-batch size / 10.")
    assert out["returned"]["type"] == "float", (
        f"accumulate_gradients returned {shown(out['returned'])}; return a Python float (loss.item()).")
