"""The master weights' oracles: a model's initial values, fp32 copies of them, and its gradients.

Computes graded answers, so it stays on the instructor's side (see instructor/oracles.py).
"""
import torch

from ....backends import remembered
from ....checks import models


@remembered
def model_values(model_spec: dict):
    """A model's initial parameter values, as plain tensors in its own dtype."""
    return [p.detach().clone() for p in models.build_model(model_spec).parameters()]


@remembered
def trained_grads(model_spec: dict, inputs, values=None):
    """The oracle for a model left as it should be: its gradients after one forward and backward on `inputs`
    (the loss the probes train it with, in the model's own dtype), its parameters first set to `values`
    rounded to their dtype, if given."""
    model = models.build_model(model_spec)
    with torch.no_grad():
        for p, v in zip(model.parameters(), values or []):
            p.copy_(v)
    model(inputs).float().square().mean().backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()]


def fp32_masters(model_spec: dict):
    """fp32 copies of a model's initial values, as plain tensors to send to a probe."""
    return [v.float() for v in model_values(model_spec)]


# the oracles its checks may ask for by name (their `expected` fixture)
ORACLES = (model_values, trained_grads, fp32_masters,)
