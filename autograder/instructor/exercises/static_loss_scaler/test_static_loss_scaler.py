"""Hidden checks for StaticLossScaler against the reference."""
import random

import pytest
import torch

from autograder.checks.compare import max_abs_diff, tensor_list_diff
from autograder.checks.read import kind, shown

INF, NAN = float("inf"), float("nan")


def params(grads, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    grads = [None if v is None else torch.tensor(v, dtype=dtype) if not isinstance(v, torch.Tensor) else v.to(dtype)
             for v in grads]
    values = [torch.randn(2, generator=g).to(dtype) if v is None else torch.randn(v.shape, generator=g).to(dtype)
              for v in grads]
    return values, grads


def run_both(student, reference, grads, scale=1024.0, dtype="float32", as_generator=False, seed=0):
    values, grads = params(grads, getattr(torch, dtype), seed)
    spec = dict(cls="StaticLossScaler", init={"scale": scale}, values=values, grads=grads, dtype=dtype,
                as_generator=as_generator)
    return student.run("loss_scaler", **spec), reference.run("loss_scaler", **spec)


@pytest.mark.behaviour("edge_cases")
def test_generator_is_read_once(student, reference):
    """unscale_ works on a one-shot generator, and still reports an inf in the last parameter"""
    got, want = run_both(student, reference, [[2.0, 4.0], [8.0], [1.0, INF]], as_generator=True)
    diff, where = tensor_list_diff(got["grads"], want["grads"])
    found = got["found_inf"].get("value") is True
    in_a_list = found or run_both(student, reference, [[2.0, 4.0], [8.0], [1.0, INF]])[0]["found_inf"].get("value")
    assert found, (
        f"unscale_(p for p in params) with an inf gradient in the last parameter returned {shown(got['found_inf'])}"
        + (", and True for the same list. A generator can only be iterated once: if you loop over params to divide "
           "and then loop again to look for inf, the second loop sees nothing. Do both in one pass."
           if in_a_list is True else
           ", and the same for a list: the inf is not seen at all, which a generator does not explain (torch.isnan "
           "alone misses inf). Hint: not torch.isfinite(p.grad).all() is True for inf, -inf and NaN."))
    assert diff == 0, f"unscale_ on a generator left {where} wrong (off by {diff:.3g}): unscale every grad."


@pytest.mark.behaviour("unscale_divides")
@pytest.mark.parametrize("as_generator", [False, True], ids=["list", "generator"])
def test_every_gradient_is_unscaled_after_an_overflow(student, reference, as_generator):
    """unscale_ still divides the gradients that come after a non-finite one"""
    got, want = run_both(student, reference, [[INF, 8.0], [16.0, 32.0], [NAN], [64.0]], scale=8.0,
                         as_generator=as_generator)
    diff, where = tensor_list_diff(got["grads"], want["grads"])
    assert diff == 0 and got["found_inf"]["value"] is True, (
        "unscale_ on gradients [[inf, 8], [16, 32], [nan], [64]] with scale 8 should divide every gradient "
        f"and return True; {where or 'the result'} is wrong (found_inf={shown(got['found_inf'])}). Do not "
        "return at the first overflow: finish the loop, then return whether any gradient was non-finite.")


@pytest.mark.behaviour("overflow")
@pytest.mark.parametrize("bad", [NAN, -INF, INF], ids=["NaN", "-inf", "inf"])
def test_nonfinite_values_are_overflow(student, reference, bad):
    """unscale_ reports NaN, -inf and inf alike"""
    got, _ = run_both(student, reference, [[1.0, 2.0], [3.0, bad, 5.0]])
    assert kind(got["found_inf"]) == "bool" and got["found_inf"]["value"] is True, (
        f"unscale_ on gradients containing {bad} should return True, but it returned {shown(got['found_inf'])}. "
        "Hint: torch.isfinite is False for inf, -inf and NaN alike.")


@pytest.mark.behaviour("overflow")
def test_large_finite_gradients_are_not_overflow(student, reference):
    """Large but finite gradients are not an overflow"""
    got, _ = run_both(student, reference, [[3.0e38, -3.0e38], [65504.0]], scale=1024.0)
    assert got["found_inf"]["value"] is False, (
        f"unscale_ on gradients of 3e38 (finite in fp32) returned {shown(got['found_inf'])}; only inf and NaN "
        "are overflows. Hint: test with torch.isfinite, not against a threshold.")
    got, _ = run_both(student, reference, [[60000.0, -65504.0]], scale=1.0, dtype="float16")
    assert got["found_inf"]["value"] is False, (
        "unscale_ on fp16 gradients of 60000 and -65504 (finite, at fp16's edge) reported an overflow.")


@pytest.mark.behaviour("unscale_divides")
@pytest.mark.parametrize("scale,seed", [(2.0**16, 1), (8.0, 2), (3.0, 3), (0.5, 4)])
def test_random_gradients_match_reference(student, reference, scale, seed):
    """unscale_ divides random gradients exactly as the reference does"""
    g = torch.Generator().manual_seed(seed)
    grads = [torch.randn(4, 3, generator=g) * scale, None, torch.randn(5, generator=g) * scale]
    got, want = run_both(student, reference, grads, scale=scale, seed=seed)
    diff, where = tensor_list_diff(got["grads"], want["grads"])
    assert diff <= 1e-6 * scale, (
        f"With scale={scale}, unscale_ left {where} off by {diff:.3g} from grad / scale.")
    kept, where = tensor_list_diff(got["held_grads"], want["held_grads"])
    assert kept <= 1e-6 * scale, (
        f"With scale={scale}, unscale_ left the gradient tensors the caller holds (what .grad was before the call) "
        f"off by {kept:.3g} in {where}: it replaced a .grad tensor instead of dividing it; divide in place with "
        "p.grad.div_().")


@pytest.mark.behaviour("unscale_divides")
def test_fp16_gradients(student, reference):
    """unscale_ also works on fp16 gradients"""
    got, want = run_both(student, reference, [[1024.0, 2048.0, -512.0]], dtype="float16")
    assert max_abs_diff(got["grads"][0], want["grads"][0]) == 0, "unscale_ gave wrong values for fp16 gradients."


@pytest.mark.behaviour("edge_cases")
def test_no_gradients(student):
    """unscale_ returns False when no parameter has a gradient"""
    got = student.run("loss_scaler", cls="StaticLossScaler", values=[torch.ones(1)], grads=[None])
    assert got["found_inf"]["value"] is False, (
        f"unscale_ on a parameter without a .grad returned {shown(got['found_inf'])}; nothing overflowed, so False.")


@pytest.mark.behaviour("scale")
def test_custom_scale(student):
    """StaticLossScaler(scale=8.0).scale is 8.0"""
    got = student.run("loss_scaler", cls="StaticLossScaler", init={"scale": 8.0})
    assert got["scale"]["value"] == 8.0, f"StaticLossScaler(scale=8.0).scale is {shown(got['scale'])}, not 8.0."


@pytest.mark.behaviour("scale")
def test_scale_given_positionally(student):
    """StaticLossScaler(8.0), the scale given positionally as the signature allows: .scale is 8.0"""
    got = student.run("loss_scaler", cls="StaticLossScaler", args=[8.0])
    assert got["scale"]["value"] == 8.0, (
        f"StaticLossScaler(8.0).scale is {shown(got['scale'])}, not 8.0: the signature is "
        "StaticLossScaler(scale=1024.0), so the first positional argument is the scale.")


# ---- scenarios: gradients drawn at random (dtype, None, inf and NaN anywhere, list or generator) ----

def scenario(seed: int) -> dict:
    """A seeded unscale_: 1 to 6 parameters of fp32, fp16 or bf16, any of them without a .grad, an inf or NaN
    anywhere (or nowhere), a scale that is or is not a power of two, the params as a list or a generator."""
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(600 + seed)
    dtype = rng.choice(["float32", "float16", "bfloat16"])
    scale = rng.choice([2.0**rng.randint(1, 14), round(rng.uniform(1.5, 900.0), 3)])
    grads = []
    for _ in range(rng.randint(1, 6)):
        if rng.random() < 0.2:
            grads.append(None)
            continue
        grad = torch.randn(rng.randint(1, 4), generator=g) * scale
        if rng.random() < 0.35:
            grad[rng.randrange(len(grad))] = rng.choice([INF, -INF, NAN])
        grads.append(grad)
    return dict(grads=grads, scale=scale, dtype=dtype, as_generator=rng.random() < 0.5, seed=seed)


def describe_scenario(spec: dict) -> str:
    shown_grads = ["None" if g is None else f"[{', '.join(f'{v:.3g}' for v in g.tolist())}]" for g in spec["grads"]]
    return (f"unscale_({'a generator' if spec['as_generator'] else 'a list'} of {spec['dtype']} params with grads "
            f"{', '.join(shown_grads)}) with scale {spec['scale']:g}")


@pytest.mark.behaviour("unscale_divides")
@pytest.mark.parametrize("seed", range(5), ids=[f"scenario {i}" for i in range(5)])
def test_random_scenarios_divide(student, reference, seed):
    """Random gradients: every one divided by the scale, in place, as the reference does"""
    spec = scenario(seed)
    got, want = run_both(student, reference, **spec)
    diff, where = tensor_list_diff(got["grads"], want["grads"])
    # multiplying by 1 / scale, as torch's GradScaler does, is dividing too: it may differ in the last bit
    finite = [w[torch.isfinite(w)].abs().max() for w in want["grads"] if w is not None and torch.isfinite(w).any()]
    bound = 2 * torch.finfo(getattr(torch, spec["dtype"])).eps * max([1.0] + [float(v) for v in finite])
    assert diff <= bound, (f"{describe_scenario(spec)}: {where or 'the result'} differs from grad / scale "
                           f"(by {diff:.3g}).")


@pytest.mark.behaviour("overflow")
@pytest.mark.parametrize("seed", range(5), ids=[f"scenario {i}" for i in range(5)])
def test_random_scenarios_report(student, reference, seed):
    """Random gradients: unscale_ returns True exactly when one holds inf or NaN, as a Python bool"""
    spec = scenario(seed)
    got, want = run_both(student, reference, **spec)
    assert kind(got["found_inf"]) == "bool" and got["found_inf"]["value"] is want["found_inf"]["value"], (
        f"{describe_scenario(spec)} returned {shown(got['found_inf'])}; expected {want['found_inf']['value']}.")
