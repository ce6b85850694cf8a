"""Visible checks for DynamicLossScaler, against torch.amp.GradScaler's own update rule."""
import math

import pytest
import torch

from autograder.checks.compare import max_abs_diff
from autograder.exercises.dynamic_loss_scaler.explain import why_scales_differ
from autograder.checks.messages import instances_interfere
from autograder.checks.read import number, shown


def scales_match(got, want) -> bool:
    return len(got) == len(want) and all(
        number(g) is not None and math.isclose(number(g), w, rel_tol=1e-6) for g, w in zip(got, want))


def describe_run(init, found_infs, got, want, hint) -> str:
    """The run, then what its first wrong update shows (or, where it shows nothing definite, the hint)."""
    flags = ", ".join("inf" if f else "ok" for f in found_infs)
    shown_got = [number(g) for g in got]
    return (f"DynamicLossScaler({', '.join(f'{k}={v}' for k, v in init.items())}) then update() with "
            f"[{flags}]: the scales should be {want} (torch.amp.GradScaler's rule), but they were {shown_got}."
            + (why_scales_differ(init, found_infs, shown_got, want) or " " + hint))


@pytest.mark.behaviour("growth")
def test_scalers_side_by_side_do_not_interfere(student):
    """A DynamicLossScaler used beside a second one behaves as one used alone"""
    flags, other = [False, False, True, False, False, False, False], [False] * 7
    out = student.run("scalers_side_by_side", cls="DynamicLossScaler", init={"init_scale": 32.0, "growth_interval": 3},
                      other_init={"init_scale": 32.0, "growth_interval": 3}, found_infs=flags, other_found_infs=other)
    assert not instances_interfere(out), (
        "DynamicLossScaler(init_scale=32.0, growth_interval=3) updated with "
        f"[{', '.join('inf' if f else 'ok' for f in flags)}] goes through scales "
        f"{[number(s) for s in out['alone']['scales']]} on its own, but "
        f"{[number(s) for s in out['beside']['scales']]} when a second scaler, made right after it, gets clean "
        "updates in turn: the two share their count or their scale. Hint: keep every piece of state on the "
        "instance (self.clean_steps = 0 in __init__), not in a class attribute, a default argument or a global.")


@pytest.mark.behaviour("defaults")
def test_defaults(student):
    """DynamicLossScaler() starts at scale 2^16 = 65536.0"""
    out = student.run("scaler_updates")
    assert number(out["scales"][0]) == 65536.0, (
        f"DynamicLossScaler().scale should start at 2.0**16 = 65536.0, but it is {shown(out['scales'][0])}."
        + (" That is StaticLossScaler's default scale: the init_scale argument never reached it. Hint: "
           "super().__init__(init_scale)." if number(out["scales"][0]) == 1024.0 else
           " Hint: the default init_scale is 2.0**16; store it as the scale."))


@pytest.mark.behaviour("backoff")
def test_backoff_on_overflow(student, expected):
    """An overflow multiplies the scale by backoff_factor"""
    init, flags = {"init_scale": 1024.0}, [True, True]
    want = expected("torch_scales", **init, found_infs=flags)
    out = student.run("scaler_updates", init=init, found_infs=flags)
    assert scales_match(out["scales"], want), describe_run(init, flags, out["scales"], want,
                                                           "Hint: on found_inf, scale *= backoff_factor.")


@pytest.mark.behaviour("growth")
@pytest.mark.parametrize("flags", [
    [False] * 7,
    [False, False, True, False, False, False, False],
])
def test_growth_after_growth_interval_clean_steps(student, expected, flags):
    """The scale grows after growth_interval clean updates in a row, and an overflow restarts the count"""
    init = {"init_scale": 16.0, "growth_interval": 3}
    want = expected("torch_scales", **init, found_infs=flags)
    out = student.run("scaler_updates", init=init, found_infs=flags)
    assert scales_match(out["scales"], want), describe_run(
        init, flags, out["scales"], want, "Hint: count clean updates since the last growth or overflow; grow and "
        "reset the count when it reaches growth_interval; reset it on overflow.")


@pytest.mark.behaviour("inherits")
def test_scale_loss_and_unscale_still_work(student):
    """scale_loss and unscale_ behave as in StaticLossScaler"""
    params = [torch.ones(2)]
    grads = [torch.tensor([8.0, float("nan")])]
    out = student.run("loss_scaler", cls="DynamicLossScaler", init={"init_scale": 8.0},
                      loss_weights=torch.tensor([1.0, 2.0]), values=params, grads=grads)
    assert number(out["scaled_loss"]) == pytest.approx(2.5 * 8), (
        f"DynamicLossScaler(init_scale=8.0).scale_loss(loss) should return loss * 8, got {shown(out['scaled_loss'])}.")
    assert out["found_inf"]["value"] is True and max_abs_diff(out["grads"][0][:1], torch.tensor([1.0])) == 0, (
        "DynamicLossScaler.unscale_ should divide gradients by the scale and report NaN as an overflow. "
        "Hint: subclass StaticLossScaler so it inherits scale_loss and unscale_.")
