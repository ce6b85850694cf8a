"""Hidden checks for DynamicLossScaler against torch.amp.GradScaler's update kernel."""
import math
import random

import pytest
import torch

from autograder.checks.compare import tensor_list_diff
from autograder.exercises.dynamic_loss_scaler.explain import why_scales_differ
from autograder.checks.read import number
from autograder.instructor.exercises.dynamic_loss_scaler.oracles import torch_scales


def flags(seed, n=30, p_inf=0.2):
    rng = random.Random(seed)
    return [rng.random() < p_inf for _ in range(n)]


CONFIGS = [
    pytest.param({"init_scale": 2.0**16, "growth_interval": 1}, flags(1), id="growth_interval=1"),
    pytest.param({"init_scale": 2.0**10, "growth_interval": 2}, flags(2), id="growth_interval=2"),
    pytest.param({"init_scale": 2.0**8, "growth_interval": 3}, flags(3, p_inf=0.1), id="growth_interval=3"),
    pytest.param({"init_scale": 1.0, "growth_interval": 5, "growth_factor": 4.0, "backoff_factor": 0.25},
                 flags(4, n=40, p_inf=0.1), id="factors 4 and 0.25"),
    pytest.param({"init_scale": 100.0, "growth_interval": 2, "growth_factor": 1.5, "backoff_factor": 0.3},
                 flags(5), id="factors 1.5 and 0.3"),
]


def check_trace(student, init, found_infs, hint=""):
    want = torch_scales(**init, found_infs=found_infs)
    got = student.run("scaler_updates", init=init, found_infs=found_infs)["scales"]
    values = [number(g) for g in got]
    hint = why_scales_differ(init, found_infs, values, want).strip() or hint  # what the first wrong update shows
    for step, (g, w) in enumerate(zip(values, want)):
        assert g is not None and math.isclose(g, w, rel_tol=1e-5), (
            f"DynamicLossScaler({', '.join(f'{k}={v}' for k, v in init.items())}): after update {step} "
            f"(flags so far: {['inf' if f else 'ok' for f in found_infs[:step]][-8:]}) the scale should be {w:g} "
            f"(torch.amp.GradScaler's rule) but it is {g}. {hint}".rstrip())


@pytest.mark.behaviour("growth")
@pytest.mark.parametrize("init,found_infs", CONFIGS)
def test_random_sequences(student, init, found_infs):
    """Follows GradScaler's rule over random sequences of overflows"""
    check_trace(student, init, found_infs,
                "Hint: an overflow resets the count of clean steps; growth resets it too.")


@pytest.mark.behaviour("growth")
def test_two_scalers_keep_their_own_count(student):
    """Two scalers side by side: each counts its own clean updates and keeps its own scale"""
    init = {"init_scale": 32.0, "growth_interval": 3}
    mine, theirs = [False, False, True, False, False, False, False], [False] * 7
    got = student.run("scalers_side_by_side", cls="DynamicLossScaler", init=init, other_init=init, found_infs=mine,
                      other_found_infs=theirs)["beside"]
    for name, flags, scales in (("the first", mine, got["scales"]), ("the second", theirs, got["other_scales"])):
        want = torch_scales(**init, found_infs=flags)
        values = [number(g) for g in scales]
        assert values == want, (
            f"two DynamicLossScaler(init_scale=32.0, growth_interval=3) updated in turn, one with "
            f"{['inf' if f else 'ok' for f in mine]}, the other with only clean updates: {name} went through "
            f"scales {values}, but on its own it goes through {want}. Each scaler must keep its own count and "
            "scale: set them on self in __init__ (a class attribute, a default argument or a global is shared).")


@pytest.mark.behaviour("growth")
def test_overflow_resets_the_clean_count(student):
    """Clean, clean, overflow, clean, clean: no growth with growth_interval=3"""
    check_trace(student, {"init_scale": 64.0, "growth_interval": 3}, [False, False, True, False, False],
                "Hint: set the clean-step count back to 0 on overflow.")


@pytest.mark.behaviour("backoff")
def test_backoff_with_other_factors(student):
    """Each overflow multiplies the scale by backoff_factor, whatever its value and the scale's"""
    check_trace(student, {"init_scale": 300.0, "backoff_factor": 0.3, "growth_interval": 4},
                [True, False, True, True, False], "Hint: on found_inf, scale *= backoff_factor (the argument).")


@pytest.mark.behaviour("no_minimum")
def test_no_minimum_scale(student):
    """Seventy overflows in a row keep halving the scale: there is no floor"""
    check_trace(student, {}, [True] * 70, "Hint: do not clamp the scale to a minimum.")


@pytest.mark.behaviour("defaults")
def test_default_growth_interval(student):
    """With the defaults, growth happens after 2000 clean steps, not before"""
    check_trace(student, {}, [False] * 2001, "Hint: the default growth_interval is 2000.")


@pytest.mark.behaviour("inherits")
def test_dynamic_unscale_on_generator(student, reference):
    """DynamicLossScaler.unscale_ works on a generator and skips missing grads"""
    values = [torch.ones(3), torch.ones(2), torch.ones(1)]
    grads = [torch.tensor([4.0, 8.0, 16.0]), None, torch.tensor([float("nan")])]
    spec = dict(cls="DynamicLossScaler", init={"init_scale": 4.0}, values=values, grads=grads, as_generator=True)
    got, want = student.run("loss_scaler", **spec), reference.run("loss_scaler", **spec)
    diff, where = tensor_list_diff(got["grads"], want["grads"])
    assert diff == 0 and got["found_inf"]["value"] is True, (
        "DynamicLossScaler(init_scale=4.0).unscale_(a generator of 3 params, one grad None, one NaN) should "
        f"divide the grads by 4 and return True; {where or 'the result'} differs.")


@pytest.mark.behaviour("backoff")
def test_the_constructor_takes_its_arguments_in_order(student):
    """DynamicLossScaler(init_scale, growth_factor, backoff_factor, growth_interval), called positionally:
    the signature is the contract"""
    args, flags_ = [2.0**10, 4.0, 0.125, 3], [False, False, False, True, False, True]
    init = dict(zip(("init_scale", "growth_factor", "backoff_factor", "growth_interval"), args))
    want = torch_scales(**init, found_infs=flags_)
    got = [number(g) for g in student.run("scaler_updates", args=args, found_infs=flags_)["scales"]]
    assert got == want, (
        f"DynamicLossScaler(1024.0, 4.0, 0.125, 3), its arguments given in order, then updates "
        f"{['inf' if f else 'ok' for f in flags_]}: the scales should be {want}, but they were {got}. The "
        "parameters come in this order: init_scale, growth_factor, backoff_factor, growth_interval.")
