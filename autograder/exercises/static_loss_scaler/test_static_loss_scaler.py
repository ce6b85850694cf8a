"""Visible checks for StaticLossScaler."""
import math

import pytest
import torch

from autograder.checks.compare import max_abs_diff
from autograder.checks.messages import instances_interfere
from autograder.checks.read import kind, number, shown


def grads_with(values):
    """Parameters (all ones) with these gradients."""
    grads = [None if v is None else torch.tensor(v, dtype=torch.float32) for v in values]
    params = [torch.ones(2) if g is None else torch.ones_like(g) for g in grads]
    return params, grads


def shown_tensor(t) -> str:
    return "nothing (None)" if t is None else str([round(v, 6) for v in t.double().flatten().tolist()[:4]])


@pytest.mark.behaviour("scale")
def test_default_scale(student):
    """StaticLossScaler() has scale 1024.0"""
    out = student.run("loss_scaler", cls="StaticLossScaler")
    assert kind(out["scale"]) == "float" and out["scale"]["value"] == 1024.0, (
        f"StaticLossScaler().scale should be the float 1024.0, but it is {shown(out['scale'])}. "
        "Hint: store the constructor's `scale` argument as `self.scale = float(scale)`.")


@pytest.mark.behaviour("scale_loss")
def test_scale_loss_multiplies_and_keeps_the_graph(student):
    """scale_loss(loss) returns loss * scale, and backward through it gives scaled gradients"""
    w = torch.tensor([0.5, -2.0, 3.0])
    out = student.run("loss_scaler", cls="StaticLossScaler", init={"scale": 8.0}, loss_weights=w)
    expected_loss = float((w * w).sum() / 2 * 8)
    got = number(out["scaled_loss"])
    assert got is not None and math.isclose(got, expected_loss, rel_tol=1e-6), (
        f"With scale=8.0, scale_loss(loss) for a loss of {expected_loss / 8} should return {expected_loss}, "
        f"but it returned {shown(out['scaled_loss'])}.")
    assert "weight_grad" in out, (
        "scale_loss(loss) returned something backward() cannot run through. "
        "Hint: return `loss * self.scale`, a tensor still attached to the graph (no .item(), no .detach()).")
    assert max_abs_diff(out["weight_grad"], w * 8) < 1e-6, (
        "After scaled_loss.backward(), the gradients should be 8 times the true ones (scale=8.0), "
        f"but they differ by {max_abs_diff(out['weight_grad'], w * 8):.3g}.")


@pytest.mark.behaviour("unscale_divides")
def test_unscale_divides_in_place(student):
    """unscale_(params) divides every .grad by scale, in place"""
    params, grads = grads_with([[1024.0, -2048.0], [512.0, 4.0, 0.0]])
    out = student.run("loss_scaler", cls="StaticLossScaler", init={"scale": 1024.0}, values=params, grads=grads)
    for i, (got, grad) in enumerate(zip(out["grads"], grads)):
        d = max_abs_diff(got, grad / 1024.0)
        assert d < 1e-9, (
            f"After unscale_ with scale 1024, parameter {i}'s grad should be {(grad / 1024).tolist()}, "
            f"but it is {got.tolist()}. Hint: divide each p.grad by self.scale.")
    for i, (kept, grad) in enumerate(zip(out["held_grads"], grads)):
        assert max_abs_diff(kept, grad / 1024.0) < 1e-9, (
            f"After unscale_, the gradient tensor the caller holds for parameter {i} (the one .grad was before the "
            f"call) still holds {kept.tolist()}: unscale_ replaced .grad with a new tensor instead of dividing the "
            "existing one in place. Hint: use p.grad.div_(self.scale) (the trailing underscore means in place).")


@pytest.mark.behaviour("edge_cases")
def test_unscale_skips_missing_grads(student):
    """unscale_ skips parameters whose .grad is None"""
    params, grads = grads_with([[64.0, 32.0], None, [16.0]])
    out = student.run("loss_scaler", cls="StaticLossScaler", init={"scale": 16.0}, values=params, grads=grads)
    assert out["grads"][1] is None, "unscale_ gave a gradient to a parameter that had none; leave it as None."
    first, after = out["grads"][0], out["grads"][2]
    if max_abs_diff(after, torch.tensor([1.0])) < 1e-9:
        return
    # how the gradient after the None was treated, against how the first one was: the division itself is
    # graded by its own check, so only a difference between the two is this check's concern
    untouched = max_abs_diff(after, grads[2]) == 0 and max_abs_diff(first, grads[0]) != 0
    assert not untouched, (
        "unscale_ stopped at a parameter whose .grad is None instead of skipping it: the parameter after it "
        "kept its scaled gradient [16.0] while the one before it changed. Hint: `if p.grad is None: continue`.")
    ratio_first = first / grads[0] if first is not None and first.shape == grads[0].shape else None
    ratio_after = after / grads[2] if after is not None and after.shape == grads[2].shape else None
    same = (ratio_first is not None and ratio_after is not None and bool(torch.isfinite(ratio_first).all())
            and torch.allclose(ratio_first, ratio_after.expand_as(ratio_first), rtol=1e-6))
    assert same, (
        f"unscale_ with scale 16 on gradients [[64, 32], None, [16]]: the first became {shown_tensor(first)}, "
        f"the one after the None became {shown_tensor(after)}; a parameter without a .grad should change "
        "nothing for the others. Hint: `if p.grad is None: continue`.")


@pytest.mark.behaviour("overflow")
def test_unscale_reports_overflow(student):
    """unscale_ returns True for a gradient holding inf, -inf or NaN, and False for finite ones, as a Python bool"""
    for bad, misses in ((float("inf"), "torch.isnan alone misses inf"), (float("-inf"), "torch.isnan misses -inf"),
                        (float("nan"), "torch.isinf alone misses NaN")):
        params, grads = grads_with([[1.0, 2.0], [bad, 3.0]])
        out = student.run("loss_scaler", cls="StaticLossScaler", values=params, grads=grads)
        assert kind(out["found_inf"]) == "bool" and out["found_inf"]["value"] is True, (
            f"unscale_ on gradients [1, 2] and [{bad}, 3] should return True, but it returned "
            f"{shown(out['found_inf'])}: {misses}. Hint: not torch.isfinite(p.grad).all() is True when a gradient "
            "holds inf, -inf or NaN; return a bool.")
    params, grads = grads_with([[1.0, 2.0], [5.0, 3.0]])
    out = student.run("loss_scaler", cls="StaticLossScaler", values=params, grads=grads)
    assert kind(out["found_inf"]) == "bool" and out["found_inf"]["value"] is False, (
        f"unscale_ on finite gradients should return False, but it returned {shown(out['found_inf'])}.")


@pytest.mark.behaviour("scale")
def test_two_scalers_keep_their_own_scale(student):
    """Each StaticLossScaler keeps its own scale, whatever other scalers are made"""
    out = student.run("scalers_side_by_side", cls="StaticLossScaler", init={"scale": 8.0}, other_init={"scale": 2.0},
                      grads=[torch.tensor([16.0, 32.0])])
    assert not instances_interfere(out), (
        f"StaticLossScaler(scale=8.0) on its own has scale {shown(out['alone']['scales'][0])} and unscales [16, 32] "
        f"to {out['alone']['grads'][0].tolist()}; made just before a StaticLossScaler(scale=2.0), it has scale "
        f"{shown(out['beside']['scales'][0])} and unscales them to {out['beside']['grads'][0].tolist()}: the two "
        "share their scale. Hint: set it on the instance in __init__ (self.scale = float(scale)), not on the class "
        "or in a global.")
