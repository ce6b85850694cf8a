"""Shared pieces of the checks: oracles computed with torch itself, and plain-data readers.

Everything here runs in the checking process (the grader, or the student's kernel for a
self-check), never in the sandbox, and it uses no student code.
"""
import math

import torch

from . import probes
from ..text import bounded_repr


class CheckFailure(AssertionError):
    """A check failed for a reason already worded for the student.

    `reason` sorts failures that say nothing about the code's logic: "not_implemented"
    (a stub still raises), "missing" (a name is not defined), "timeout", "crashed".
    """

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


def number(desc: dict):
    """The numeric value of a described return value, or None if it has none.

    Lenient on purpose: a 0-d tensor still has a value, so a check of the value can pass
    even where a separate check of the type fails.
    """
    if desc.get("type") in ("float", "int", "bool") and desc.get("value") is not None:
        return float(desc["value"])
    value = desc.get("value")
    if desc.get("type") == "Tensor" and isinstance(value, torch.Tensor) and value.numel() == 1:
        return float(value.reshape(()).double())
    return None


def shown(desc: dict) -> str:
    """A short, student-readable rendering of a described value."""
    kind = desc.get("type")
    if kind == "Tensor":
        value = desc["value"]
        if value.numel() == 1:
            return f"tensor({float(value.reshape(()).double())!r}, dtype=torch.{desc.get('dtype')})"
        return f"a {desc.get('dtype')} tensor of shape {tuple(value.shape)}"
    if kind in ("float", "int", "bool", "str", "NoneType"):
        return bounded_repr(desc.get("value"))  # a string may be long: the message shows its start
    if kind in ("tuple", "list"):
        return f"a {kind} of length {desc.get('length')}"
    return f"an object of type {kind}"


def same_shape(a, b) -> bool:
    """Whether a and b are tensors of one shape: asked before any copy or cast of a student's tensor, whose
    shape is what the answer says, not what the check needs."""
    return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape


def max_abs_diff(a: torch.Tensor, b: torch.Tensor, round_to: torch.dtype = None) -> float:
    """Largest |a - b| in float64 (b first rounded to `round_to`, if given); inf where the shapes differ,
    or only one side is finite or NaN."""
    if not same_shape(a, b):
        return math.inf
    if round_to is not None:
        b = b.to(round_to)
    a, b = a.double(), b.double()
    both_nan = a.isnan() & b.isnan()
    same_inf = a.isinf() & b.isinf() & (a == b)
    diff = (a - b).abs()
    diff[both_nan | same_inf] = 0.0
    diff[diff.isnan()] = math.inf
    return float(diff.max()) if diff.numel() else 0.0


def moved_by(got, start: torch.Tensor):
    """got - start in float64, or None when got is not a tensor of start's shape (asked before any cast)."""
    return got.double() - start.double() if same_shape(got, start) else None


def tensor_list_diff(got: list, want: list, names=None):
    """(largest difference, where) over two lists of tensors that may hold None."""
    names = names or [f"parameter {i}" for i in range(len(want))]
    if len(got) != len(want):
        return math.inf, f"{len(got)} tensors instead of {len(want)}"
    worst, where = 0.0, ""
    for name, g, w in zip(names, got, want):
        if (g is None) != (w is None):
            return math.inf, f"{name}: expected {'None' if w is None else 'a tensor'}, got {'None' if g is None else 'a tensor'}"
        if g is None:
            continue
        if g.shape != w.shape:
            return math.inf, f"{name}: shape {tuple(g.shape)} instead of {tuple(w.shape)}"
        d = max_abs_diff(g, w)
        if d > worst:
            worst, where = d, name
    return worst, where


def full_batch_grads(model_spec: dict, loss: str, inputs, targets, dtype=torch.float64):
    """The oracle for accumulation: one backward over the whole batch, in float64 by default."""
    model = probes.build_model(model_spec).to(dtype)
    x = inputs.to(dtype) if inputs.is_floating_point() else inputs
    y = targets.to(dtype) if targets.is_floating_point() else targets
    value = probes.LOSSES[loss](model(x), y)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())


def model_values(model_spec: dict):
    return [p.detach().clone() for p in probes.build_model(model_spec).parameters()]


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


def log_uniform(n: int, low: float, high: float, seed: int, dtype=torch.float32, signed=True):
    """n values whose log2-magnitudes are uniform in [low, high]."""
    g = torch.Generator().manual_seed(seed)
    logs = torch.rand(n, generator=g, dtype=torch.float64) * (high - low) + low
    values = torch.pow(2.0, logs)
    if signed:
        values = values * torch.where(torch.rand(n, generator=g) < 0.5, -1.0, 1.0).double()
    return values.to(dtype)


def classification_batch(n: int, features: int, classes: int, seed: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, features, generator=g).to(dtype),
            torch.randint(0, classes, (n,), generator=g))


def regression_batch(n: int, features: int, outputs: int, seed: int, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, features, generator=g).to(dtype), torch.randn(n, outputs, generator=g).to(dtype)


def token_batch(n: int, length: int, vocab: int, classes: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n, length), generator=g), torch.randint(0, classes, (n,), generator=g)


def fp32_masters(model_spec: dict):
    """fp32 copies of a model's initial values, as plain tensors to send to a probe."""
    return [v.float() for v in model_values(model_spec)]


def relative_error(got: list, want: list, start: list) -> float:
    """||(got - start) - (want - start)|| / ||want - start|| over a list of tensors: how far one
    update is from another, relative to the update's own size (robust to a few elements that
    sit at rounding noise)."""
    if len(got) != len(want) or not all(same_shape(g, w) for g, w in zip(got, want)):
        return math.inf
    num = sum(float(((g.double() - w.double()) ** 2).sum()) for g, w in zip(got, want))
    den = sum(float(((w.double() - s.double()) ** 2).sum()) for w, s in zip(want, start))
    if den == 0.0:
        return 0.0 if num == 0.0 else math.inf
    return math.sqrt(num / den)


def token_batch_of_lengths(lengths, vocab: int, seed: int, ignore_index: int = -100, pad_id: int = 0,
                           masked_prefix: int = 0):
    """Sequences of the given lengths, padded to the longest: token ids (B, T) and targets (B, T).

    Targets past a sequence's end are ignore_index (padding), and so are its first `masked_prefix`
    targets (a prompt that does not count, as in instruction tuning).
    """
    g = torch.Generator().manual_seed(seed)
    longest = max(lengths)
    inputs = torch.full((len(lengths), longest), pad_id, dtype=torch.long)
    targets = torch.full((len(lengths), longest), ignore_index, dtype=torch.long)
    for row, n in enumerate(lengths):
        inputs[row, :n] = torch.randint(0, vocab, (n,), generator=g)
        targets[row, :n] = torch.randint(0, vocab, (n,), generator=g)
        targets[row, :min(masked_prefix, n)] = ignore_index
    return inputs, targets


def full_batch_token_grads(model_spec: dict, inputs, targets, ignore_index: int = -100, dtype=torch.float64):
    """The oracle for token-level accumulation: one backward of the mean cross-entropy over every
    counted target token of the whole batch, in float64 by default."""
    model = probes.build_model(model_spec).to(dtype)
    logits = model(inputs)  # (B, T, V)
    value = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=ignore_index)
    value.backward()
    return [None if p.grad is None else p.grad.detach() for p in model.parameters()], float(value.detach())
