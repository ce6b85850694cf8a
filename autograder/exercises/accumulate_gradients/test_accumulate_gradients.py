"""Visible checks for accumulate_gradients, against one float64 backward over the whole batch."""
import math

import pytest
import torch

from autograder.checks.compare import as_multiple, has_nan, tensor_list_diff
from autograder.checks.inputs import classification_batch
from autograder.checks.messages import kept_graphs
from autograder.checks.read import kind, number, shown

MODEL = {"arch": "mlp", "sizes": [5, 7, 3], "seed": 2, "dtype": "float64"}


def full_batch(expected, batch, seed=0):
    """(inputs, targets, gradients, loss) of one float64 backward over a batch of `batch` examples."""
    inputs, targets = classification_batch(batch, 5, 3, seed, dtype=torch.float64)
    want, loss = expected("full_batch_grads", MODEL, "cross_entropy", inputs, targets)
    return inputs, targets, want, loss


def compare(student, expected, batch, micro, stale=False, seed=0, at_most=None):
    inputs, targets, want, loss = full_batch(expected, batch, seed)
    out = student.run("accumulate_gradients", model=MODEL, inputs=inputs, targets=targets, loss="cross_entropy",
                      micro_batch_size=micro, stale_grads=stale, at_most=at_most)
    diff, where = tensor_list_diff(out["grads"], want, out["names"])
    return out, diff, where, loss


@pytest.mark.behaviour("full_batch_gradient")
@pytest.mark.parametrize("batch,micro", [(12, 4), (10, 4)])
def test_matches_one_full_batch(student, expected, batch, micro):
    """The accumulated gradient equals one backward over the whole batch"""
    out, diff, where, _ = compare(student, expected, batch, micro)
    assert diff < 1e-9, (
        f"accumulate_gradients(batch of {batch}, micro_batch_size={micro}): grads differ from one full batch "
        f"by {diff:.2g} in {where}. {why_grads_differ(student, expected, out, batch, micro)}")


def why_grads_differ(student, expected, out, batch, micro) -> str:
    """What the wrong gradients show of their cause: none left, a multiple of the full batch's (a weighting), or
    the last micro-batch's alone (as the student's own code computes it on that micro-batch)."""
    inputs, targets, want, _ = full_batch(expected, batch)
    got = out["grads"]
    last = batch % micro or micro
    if out["batches"] and sum(out["batches"]) < batch:
        return (f"The model saw only {sum(out['batches'])} of the {batch} examples (batches of {out['batches']}): "
                f"the loop stopped before the last, smaller micro-batch of {last}. Hint: "
                "range(0, batch size, micro_batch_size) covers it.")
    if all(g is None or not bool(g.any()) for g in got):
        return ("After the call every .grad is None or zero: nothing is left of the backward passes. Zero the "
                "gradients once, before the loop, never after it.")
    multiple = as_multiple(got, want)
    if multiple is not None:
        factor, flat_got, flat_want = multiple
        if float((flat_got - factor * flat_want).abs().max()) < 1e-9:
            return (f"They are {factor:.3g} times the full batch's: weight each micro-batch's loss by its share of "
                    "the batch (its size / batch size), so that the shares add up to 1.")
        try:
            alone = student.run("accumulate_gradients", model=MODEL, inputs=inputs[batch - last:],
                                targets=targets[batch - last:], loss="cross_entropy", micro_batch_size=micro)["grads"]
        except AssertionError:  # it fails on one micro-batch too: nothing more to learn here
            alone = None
        share_of_last = [None if g is None else g * last / batch for g in alone or []]
        if alone is not None and tensor_list_diff(got, share_of_last)[0] < 1e-9:
            return ("They are the last micro-batch's gradient alone (times its share): the earlier micro-batches' "
                    "gradients were thrown away. Zero the gradients once, before the loop, not inside it.")
    return (f"The last micro-batch has {last} examples: did you weight each micro-batch's loss by its share "
            "of the batch (its size / batch size)?" if last != micro else
            "Each micro-batch's gradient must add into .grad, weighted by its share of the batch (its size / "
            "batch size).")


@pytest.mark.behaviour("micro_batches")
def test_never_more_than_micro_batch_size(student, expected):
    """The model never sees more than micro_batch_size examples at once"""
    out, *_ = compare(student, expected, 10, 3, at_most=3)
    free, *_ = compare(student, expected, 10, 3)
    diff, _ = tensor_list_diff(out["grads"], free["grads"])  # the same, unless a call was larger than 3
    assert diff == 0 and out["batches"] and max(out["batches"]) <= 3, (
        f"accumulate_gradients(batch of 10, micro_batch_size=3) called the model on batches of {out['batches']}; "
        "none may be larger than 3"
        + (" (the graded model's first layer returns NaN for a larger call, and the gradients came back NaN)"
           if has_nan(out["grads"]) else "") + ". Hint: slice inputs[start:start + micro_batch_size].")


@pytest.mark.behaviour("micro_batches")
def test_one_graph_alive_at_a_time(student, expected):
    """Keeps one micro-batch's graph alive at a time: each is freed by its backward() before the next forward"""
    out, *_ = compare(student, expected, 10, 3)
    assert out["graphs_alive"] <= 1, kept_graphs(
        "accumulate_gradients(batch of 10, micro_batch_size=3)", out["graphs_alive"], 4)


@pytest.mark.behaviour("stale_discarded")
def test_stale_gradients_are_discarded(student, expected):
    """Gradients left over from before the call do not leak into the result"""
    out, diff, where, _ = compare(student, expected, 8, 4, stale=True)
    assert diff < 1e-9, (
        f"Every .grad held 3.0 before the call; afterwards the grads differ from the full-batch gradient by "
        f"{diff:.2g} in {where}. Hint: zero the gradients once, at the start (model.zero_grad()).")


@pytest.mark.behaviour("mean_loss")
def test_returns_the_whole_batch_mean_loss(student, expected):
    """Returns the whole-batch mean loss as a Python float"""
    out, _, _, loss = compare(student, expected, 10, 4)
    got = number(out["returned"])
    assert got is not None and math.isclose(got, loss, rel_tol=1e-7), (
        f"accumulate_gradients(batch of 10, micro_batch_size=4) returned {shown(out['returned'])}; the mean loss "
        f"over the whole batch is {loss:.6f}. Hint: add up loss.item() * share, where share = micro-batch size / 10.")
    assert kind(out["returned"]) == "float", (
        f"accumulate_gradients returned {shown(out['returned'])}; return a Python float (loss.item()).")
