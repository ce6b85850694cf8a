"""The oracles: what each exercise must produce, computed with torch itself.

They compute graded answers (a float64 full-batch gradient, GradScaler's own scale updates,
fp32 master copies), so they stay on the instructor's side and never ship to students. The hidden
checks call them directly; the visible checks read their values for the visible checks' fixed
inputs from `autograder/checks/expected.pt`, written by `python -m autograder release`
(instructor/expected.py).
"""
import functools

import torch

from ..backends import recall, value_key
from ..checks import harness


def remembered(oracle):
    """An oracle whose answer depends only on its arguments: computed once per grading process and kept for
    the next submission's checks, which ask the same seeded questions (each caller gets its own copy)."""
    answers = {}

    @functools.wraps(oracle)
    def answer(*args, **kwargs):
        return recall(answers, value_key(args, kwargs), lambda: oracle(*args, **kwargs))
    return answer


@remembered
def full_batch_grads(model_spec: dict, loss: str, inputs, targets, dtype=torch.float64):
    """The oracle for accumulation: one backward over the whole batch, in float64 by default."""
    model = harness.build_model(model_spec).to(dtype)
    x = inputs.to(dtype) if inputs.is_floating_point() else inputs
    y = targets.to(dtype) if targets.is_floating_point() else targets
    value = harness.LOSSES[loss](model(x), y)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())


@remembered
def full_batch_token_grads(model_spec: dict, inputs, targets, ignore_index: int = -100, dtype=torch.float64):
    """The oracle for token-level accumulation: one backward of the mean cross-entropy over every
    counted target token of the whole batch, in float64 by default."""
    model = harness.build_model(model_spec).to(dtype)
    logits = model(inputs)  # (B, T, V)
    value = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())


@remembered
def torch_scales(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 found_infs=()):
    """The oracle for the dynamic scaler: torch.amp.GradScaler's own update kernel."""
    scale = torch.tensor([float(init_scale)], dtype=torch.float32)
    tracker = torch.zeros(1, dtype=torch.int32)
    scales = [float(scale)]
    for found in found_infs:
        torch._amp_update_scale_(scale, tracker, torch.tensor([1.0 if found else 0.0]),
                                 growth_factor, backoff_factor, growth_interval)
        scales.append(float(scale))
    return scales


@remembered
def model_values(model_spec: dict):
    """A model's initial parameter values, as plain tensors in its own dtype."""
    return [p.detach().clone() for p in harness.build_model(model_spec).parameters()]


@remembered
def trained_grads(model_spec: dict, inputs, values=None):
    """The oracle for a model left as it should be: its gradients after one forward and backward on `inputs`
    (the loss the probes train it with, in the model's own dtype), its parameters first set to `values`
    rounded to their dtype, if given."""
    model = harness.build_model(model_spec)
    with torch.no_grad():
        for p, v in zip(model.parameters(), values or []):
            p.copy_(v)
    model(inputs).float().square().mean().backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()]


def fp32_masters(model_spec: dict):
    """fp32 copies of a model's initial values, as plain tensors to send to a probe."""
    return [v.float() for v in model_values(model_spec)]


# the oracles the visible checks may ask for, by name (checks.expect.expected)
ORACLES = {f.__name__: f for f in (full_batch_grads, full_batch_token_grads, torch_scales, model_values,
                                   fp32_masters, trained_grads)}
