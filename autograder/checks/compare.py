"""Comparisons the checks build their verdicts on: differences of tensors and lists of tensors, in float64."""
import math

import torch


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


def has_nan(tensors) -> bool:
    """Whether any of these tensors (None allowed) holds a NaN: what a graded model's first layer leaves in every
    gradient and loss after it was handed more examples than it takes at once (probes' `at_most`)."""
    return any(isinstance(t, torch.Tensor) and t.is_floating_point() and bool(t.isnan().any()) for t in tensors)


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


def off_reference(got: list, want: list, names) -> tuple:
    """(largest difference, where, largest reference value) of a student's gradients against the reference's:
    a check judges the difference against the scale of what it compares."""
    diff, where = tensor_list_diff(got, want, names)
    return diff, where, max(float(w.abs().max()) for w in want)


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


def as_multiple(got: list, want: list):
    """(k, got, want): the least-squares factor of got = k * want over two lists of tensors, with both lists
    flattened into one float64 vector each, so that a caller can judge the residual got - k * want as it needs;
    None where the lists do not line up (length, a None, a shape) or want is all zero."""
    if len(got) != len(want) or not all(g is not None and w is not None and g.shape == w.shape
                                        for g, w in zip(got, want)):
        return None
    flat_got = torch.cat([g.double().flatten() for g in got])
    flat_want = torch.cat([w.double().flatten() for w in want])
    norm = float(flat_want @ flat_want)
    return (float(flat_got @ flat_want) / norm, flat_got, flat_want) if norm else None


def moved_with_the_model(master: dict, after) -> bool:
    """Whether a master shares memory with its parameter, as its values show: they changed when (only) the
    model's were changed."""
    value = master.get("value")
    return value is not None and (after is None or max_abs_diff(after, value) != 0)
