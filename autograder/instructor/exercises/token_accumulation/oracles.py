"""accumulate_token_gradients's oracle: one float64 backward over every counted token.

Computes graded answers, so it stays on the instructor's side (see instructor/oracles.py).
"""
import torch

from ....backends import remembered
from ....checks import models


@remembered
def full_batch_token_grads(model_spec: dict, inputs, targets, ignore_index: int = -100, dtype=torch.float64):
    """The oracle for token-level accumulation: one backward of the mean cross-entropy over every
    counted target token of the whole batch, in float64 by default."""
    model = models.build_model(model_spec).to(dtype)
    logits = model(inputs)  # (B, T, V)
    value = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())


# the oracles its checks may ask for by name (their `expected` fixture)
ORACLES = (full_batch_token_grads,)
