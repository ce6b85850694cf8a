"""Hidden checks for accumulate_gradients against a float64 full batch and the reference."""
import math
import random

import pytest
import torch

from autograder.checks.compare import has_nan, off_reference, tensor_list_diff
from autograder.checks.inputs import classification_batch, regression_batch, token_batch
from autograder.checks.read import kind, number, shown
from autograder.instructor.exercises.accumulate_gradients.oracles import full_batch_grads
from autograder.instructor.exercises.master_weights.oracles import model_values
from autograder.instructor.exercises import memory

MLP64 = {"arch": "mlp", "sizes": [6, 10, 4], "seed": 21, "dtype": "float64"}
DEEP64 = {"arch": "mlp", "sizes": [3, 8, 8, 2], "seed": 22, "dtype": "float64", "act": "tanh"}
EMBED64 = {"arch": "embed", "vocab": 17, "dim": 5, "classes": 3, "seed": 23, "dtype": "float64"}
MLP32 = {"arch": "mlp", "sizes": [6, 12, 4], "seed": 24, "dtype": "float32"}


def batch_for(model, n, seed):
    if model["arch"] == "embed":
        return token_batch(n, 4, model["vocab"], model["classes"], seed)
    if model is DEEP64:
        return regression_batch(n, 3, 2, seed, dtype=torch.float64)
    return classification_batch(n, model["sizes"][0], model["sizes"][-1], seed,
                                dtype=getattr(torch, model["dtype"]))


CASES = [
    pytest.param(MLP64, "cross_entropy", 13, 5, False, id="13 split 5+5+3"),
    pytest.param(MLP64, "cross_entropy", 7, 1, True, id="7 split into ones, stale grads"),
    pytest.param(MLP64, "cross_entropy", 9, 9, False, id="micro-batch = batch"),
    pytest.param(MLP64, "cross_entropy", 6, 10, True, id="micro-batch larger than batch, stale grads"),
    pytest.param(DEEP64, "mse", 11, 3, False, id="mse, 11 split 3+3+3+2"),
    pytest.param(EMBED64, "cross_entropy", 10, 4, True, id="token ids, 10 split 4+4+2, stale grads"),
]


@pytest.mark.behaviour("any_split")
@pytest.mark.parametrize("model,loss,n,micro,stale", CASES)
def test_matches_full_batch(student, model, loss, n, micro, stale):
    """Matches one float64 backward over the whole batch, whatever the split"""
    inputs, targets = batch_for(model, n, seed=n * 31 + micro)
    got = student.run("accumulate_gradients", model=model, inputs=inputs, targets=targets, loss=loss,
                      micro_batch_size=micro, stale_grads=stale, at_most=micro)
    want, value = full_batch_grads(model, loss, inputs, targets)
    diff, where = tensor_list_diff(got["grads"], want, got["names"])
    assert not has_nan(got["grads"]), (
        f"accumulate_gradients(batch of {n}, micro_batch_size={micro}) called the model on more than {micro} examples "
        f"at once (batches of {got['batches']}): the graded model's first layer returns NaN for such a call, and "
        "the gradients came back NaN. Hint: slice inputs[start:start + micro_batch_size].")
    last = n % micro or min(micro, n)
    assert diff < 1e-9, (
        f"accumulate_gradients(batch of {n}, micro_batch_size={micro}, {loss}): grads differ from one full "
        f"batch by {diff:.2g} in {where}. The last micro-batch has {last} examples: weight each micro-batch's "
        "loss by its size / batch size"
        + (" (and every .grad held 3.0 before the call: zero them once, before the loop)." if stale else "."))
    assert got["batches"] and max(got["batches"]) <= micro, (
        f"with micro_batch_size={micro} the model saw batches of {got['batches']}.")
    returned = number(got["returned"])
    assert returned is not None and math.isclose(returned, value, rel_tol=1e-7, abs_tol=1e-12), (
        f"accumulate_gradients returned {shown(got['returned'])}; the whole-batch mean loss is {value:.6f}.")


@pytest.mark.behaviour("full_batch_gradient")
def test_float32_model_matches_reference(student, reference):
    """An fp32 model's accumulated gradients agree with the reference to fp32 rounding"""
    inputs, targets = batch_for(MLP32, 14, seed=3)
    spec = dict(model=MLP32, inputs=inputs, targets=targets, loss="cross_entropy", micro_batch_size=4)
    got, want = student.run("accumulate_gradients", **spec), reference.run("accumulate_gradients", **spec)
    diff, where, scale = off_reference(got["grads"], want["grads"], got["names"])
    assert diff <= 1e-5 * scale, (
        f"accumulate_gradients on an fp32 model (batch 14, micro-batches of 4): {where} differs from the "
        f"reference by {diff:.3g} (largest gradient {scale:.3g}).")


@pytest.mark.behaviour("stale_discarded")
def test_weights_are_not_changed(student):
    """Only gradients change: the weights stay as they were, so a second call gives the same gradients"""
    inputs, targets = batch_for(MLP64, 8, seed=4)
    got = student.run("accumulate_gradients", model=MLP64, inputs=inputs, targets=targets, loss="cross_entropy",
                      micro_batch_size=3, twice=True)
    moved, where = tensor_list_diff(got["weights"], model_values(MLP64), got["names"])  # as the probe saw them
    again, where_again = tensor_list_diff(got["grads_again"], got["grads"], got["names"])
    assert moved == 0 and again < 1e-9, (
        f"accumulate_gradients changed the weights ({where or where_again} moved): called a second time on the "
        f"same batch, its gradients differ from the first call's by {again:.3g}. It computes gradients only, the "
        "optimizer steps elsewhere.")


@pytest.mark.behaviour("mean_loss")
def test_float_return_type(student):
    """Returns a Python float for an uneven split too"""
    inputs, targets = batch_for(MLP64, 5, seed=6)
    got = student.run("accumulate_gradients", model=MLP64, inputs=inputs, targets=targets, loss="cross_entropy",
                      micro_batch_size=2)
    assert kind(got["returned"]) == "float", f"accumulate_gradients returned {shown(got['returned'])}, not a float."


@pytest.mark.behaviour("micro_batches")
def test_one_micro_batch_graph_at_a_time(student):
    """Keeps one micro-batch's graph alive at a time, as measured in the sandbox's memory"""
    inputs, targets = classification_batch(memory.BATCH, memory.FEATURES, memory.CLASSES, seed=43)
    got = student.run("accumulate_gradients", measure_memory=True, model=memory.WIDE, inputs=inputs,
                      targets=targets, loss="cross_entropy", micro_batch_size=memory.MICRO)
    memory.assert_one_graph_at_a_time(
        got, f"accumulate_gradients(batch of {memory.BATCH}, micro_batch_size={memory.MICRO})",
        memory.activation_bytes(), memory.BATCH // memory.MICRO, memory.MICRO)


# ---- scenarios: the contract's dimensions drawn at random, against one float64 backward over the whole batch ----

def scenario(seed: int) -> dict:
    """A seeded call: an MLP (ReLU or tanh, cross-entropy or MSE) or an embedding model fed token ids, a batch
    of 1 to 15, a micro-batch of 1, uneven, equal to or larger than the batch, and one of: a frozen parameter,
    one the forward never uses, stale gradients (only where every parameter gets a gradient: a leftover .grad
    zeroed rather than set to None is also right), or none of these."""
    rng = random.Random(seed)
    n = rng.randint(1, 15)
    if rng.random() < 0.3:
        model = {"arch": "embed", "vocab": 11, "dim": 4, "classes": 3, "seed": 300 + seed, "dtype": "float64"}
        loss, frozen = "cross_entropy", "head.bias"
        inputs, targets = token_batch(n, rng.randint(1, 5), model["vocab"], model["classes"], 400 + seed)
    else:
        sizes = [rng.randint(2, 6), rng.randint(3, 9), rng.randint(2, 4)]
        model = {"arch": "mlp", "sizes": sizes, "seed": 300 + seed, "dtype": "float64",
                 "act": rng.choice(["relu", "tanh"])}
        loss, frozen = rng.choice(["cross_entropy", "mse"]), "0.bias"
        make = classification_batch if loss == "cross_entropy" else regression_batch
        inputs, targets = make(n, sizes[0], sizes[-1], 400 + seed, dtype=torch.float64)
    extra = rng.choice(["frozen", "unused", "stale", "none"])
    if extra == "frozen":
        model["frozen"] = frozen
    if extra == "unused":
        model["unused"] = True
    micro = rng.choice([1, 2, 3, max(1, n - 1), n, n + 2])
    return dict(model=model, inputs=inputs, targets=targets, loss=loss, micro_batch_size=micro,
                stale_grads=extra == "stale")


@pytest.mark.behaviour("any_split")
@pytest.mark.parametrize("seed", range(5), ids=[f"scenario {i}" for i in range(5)])
def test_random_scenarios(student, seed):
    """Random models, losses, splits, frozen and unused parameters: one float64 backward's gradients"""
    spec = scenario(seed)
    got = student.run("accumulate_gradients", **spec)
    want, _ = full_batch_grads(spec["model"], spec["loss"], spec["inputs"], spec["targets"])
    diff, where = tensor_list_diff(got["grads"], want, got["names"])
    model = spec["model"]
    what = (f"accumulate_gradients({'embedding model fed token ids' if model['arch'] == 'embed' else 'MLP'}, "
            f"{spec['loss']}, batch of {len(spec['inputs'])}, micro_batch_size={spec['micro_batch_size']}"
            + (f", {model['frozen']} frozen" if "frozen" in model else "")
            + (", a parameter the forward never uses" if model.get("unused") else "")
            + (", stale .grad before the call" if spec["stale_grads"] else "") + ")")
    assert diff < 1e-9, (f"{what}: grads differ from one full-batch backward by {diff:.2g} in {where}. A parameter "
                         "that gets no gradient keeps .grad None; each micro-batch's loss is weighted by its share.")
