"""expected.pt: the oracles' values for the visible checks' fixed inputs, computed at release time.

The student package carries the visible checks but no oracle (instructor/oracles.py computes the
exercises' answers). So the release runs the visible checks against the reference with the oracles
live (it hands run_checks an `expected` that calls them), records every value they ask for, and writes
the values to autograder/checks/expected.pt, which ships in the wheel. A check that asks for a value
that is not there (its inputs changed since the release) fails with an internal error, and
`release --check` says the file is stale.
"""
import copy
import math
from pathlib import Path

import torch

from ..checks import released
from ..items import AUTO_ITEMS, ROOT
from ..runner import run_checks
from .oracles import ORACLES
from .reference import reference


def compute(root: Path = ROOT) -> dict:
    """{call key: value} for every oracle call the visible checks make, with the reference as the student.

    Every visible check must pass on the reference: one that does not is the course's bug."""
    values = {}

    def live(oracle, *args, **kwargs):
        """The checks' `expected`: the oracle's value, computed once per call key and kept under it."""
        key = released.call_key(oracle, *args, **kwargs)
        if key not in values:
            values[key] = ORACLES[oracle](*copy.deepcopy(args), **copy.deepcopy(kwargs))
        return copy.deepcopy(values[key])

    results = run_checks([item.id for item in AUTO_ITEMS], reference(root), expected=live)
    failed = [f"{item}: {o.name}: {o.message}" for item, r in results.items() for o in r.outcomes if not o.passed]
    if failed:
        raise SystemExit("the reference fails visible checks, so their expected values cannot be trusted:\n"
                         + "\n".join(failed))
    return values


# float64 values are sums whose last bits depend on the CPU (ATen's vector width, AVX2 or AVX-512, and its
# BLAS): two machines agree to this fraction of a tensor's largest magnitude (at least 1). Any change to the
# checks' inputs moves them by far more. Every other dtype must agree bit for bit.
FLOAT64_NOISE = 1e-12


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.detach().contiguous().reshape(-1).view(torch.uint8)


def _same_tensors(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.dtype != torch.float64 or a.numel() == 0:
        return torch.equal(_bytes(a), _bytes(b))
    a, b = a.detach(), b.detach()
    finite = torch.cat([a[a.isfinite()], b[b.isfinite()]]).abs()
    scale = max(1.0, float(finite.max())) if finite.numel() else 1.0
    return torch.allclose(a, b, rtol=0.0, atol=FLOAT64_NOISE * scale, equal_nan=True)


def same(a, b) -> bool:
    """Equal plain data: tensors of the same dtype and shape, bit for bit, except float64's last bits
    (FLOAT64_NOISE, a zero's sign included) in tensors and in Python floats, which the same computation
    on another CPU may change; there a NaN is the same as any NaN."""
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        return isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and _same_tensors(a, b)
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if type(a) is float and type(b) is float:  # a Python float is a float64 (a loss), with its last bits
        if math.isnan(a) or math.isnan(b):  # a NaN is the same as a NaN, as in float64 tensors
            return math.isnan(a) and math.isnan(b)
        return a == b or (abs(a - b) <= FLOAT64_NOISE * max(1.0, abs(a), abs(b)))
    return type(a) is type(b) and a == b


def is_stale(path: Path = released.EXPECTED_FILE, root: Path = ROOT) -> bool:
    """Whether `path` differs from what a release would write now (a missing file is stale)."""
    if not path.exists():
        return True
    return not same(torch.load(path, weights_only=True), compute(root))


def write(path: Path = released.EXPECTED_FILE, root: Path = ROOT) -> bool:
    """Write `path` afresh; returns whether it changed (an unchanged file is left as it was)."""
    values = compute(root)
    if path.exists() and same(torch.load(path, weights_only=True), values):
        return False
    torch.save(values, path)
    released._load.cache_clear()
    return True
