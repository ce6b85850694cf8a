"""Shared pieces of the checks: plain-data readers, input generators, and the expected values.

Everything here runs in the checking process (the grader, or the student's kernel for a
self-check), never in the sandbox, and it uses no student code. It computes no exercise's answer:
the oracles that do (instructor/oracles.py) stay with the instructor, and the visible checks read
what they gave for the visible checks' fixed inputs from expected.pt (`released`), written by
`python -m autograder release`.
"""
import copy
import functools
import hashlib
import math
from pathlib import Path
from typing import Literal

import torch

from ..text import bounded_repr

EXPECTED_FILE = Path(__file__).with_name("expected.pt")


# Why a check failed, when it says nothing about the code's logic ("" when it does): "not_implemented" (a stub
# still raises), "missing" (a name is not defined), "error" (the probe could not use what the code returned),
# "tampered" (set aside for review), or how the sandbox failed (sandbox.errors.SandboxReason, passed on as is).
# report.py reads it to say once what made every check of an item fail.
CheckReason = Literal["", "not_implemented", "missing", "error", "tampered", "timeout", "crashed", "protocol",
                      "refused", "not_checked"]


class CheckFailure(AssertionError):
    """A check failed for a reason already worded for the student; `reason` sorts it (CheckReason)."""

    def __init__(self, message: str, reason: CheckReason = ""):
        super().__init__(message)
        self.reason = reason


def kind(desc: dict) -> str:
    """The type of a described value, read from what came back: a float comes back a float, a tensor a tensor,
    a tuple's items in a tuple (checks/answers.py: the probe's word for a type is a report). An object of any
    other type comes back as its type's name alone, which only ever fails a check."""
    value, items = desc.get("value"), desc.get("items")
    if isinstance(value, torch.Tensor):
        return "Tensor"
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__
    if isinstance(items, (tuple, list)):
        return type(items).__name__
    said = desc.get("type")
    return "NoneType" if said in ("NoneType", "bool", "int", "float", "str", "Tensor", "tuple", "list") else str(said)


def number(desc: dict):
    """The numeric value of a described return value, or None if it has none.

    Lenient on purpose: a 0-d tensor still has a value, so a check of the value can pass
    even where a separate check of the type fails.
    """
    value = desc.get("value")
    if kind(desc) in ("float", "int", "bool"):
        return float(value)
    if kind(desc) == "Tensor" and value.numel() == 1:
        return float(value.reshape(()).double())
    return None


def shown(desc: dict) -> str:
    """A short, student-readable rendering of a described value."""
    kind_ = kind(desc)
    if kind_ == "Tensor":
        value = desc["value"]
        if value.numel() == 1:
            return f"tensor({float(value.reshape(()).double())!r}, dtype=torch.{dtype_of(value)})"
        return f"a {dtype_of(value)} tensor of shape {tuple(value.shape)}"
    if kind_ in ("float", "int", "bool", "str", "NoneType"):
        return bounded_repr(desc.get("value"))  # a string may be long: the message shows its start
    if kind_ in ("tuple", "list"):  # what it holds, as far as the probe described it (nested ones by length)
        items = list(desc["items"])
        length = desc.get("length")
        if not items or any(isinstance(i, dict) and kind(i) in ("tuple", "list") for i in items):
            return f"a {kind_} of length {length}"
        inner = ", ".join(shown(i) for i in items[:4]) + (", ..." if not isinstance(length, int) or length > 4 else "")
        return f"({inner}{',' if length == 1 else ''})" if kind_ == "tuple" else f"[{inner}]"
    return f"an object of type {kind_}"


def dtype_of(t: torch.Tensor) -> str:
    """A tensor's dtype as the student writes it: float16, bfloat16, float32."""
    return str(t.dtype).replace("torch.", "")


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


def call_key(oracle: str, *args, **kwargs) -> str:
    """A name for one oracle call: the oracle's name and a digest of its plain-data arguments."""
    digest = hashlib.sha256()
    _feed(digest, (oracle, args, sorted(kwargs.items())))
    return f"{oracle}/{digest.hexdigest()[:24]}"


def _feed(digest, value):
    """Hash a plain value byte for byte, the same way on every machine and torch version (no pickle)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        text = value.hex() if isinstance(value, float) else repr(value)
        digest.update(f"{type(value).__name__}:{text};".encode())
    elif isinstance(value, (list, tuple)):
        digest.update(f"seq:{len(value)};".encode())
        for v in value:
            _feed(digest, v)
    elif isinstance(value, dict):
        _feed(digest, sorted(value.items()))
    elif isinstance(value, torch.dtype):
        _feed(digest, str(value))
    elif isinstance(value, torch.Tensor):
        t = value.detach().cpu().contiguous()
        digest.update(f"tensor:{t.dtype}:{tuple(t.shape)};".encode())
        digest.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    else:
        raise TypeError(f"an oracle call's arguments are plain data, not {type(value).__name__}")


@functools.lru_cache(maxsize=None)
def _load(path: Path) -> dict:
    return torch.load(path, weights_only=True) if path.exists() else {}


def released(oracle: str, *args, **kwargs):
    """What the instructor's oracle `oracle` (instructor/oracles.py) gives for these arguments, as released.

    The checks' `expected` fixture, unless the runner is handed another source (runner.run_checks). Read from
    expected.pt, where the release wrote it for every call the visible checks make on their fixed inputs; a fresh
    copy each time, so a check may change what it gets."""
    key = call_key(oracle, *args, **kwargs)
    values = _load(EXPECTED_FILE)
    if key not in values:
        raise LookupError(f"{EXPECTED_FILE.name} holds no value of {oracle} for these inputs "
                          f"({len(values)} values in all): the course's release is out of date, or this torch "
                          "draws other random inputs than the instructor's")
    return copy.deepcopy(values[key])


def kept_graphs(call: str, alive: int, micro_batches: int) -> str:
    """The message of a call that held several micro-batches' graphs at once (probes report how many)."""
    return (f"{call} held the graphs of {alive} of its {micro_batches} micro-batches alive at once (counted from "
            "the tensors autograd saved for backward). A graph holds its micro-batch's activations until backward() "
            "frees it, so keeping them all costs the whole batch's memory, which accumulation is meant to avoid. "
            "Hint: call backward() on each micro-batch's weighted loss inside the loop, instead of adding the "
            "losses up (or concatenating the outputs) and calling backward() once.")


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


def why_scales_differ(init: dict, found_infs, got: list, want: list) -> str:
    """What the first update at which a dynamic scaler's scales (`got`, the scale before any update first)
    leave GradScaler's (`want`) shows, in words: the update's flag, what the scale did and what it should have
    done. It compares the two traces only; it computes no scale of its own."""
    if any(g is None for g in got) or len(got) < 2:
        return ""
    close = lambda a, b: math.isclose(a, b, rel_tol=1e-5)  # noqa: E731
    growth, backoff = init.get("growth_factor", 2.0), init.get("backoff_factor", 0.5)
    interval = init.get("growth_interval", 2000)
    if all(close(g, got[0]) for g in got) and not all(close(w, want[0]) for w in want):
        return (f" The scale never changed over {len(got) - 1} updates: update(found_inf) must back the scale off "
                "on an overflow and grow it after growth_interval clean updates.")
    k = next((k for k, (g, w) in enumerate(zip(got, want)) if not close(g, w)), None)
    if k is None:
        return ""
    if k == 0:
        return f" The scale starts at {got[0]:g}, not init_scale={want[0]:g}: store the init_scale argument."
    prev, now, should = want[k - 1], got[k], want[k]
    if found_infs[k - 1]:
        said = (f" Update {k} had an overflow: the scale "
                + (f"stayed {prev:g}" if close(now, prev) else f"went from {prev:g} to {now:g}")
                + f", but it should be {should:g}")
        if close(now, prev / backoff):
            return said + " (divided by backoff_factor): multiply by backoff_factor to back off."
        if close(now, prev * 0.5) and backoff != 0.5:
            return said + f" (halved): multiply by the backoff_factor argument ({backoff:g}), not by 0.5."
        if now > should and now <= 1.0:
            return said + ": the scale stopped at a minimum. GradScaler has no minimum scale: do not clamp it."
        if close(now, prev):
            return said + ": an overflow left it unchanged. On found_inf, scale *= backoff_factor."
        return said + f": on found_inf, scale *= backoff_factor ({backoff:g})."
    # a clean update: how many clean updates in a row it ends, since the last overflow or growth
    start = max([0] + [t + 1 for t in range(k - 1) if found_infs[t] or not close(want[t + 1], want[t])])
    clean, after = k - start, ("the last overflow" if start and found_infs[start - 1] else
                               "the last growth" if start else "the start")
    said = (f" Update {k} was clean update {clean} in a row since {after}: the scale "
            + (f"stayed {prev:g}" if close(now, prev) else f"went from {prev:g} to {now:g}"))
    if close(now, prev * 2.0) and growth != 2.0:
        return said + f" (doubled): multiply by the growth_factor argument ({growth:g}), not by 2."
    if close(should, prev):  # it grew, or changed, too early
        if after == "the last growth":
            return (said + f", but it should stay {should:g} until growth_interval={interval} clean updates "
                    "follow the growth: reset the count of clean updates to 0 when the scale grows.")
        if after == "the last overflow":
            return (said + f", but it should stay {should:g} until growth_interval={interval} clean updates "
                    "follow the overflow: an overflow must reset the count of clean updates to 0.")
        return said + f", but it should grow only after growth_interval={interval} clean updates in a row."
    if k < len(got) - 1 and not found_infs[k] and close(got[k + 1], prev * growth):
        return (said + f" and grew one update later, but it should grow to {should:g} as the count reaches "
                f"growth_interval={interval} (== growth_interval, not > growth_interval).")
    return said + f", but it should grow to {should:g}: growth_interval={interval} clean updates in a row grow it."


def instances_interfere(out: dict) -> bool:
    """Whether a scaler used beside a second one (probe scalers_side_by_side) behaved otherwise than one used
    alone: whatever the scaler computes, right or wrong, that difference is state the instances share."""
    alone, beside = out["alone"], out["beside"]
    if [shown(s) for s in alone["scales"]] != [shown(s) for s in beside["scales"]]:
        return True
    return any((a is None) != (b is None) or (a is not None and max_abs_diff(a, b) != 0)
               for a, b in zip(alone["grads"], beside["grads"]))
