"""accumulate_gradients's oracle: one float64 backward over the whole batch.

Computes graded answers, so it stays on the instructor's side (see instructor/oracles.py).
"""
import torch

from ....backends import remembered
from ....checks import models


@remembered
def full_batch_grads(model_spec: dict, loss: str, inputs, targets, dtype=torch.float64):
    """The oracle for accumulation: one backward over the whole batch, in float64 by default."""
    model = models.build_model(model_spec).to(dtype)
    x = inputs.to(dtype) if inputs.is_floating_point() else inputs
    y = targets.to(dtype) if targets.is_floating_point() else targets
    value = models.LOSSES[loss](model(x), y)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())


# the oracles its checks may ask for by name (their `expected` fixture)
ORACLES = (full_batch_grads,)
