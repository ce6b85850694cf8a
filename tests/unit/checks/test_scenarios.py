"""autograder.checks.scenarios: what the checks send so that a behaviour shows in values, and how they read it."""
import math

import torch

from autograder.checks import probes, scenarios
from autograder.checks.models import build_model

MLP16 = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 3, "dtype": "float16"}


def masters_made_by(make):
    """The probe make_master_params' answer for a make_master_params written as `make`, and its scenario."""
    values = [p.detach() for p in build_model(MLP16).parameters()]
    scenario = scenarios.master_scenario(MLP16, values, seed=9)
    return probes.run({"make_master_params": make}, "make_master_params", scenario), scenario


def test_fp32_leaves_add_up_steps_that_fp16_masters_lose():
    """SGD in float64 is the oracle: fp32 masters move by steps * -lr * pull to fp32 rounding; fp16 ones do not."""
    right, scenario = masters_made_by(lambda m: [p.detach().float().requires_grad_(True) for p in m.parameters()])
    assert right["status"] == "ok" and scenarios.update_error(right, scenario)[0] < 0.02
    start = right["after_model_changed"]
    want = [s.double() - scenarios.STEPS * scenarios.LR * pull.double() for s, pull in zip(start, scenario["pulls"])]
    assert max(float((u.double() - w).abs().max()) for u, w in zip(right["updated"], want)) < 1e-6
    fp16, scenario = masters_made_by(lambda m: [p.detach().clone().requires_grad_(True) for p in m.parameters()])
    assert scenarios.update_error(fp16, scenario)[0] > 0.5


def test_masters_an_optimizer_cannot_step_are_not_updated():
    for make in (lambda m: [p.float() for p in m.parameters()],                      # not leaves
                 lambda m: [p.detach().float() for p in m.parameters()],             # no requires_grad
                 lambda m: (p.detach().float().requires_grad_(True) for p in m.parameters())):  # a generator
        out, scenario = masters_made_by(make)
        assert out["updated"] is None and scenarios.update_error(out, scenario) == (math.inf, "the masters as a whole")


def test_masters_that_share_the_models_memory_move_when_it_changes():
    out, scenario = masters_made_by(lambda m: [p.detach().requires_grad_(True) for p in m.parameters()])
    moved = [float((a.double() - m["value"].double()).abs().max()) for a, m in zip(out["after_model_changed"],
                                                                                  out["masters"])]
    assert min(moved) > 0.4  # the change drawn is 0.5 to 1 in size, rounded to fp16


def test_the_model_left_as_it_was_trains_as_torch_says():
    out, scenario = masters_made_by(lambda m: [p.detach().float().requires_grad_(True) for p in m.parameters()])
    model = build_model(MLP16)
    model(scenario["inputs"]).float().square().mean().backward()
    assert scenarios.grads_off(out["model_grads"], [p.grad for p in model.parameters()]) == (0.0, "")
    frozen, _ = masters_made_by(lambda m: [p.requires_grad_(False).detach().float().requires_grad_(True)
                                           for p in m.parameters()])
    assert frozen["model_grads"] is None and scenarios.grads_off(frozen["model_grads"], [])[0] == math.inf


def test_grads_off_measures_against_the_largest_wanted_gradient():
    want = [torch.tensor([2.0, -4.0]), None]
    assert scenarios.grads_off([torch.tensor([2.0, -4.001]), None], want, rel=1e-3) == (0.0, "")
    assert scenarios.grads_off([torch.tensor([2.0, -4.1]), None], want)[1] == "parameter 0"
    assert scenarios.grads_off([torch.tensor([2.0, -4.0]), torch.zeros(1)], want)[0] == math.inf


def test_drawn_inputs_are_seeded_and_shaped():
    assert torch.equal(scenarios.model_inputs(MLP16, 4, 1), scenarios.model_inputs(MLP16, 4, 1))
    assert scenarios.model_inputs(MLP16, 4, 1).dtype == torch.float16
    tokens = scenarios.model_inputs({"arch": "lm", "vocab": 7, "dim": 3, "seed": 0}, 2, 1)
    assert tokens.dtype == torch.long and tokens.shape == (2, 4) and int(tokens.max()) < 7
    drawn = scenarios.drawn_like([torch.zeros(50)], seed=2)[0]
    assert 0.5 <= float(drawn.abs().min()) and float(drawn.abs().max()) <= 1.0 and (drawn < 0).any()
