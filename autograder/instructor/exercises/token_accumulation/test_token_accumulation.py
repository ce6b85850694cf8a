"""Hidden checks for accumulate_token_gradients against a float64 full batch and the reference."""
import math
import random

import pytest
import torch

from autograder.checks.compare import has_nan, off_reference, tensor_list_diff
from autograder.checks.inputs import token_batch_of_lengths
from autograder.checks.read import number, shown
from autograder.instructor.exercises.master_weights.oracles import model_values
from autograder.instructor.exercises.token_accumulation.oracles import full_batch_token_grads
from autograder.instructor.exercises import memory

LM64 = {"arch": "lm", "vocab": 13, "dim": 5, "seed": 41, "dtype": "float64"}
LM32 = {"arch": "lm", "vocab": 17, "dim": 8, "seed": 42, "dtype": "float32"}

CASES = [
    pytest.param([1, 16, 2, 15, 1], 2, -100, 0, False, id="lengths 1..16 in 2s"),
    pytest.param([3, 3, 3, 3, 3, 3, 3], 3, -100, 0, False, id="equal lengths, 3+3+1 sequences"),
    pytest.param([14, 1, 1, 1, 1, 1, 1, 1, 1], 4, -100, 0, True, id="one long sequence, stale grads"),
    pytest.param([9, 2, 7, 1], 1, -1, 0, False, id="one sequence at a time, ignore_index=-1"),
    pytest.param([10, 4, 6, 3, 8], 2, 0, 2, True, id="prompt masked, ignore_index=0, stale grads"),
    pytest.param([5, 12, 1], 10, -100, 0, False, id="micro-batch larger than the batch"),
    pytest.param([2, 2, 11, 12], 2, -100, 3, False, id="a micro-batch with no counted token"),
    pytest.param([6, 3, 9, 4], 2, 6, 0, False, id="ignore_index=6, a token id inside the vocabulary"),
]


def batch(lengths, ignore_index, masked_prefix, seed):
    # with ignore_index=0 the pad id must differ from it, or padding would be "counted" as class 0 elsewhere
    return token_batch_of_lengths(lengths, LM64["vocab"], seed, ignore_index=ignore_index,
                                  pad_id=1 if ignore_index == 0 else 0, masked_prefix=masked_prefix)


@pytest.mark.behaviour("token_weighting")
@pytest.mark.parametrize("lengths,micro,ignore_index,masked,stale", CASES)
def test_matches_full_batch(student, lengths, micro, ignore_index, masked, stale):
    """Matches one float64 backward over every counted token, whatever the lengths and the split"""
    inputs, targets = batch(lengths, ignore_index, masked, seed=len(lengths) * 7 + micro)
    got = student.run("token_accumulation", model=LM64, inputs=inputs, targets=targets, micro_batch_size=micro,
                      ignore_index=ignore_index, stale_grads=stale, at_most=micro)
    assert got["raised"] is None, (f"{got['call']} raised {got['raised']['type']}: {got['raised']['message']}; "
                                   "the batch has counted tokens, so it should not raise.")
    assert not has_nan(got["grads"]), (
        f"{got['call']} called the model on more than {micro} sequences at once (batches of {got['batches']}): the "
        "graded model's first layer returns NaN for such a call, and the gradients came back NaN."
        if got["batches"] and max(got["batches"]) > micro else
        f"{got['call']} left NaN in the gradients. " + zero_over_zero(targets, micro, ignore_index))
    want, value = full_batch_token_grads(LM64, inputs, targets, ignore_index)
    diff, where = tensor_list_diff(got["grads"], want, got["names"])
    counts = [int(n) for n in (targets != ignore_index).sum(dim=1)]
    assert diff < 1e-9, (
        f"{got['call']}, counted tokens per sequence {counts}: grads differ from one full batch by {diff:.2g} in "
        f"{where}. Weight each micro-batch by its counted tokens / the batch's counted tokens, and count only "
        f"targets that are not ignore_index={ignore_index}"
        + (" (every .grad held 3.0 before the call: zero them once, before the loop)." if stale else "."))
    assert got["batches"] and max(got["batches"]) <= micro, (
        f"with micro_batch_size={micro} the model saw batches of {got['batches']} sequences.")
    returned = number(got["returned"])
    assert returned is not None and math.isclose(returned, value, rel_tol=1e-7), (
        f"{got['call']} returned {shown(got['returned'])}; the mean loss per counted token is {value:.6f}."
        + (" " + zero_over_zero(targets, micro, ignore_index) if returned is not None and math.isnan(returned) else ""))


def zero_over_zero(targets, micro, ignore_index) -> str:
    """Why a result came back NaN with every call a micro-batch: a micro-batch without a counted token, whose own
    mean loss is 0/0."""
    empty = [i + 1 for i, start in enumerate(range(0, len(targets), micro))
             if not bool((targets[start:start + micro] != ignore_index).any())]
    if not empty:
        return "Hint: look for a division by a count that can be 0, or a log of 0."
    return (f"Micro-batch {', '.join(map(str, empty))} of {len(range(0, len(targets), micro))} holds no counted "
            "token: its own mean loss is 0/0 = NaN, which spreads into every gradient and the sum. Hint: add up "
            "each micro-batch's summed token losses (reduction=\"sum\") and divide by the whole batch's count, "
            "which is never 0 here.")


@pytest.mark.behaviour("token_weighting")
def test_float32_model_matches_reference(student, reference):
    """An fp32 model's accumulated gradients agree with the reference to fp32 rounding"""
    inputs, targets = token_batch_of_lengths([20, 3, 1, 17, 6, 2], LM32["vocab"], seed=5)
    spec = dict(model=LM32, inputs=inputs, targets=targets, micro_batch_size=4)
    got, want = student.run("token_accumulation", **spec), reference.run("token_accumulation", **spec)
    assert got["raised"] is None, f"{got['call']} raised {got['raised']['type']}: {got['raised']['message']}."
    diff, where, scale = off_reference(got["grads"], want["grads"], got["names"])
    assert diff <= 1e-5 * scale, (
        f"{got['call']} on an fp32 model: {where} differs from the reference by {diff:.3g} "
        f"(largest gradient {scale:.3g}).")


@pytest.mark.behaviour("weights_unchanged")
def test_weights_are_not_changed(student):
    """Only gradients change: the weights stay as they were"""
    inputs, targets = batch([4, 9, 2], -100, 0, seed=8)
    got = student.run("token_accumulation", model=LM64, inputs=inputs, targets=targets, micro_batch_size=2,
                      twice=True)
    assert got["raised"] is None, f"{got['call']} raised {got['raised']['type']}: {got['raised']['message']}."
    diff, where = tensor_list_diff(got["weights"], model_values(LM64), got["names"])  # as the probe saw them
    again, where_again = tensor_list_diff(got["grads_again"], got["grads"], got["names"])
    assert diff == 0 and again < 1e-9, (
        f"{got['call']} changed the weights ({where or where_again} moved): called a second time on the same batch, "
        f"its gradients differ from the first call's by {again:.3g}. It computes gradients only, the optimizer "
        "steps elsewhere.")


@pytest.mark.behaviour("empty_batch")
@pytest.mark.parametrize("ignore_index", [-100, 7], ids=["default", "ignore_index=7"])
def test_empty_batch_raises_value_error(student, ignore_index):
    """A batch without any counted token raises ValueError, whatever ignore_index is"""
    inputs = torch.ones(4, 5, dtype=torch.long)
    targets = torch.full((4, 5), ignore_index, dtype=torch.long)
    got = student.run("token_accumulation", model=LM64, inputs=inputs, targets=targets, micro_batch_size=3,
                      ignore_index=None if ignore_index == -100 else ignore_index)
    # that the call returned nothing is a value (none came back); which exception it raised, a report
    assert "returned" not in got and got["raised"] is not None and got["value_error"], (
        f"{got['call']} with every target equal to ignore_index should raise ValueError, but it "
        + (f"returned {shown(got['returned'])}." if got["raised"] is None else
           f"raised {got['raised']['type']}: {got['raised']['message']}."))
    message = (got["raised"] or {}).get("message", "")
    assert len(message.split()) >= 3, (
        f"{got['call']} raised ValueError({message!r}); say why in the message, for example that no target is "
        "counted because every one equals ignore_index, so the student reading it knows what to fix.")


@pytest.mark.behaviour("empty_batch")
def test_empty_batch_raises_before_touching_any_grad(student):
    """The ValueError comes before any .grad is touched: the gradients held before the call are still there"""
    inputs, targets = torch.ones(4, 5, dtype=torch.long), torch.full((4, 5), -100, dtype=torch.long)
    got = student.run("token_accumulation", model=LM64, inputs=inputs, targets=targets, micro_batch_size=3,
                      stale_grads=True)
    kept = all(g is not None and bool((g == 3.0).all()) for g in got.get("grads") or [None])
    assert "returned" not in got and kept, (
        f"Every .grad held 3.0 before {got['call']}, a batch whose every target is ignore_index; "
        + ("the call returned instead of raising ValueError" if "returned" in got else "it raised, but")
        + " the gradients were changed" + ("" if kept else " (zeroed, set to None or NaN)")
        + ". Hint: count the targets and raise ValueError first, before model.zero_grad() or any backward(): a "
        "caller that catches the error keeps its gradients.")


@pytest.mark.behaviour("micro_batches")
def test_one_micro_batch_graph_at_a_time(student):
    """Keeps one micro-batch's graph alive at a time, as measured in the sandbox's memory"""
    inputs, targets = token_batch_of_lengths([memory.LENGTH] * memory.SEQUENCES, memory.VOCAB, seed=45)
    got = student.run("token_accumulation", measure_memory=True, model=memory.WIDE_LM, inputs=inputs,
                      targets=targets, micro_batch_size=memory.MICRO_SEQUENCES)
    memory.assert_one_graph_at_a_time(
        got, f"accumulate_token_gradients({memory.SEQUENCES} sequences of {memory.LENGTH} tokens, "
             f"micro_batch_size={memory.MICRO_SEQUENCES})",
        memory.lm_activation_bytes(), memory.SEQUENCES // memory.MICRO_SEQUENCES,
        memory.MICRO_SEQUENCES)


# ---- scenarios: lengths, splits and ignore_index drawn at random, against one float64 backward ----

def scenario(seed: int) -> dict:
    """A seeded call: 1 to 8 sequences of 1 to 14 tokens, a masked prompt of 0 to 3 targets, ignore_index
    outside the vocabulary (-100, -1) or inside it (0, with padding 1; or a token id), any micro-batch size,
    stale gradients or none; at least one target is counted."""
    rng = random.Random(seed)
    while True:
        lengths = [rng.randint(1, 14) for _ in range(rng.randint(1, 8))]
        masked = rng.choice([0, 0, 1, 3])
        if any(length > masked for length in lengths):
            break
    ignore_index = rng.choice([-100, -1, 0, rng.randint(2, LM64["vocab"] - 1)])
    inputs, targets = batch(lengths, ignore_index, masked, seed=500 + seed)
    micro = rng.choice([1, 2, 3, len(lengths), len(lengths) + 2])
    return dict(model=LM64, inputs=inputs, targets=targets, micro_batch_size=micro, ignore_index=ignore_index,
                stale_grads=rng.random() < 0.5)


@pytest.mark.behaviour("token_weighting")
@pytest.mark.parametrize("seed", range(5), ids=[f"scenario {i}" for i in range(5)])
def test_random_scenarios(student, seed):
    """Random lengths, prompts, splits and ignore_index values: one float64 backward over the counted tokens"""
    spec = scenario(seed)
    got = student.run("token_accumulation", **spec)
    assert got["raised"] is None, (f"{got['call']} raised {got['raised']['type']}: {got['raised']['message']}; "
                                   "the batch has counted tokens, so it should not raise.")
    want, _ = full_batch_token_grads(LM64, spec["inputs"], spec["targets"], spec["ignore_index"])
    diff, where = tensor_list_diff(got["grads"], want, got["names"])
    counts = [int(n) for n in (spec["targets"] != spec["ignore_index"]).sum(dim=1)]
    assert diff < 1e-9, (
        f"{got['call']}, counted tokens per sequence {counts}"
        + (", stale .grad before the call" if spec["stale_grads"] else "")
        + f": grads differ from one full-batch backward by {diff:.2g} in {where}. Weight each micro-batch by its "
        f"counted tokens / the batch's, and count only targets that are not ignore_index={spec['ignore_index']}.")
