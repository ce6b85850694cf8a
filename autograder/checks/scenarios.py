"""What the checks send beside the code's own inputs so that a behaviour shows in values (checks/answers.py): a
later use of what the code made, drawn from a seed the check keeps. Runs in the checking process, never in the
sandbox; it computes no exercise's answer, only the inputs and how far what came back is from plain arithmetic.
"""
import math

import torch

from .compare import max_abs_diff, moved_by
from .models import build_model

# SGD on the masters (probe make_master_params): 4 steps of -LR * pull, |pull| in [0.5, 1]: each step is below
# half of fp16's resolution at most weights (2^-12 at 0.25), so only an fp32 master adds them all up
LR, STEPS = 2.0 ** -14, 4


def model_inputs(spec: dict, n: int, seed: int) -> torch.Tensor:
    """n inputs for a model spec: features in the model's dtype, or token ids (4 a sequence)."""
    g = torch.Generator().manual_seed(seed)
    if spec["arch"] == "mlp":
        return torch.randn(n, spec["sizes"][0], generator=g).to(getattr(torch, spec.get("dtype", "float32")))
    return torch.randint(0, spec["vocab"], (n, 4), generator=g)


def drawn_like(values: list, seed: int, low: float = 0.5, high: float = 1.0) -> list:
    """fp32 tensors shaped as `values`: magnitudes uniform in [low, high], signs at random."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for v in values:
        size = torch.rand(v.shape, generator=g) * (high - low) + low
        out.append(torch.where(torch.rand(v.shape, generator=g) < 0.5, -size, size))
    return out


def master_scenario(spec: dict, values: list, seed: int) -> dict:
    """The probe make_master_params' arguments for a model whose parameters hold `values`: a batch to train the
    model on afterwards, a change to make to it, and what pulls the masters in SGD steps."""
    return {"model": spec, "inputs": model_inputs(spec, 4, seed), "change": drawn_like(values, seed + 1),
            "pulls": drawn_like(values, seed + 2), "lr": LR, "steps": STEPS}


def update_error(out: dict, scenario: dict):
    """(how far the masters' moves under the optimizer are from steps * -lr * pull, relative to that size;
    where): inf where no optimizer could take them, or a master did not come back."""
    updated, start = out.get("updated"), out.get("after_model_changed")
    pulls, lr, steps = scenario["pulls"], scenario["lr"], scenario["steps"]
    if updated is None or start is None or len(updated) != len(pulls):
        return math.inf, "the masters as a whole"
    worst, where = 0.0, ""
    for i, (after, before, pull) in enumerate(zip(updated, start, pulls)):
        moved = moved_by(after, before) if after is not None and before is not None else None
        want = -steps * lr * pull.double()
        err = math.inf if moved is None else max_abs_diff(moved, want) / (steps * lr)
        if err > worst:
            worst, where = err, f"master {i}"
    return worst, where


def grads_off(got, want: list, rel: float = 1e-3):
    """(the largest difference between two lists of gradients relative to the largest wanted one, where);
    inf where got is missing (None: the model could not be trained), a gradient is missing or extra."""
    if got is None or len(got) != len(want):
        return math.inf, "the model as a whole"
    scale = max([float(w.double().abs().max()) for w in want if w is not None and w.numel()] + [1e-12])
    worst, where = 0.0, ""
    for i, (g, w) in enumerate(zip(got, want)):
        if (g is None) != (w is None):
            return math.inf, f"parameter {i}"
        err = 0.0 if g is None else max_abs_diff(g, w) / scale
        if err > worst:
            worst, where = err, f"parameter {i}"
    return (worst, where) if worst > rel else (0.0, "")


# ---- the small models of the GPU smoke cases (exercises/<id>/smoke.py) ----

MLP16 = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3, "dtype": "float16"}
MLP32 = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3}
LM = {"arch": "lm", "vocab": 12, "dim": 8, "seed": 5}


def fp32_values(spec: dict) -> list:
    return [p.detach().float() for p in build_model(spec).parameters()]
