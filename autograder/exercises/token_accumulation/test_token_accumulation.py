"""Visible checks for accumulate_token_gradients, against one float64 backward over every
counted token of the whole batch."""
import math

import pytest
import torch

from autograder.checks.compare import as_multiple, has_nan, tensor_list_diff
from autograder.checks.inputs import token_batch_of_lengths
from autograder.checks.messages import kept_graphs
from autograder.checks.read import kind, number, shown

LM = {"arch": "lm", "vocab": 11, "dim": 6, "seed": 4, "dtype": "float64"}
# very different lengths: micro-batches of 2 hold 13, 3 and 18 counted tokens
LENGTHS = [12, 1, 2, 1, 9, 9]
WEIGHTING_HINT = ("Weight each micro-batch by its share of the counted tokens: add up the per-token losses of the "
                  "micro-batch (reduction=\"sum\") and divide by the number of counted tokens in the whole batch. "
                  "Dividing each micro-batch's mean by the number of micro-batches (or weighting by examples) gives "
                  "a short sequence's tokens more weight than a long one's: the Hugging Face bug of October 2024.")


def run_case(student, expected, lengths=LENGTHS, micro=2, stale=False, seed=0, at_most=None):
    """The student's answer, the batch, and the float64 full-batch (gradients, mean loss) for it."""
    inputs, targets = token_batch_of_lengths(lengths, LM["vocab"], seed)
    want = expected("full_batch_token_grads", LM, inputs, targets)
    out = student.run("token_accumulation", model=LM, inputs=inputs, targets=targets, micro_batch_size=micro,
                      stale_grads=stale, at_most=at_most)
    return out, targets, want


def returned_normally(out):
    raised = out["raised"]
    assert raised is None, (f"{out['call']} raised {raised['type']}: {raised['message']}"
                            + (f" ({raised['where']})" if raised.get("where") else "")
                            + ". Only a batch without any counted token should raise.")


@pytest.mark.behaviour("token_weighting")
def test_matches_one_full_batch_with_uneven_lengths(student, expected):
    """The accumulated gradient equals one backward over all counted tokens, with very uneven sequences"""
    out, targets, (want, _) = run_case(student, expected)
    returned_normally(out)
    diff, where = tensor_list_diff(out["grads"], want, out["names"])
    assert diff < 1e-9, (
        f"{out['call']}, sequences of lengths {LENGTHS} padded with ignore_index: grads differ from one backward "
        f"over the whole batch by {diff:.2g} in {where}. {why_grads_differ(out['grads'], want, targets)}")


def why_grads_differ(got, want, targets) -> str:
    """Gradients that are the right ones times counted tokens / all target positions divided by every position,
    padding included; otherwise, the weighting hint."""
    multiple = as_multiple(got, want)
    if multiple is not None:
        factor, flat_got, flat_want = multiple
        counted, positions = int((targets != -100).sum()), targets.numel()
        if float((flat_got - factor * flat_want).abs().max()) < 1e-9 and math.isclose(factor, counted / positions):
            return (f"They are {counted}/{positions} of the right ones: the loss was divided by all {positions} "
                    f"target positions, padding included, instead of the {counted} counted tokens. Hint: count "
                    "the targets that are not ignore_index.")
    return WEIGHTING_HINT


@pytest.mark.behaviour("mean_loss")
def test_returns_the_mean_over_counted_tokens(student, expected):
    """Returns the whole batch's mean loss per counted token, as a Python float"""
    out, targets, (_, loss) = run_case(student, expected)
    returned_normally(out)
    got = number(out["returned"])
    assert got is not None and math.isclose(got, loss, rel_tol=1e-7), (
        f"{out['call']} returned {shown(out['returned'])}; the mean cross-entropy over the "
        f"{int((targets != -100).sum())} counted tokens of the whole batch is {loss:.6f}. Hint: add up the summed "
        "token losses of every micro-batch, and divide once by the whole batch's count.")
    assert kind(out["returned"]) == "float", f"{out['call']} returned {shown(out['returned'])}; return a Python float."


@pytest.mark.behaviour("micro_batches")
def test_never_more_than_micro_batch_size_and_stale_grads_discarded(student, expected):
    """At most micro_batch_size sequences at a time, and gradients from before the call are discarded"""
    # equal lengths and equal micro-batches: here every weighting agrees, so only the stale gradients can differ
    out, _, (want, _) = run_case(student, expected, lengths=[5] * 8, micro=4, stale=True, at_most=4)
    returned_normally(out)
    assert not has_nan(out["grads"]) and out["batches"] and max(out["batches"]) <= 4, (
        f"{out['call']} called the model on batches of {out['batches']} sequences; none may hold more than 4 (the "
        "graded model's first layer returns NaN for a larger call).")
    diff, where = tensor_list_diff(out["grads"], want, out["names"])
    assert diff < 1e-9, (
        f"Every .grad held 3.0 before {out['call']}; afterwards the grads differ from the full-batch gradient by "
        f"{diff:.2g} in {where}. Hint: zero the gradients once, before the loop.")


@pytest.mark.behaviour("micro_batches")
def test_one_graph_alive_at_a_time(student, expected):
    """Keeps one micro-batch's graph alive at a time: each is freed by its backward() before the next forward"""
    out, _, _ = run_case(student, expected)
    returned_normally(out)
    assert out["graphs_alive"] <= 1, kept_graphs(out["call"], out["graphs_alive"], 3)


@pytest.mark.behaviour("empty_batch")
def test_batch_without_counted_tokens_raises_value_error(student):
    """A batch in which every target is ignore_index raises ValueError"""
    inputs = torch.zeros(3, 4, dtype=torch.long)
    targets = torch.full((3, 4), -100, dtype=torch.long)
    out = student.run("token_accumulation", model=LM, inputs=inputs, targets=targets, micro_batch_size=2)
    raised = out["raised"]
    # that the call returned nothing is a value (none came back); which exception it raised, a report
    assert "returned" not in out and raised is not None and out["value_error"], (
        f"{out['call']} with every target equal to ignore_index "
        + (f"returned {shown(out['returned'])}" if raised is None else f"raised {raised['type']}: {raised['message']}")
        + "; the mean over zero tokens is undefined, so raise ValueError with a message that says so. "
        "Hint: count the targets that are not ignore_index before the loop.")
