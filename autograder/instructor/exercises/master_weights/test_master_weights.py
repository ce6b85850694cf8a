"""Hidden checks for master weights against the reference."""
import math
import random

import pytest
import torch

from autograder.checks.compare import max_abs_diff, moved_with_the_model, tensor_list_diff
from autograder.checks.scenarios import grads_off, master_scenario, model_inputs, update_error
from autograder.instructor.exercises.master_weights.oracles import fp32_masters, model_values

FP16 = {"arch": "mlp", "sizes": [5, 9, 7, 2], "seed": 11, "dtype": "float16"}
BF16 = {"arch": "mlp", "sizes": [3, 4, 2], "seed": 12, "dtype": "bfloat16"}
FP32 = {"arch": "mlp", "sizes": [4, 5, 3], "seed": 13, "dtype": "float32"}
FROZEN = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 14, "dtype": "float16", "frozen": "0.bias"}
BUFFERS = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 15, "dtype": "float16", "batch_norm": True}  # BatchNorm's statistics
UPDATE_TOLERANCE = 0.02  # of the SGD steps' sum: fp32 rounding is about 0.1% of it, fp16 loses most of it


@pytest.mark.behaviour("fp32_leaves")
@pytest.mark.parametrize("model", [FP16, BF16, FROZEN, BUFFERS],
                         ids=["fp16 3 layers", "bf16", "fp16, a frozen bias", "fp16 with BatchNorm's buffers"])
def test_masters_match_reference(student, reference, model):
    """make_master_params gives fp32 leaves with the model's values, one per parameter: an optimizer adds up
    steps too small for fp16 on them"""
    scenario = master_scenario(model, model_values(model), seed=model["seed"] * 13)
    got = student.run("make_master_params", **scenario)
    want = reference.run("make_master_params", **scenario)
    assert len(got["masters"]) == len(want["masters"]), (
        f"make_master_params returned {len(got['masters'])} masters for a model with {len(want['masters'])} parameters "
        f"({model['dtype']}{', one of them frozen' if 'frozen' in model else ''}"
        f"{', and BatchNorm buffers beside them' if model.get('batch_norm') else ''}). Hint: one per tensor in "
        "model.parameters(), frozen ones included; a state_dict() also holds buffers (running statistics).")
    for i, (g, w) in enumerate(zip(got["masters"], want["masters"])):
        assert is_fp32_master(g, w), (
            f"master {i} of a {model['dtype']} model should be an fp32 leaf with requires_grad=True holding "
            f"the parameter's values; got {({k: v for k, v in g.items() if k != 'value'})}.")
    err, where = update_error(got, scenario)
    assert err < UPDATE_TOLERANCE, (
        f"4 SGD steps too small for fp16, on the masters of a {model['dtype']} model: {moved_off(err, where)}. The "
        "masters must be fp32 leaves with requires_grad=True, in a list the optimizer can read.")


def moved_off(err: float, where: str) -> str:
    return "the optimizer could not step them" if math.isinf(err) else f"{where} moved {err:.0%} off their sum"


def is_fp32_master(got: dict, want: dict) -> bool:
    """A master as it came back holds the reference's values in fp32 (and, as the probe saw it, is a leaf that
    requires grad: a report, which only ever fails the check)."""
    value = got.get("value")
    return (value is not None and value.dtype == torch.float32 and max_abs_diff(value, want["value"]) == 0
            and got["is_leaf"] and got["requires_grad"])


@pytest.mark.behaviour("fp32_leaves")
@pytest.mark.parametrize("model", [FP16, FROZEN, FP32], ids=["fp16", "fp16, a frozen bias", "fp32"])
def test_model_is_left_as_it_was(student, reference, model):
    """make_master_params leaves the model alone: same parameter objects, values, dtype and requires_grad"""
    scenario = master_scenario(model, model_values(model), seed=model["seed"] * 17)
    got = student.run("make_master_params", **scenario)
    off, where = grads_off(got.get("model_grads"), reference.run("make_master_params", **scenario)["model_grads"])
    assert not off, (
        "after make_master_params(model), a backward() through the model gives other gradients than it should "
        f"({where}): the call changed the model's parameters (their values, dtype or requires_grad), or put "
        "others in their place. The copies must leave the model as it was.")
    kept = got["model_kept"]
    assert kept["same_objects"], (
        "after make_master_params(model), model.parameters() are not the same objects as before: the copies "
        "must leave the model's own parameters in place.")
    assert kept["requires_grad"], (
        "after make_master_params(model), a model parameter's requires_grad changed (the model's parameters "
        "must still require grad, or backward() gives them no gradient). Hint: detach() a copy, then call "
        ".requires_grad_(True) on the copy, not on the parameter.")
    assert kept["values"], "make_master_params(model) changed the model's parameters (values or dtype)."


@pytest.mark.behaviour("separate_copies")
def test_fp32_model_masters_are_copies(student):
    """Masters of a model that is already fp32 are still copies"""
    got = student.run("make_master_params", **master_scenario(FP32, model_values(FP32), seed=5))
    for i, m in enumerate(got["masters"]):
        assert not moved_with_the_model(m, got["after_model_changed"][i]), (
            f"For an fp32 model, master {i} changed when the model did: it is the parameter itself. "
            "p.float() returns p unchanged when p is already fp32; use p.detach().clone().float() or "
            "p.detach().to(torch.float32, copy=True).")


@pytest.mark.behaviour("fp32_leaves")
def test_masters_are_a_sequence(student):
    """make_master_params returns a list, reusable by the optimizer and by the step"""
    scenario = master_scenario(FP16, model_values(FP16), seed=6)
    got = student.run("make_master_params", **scenario)
    assert got["type"] in ("list", "tuple") and update_error(got, scenario)[0] < UPDATE_TOLERANCE, (
        f"make_master_params returned a {got['type']}, which an optimizer built on it after it was read once could "
        "not step; return a list (a generator can be read only once).")


def grads_for(model, seed, none_at=()):
    g = torch.Generator().manual_seed(seed)
    values = model_values(model)
    return [None if i in none_at else (torch.randn(v.shape, generator=g) * 1e-3).to(v.dtype)
            for i, v in enumerate(values)]


def where_none(master_grads: list, grads: list, stale: list) -> str:
    """What the masters' grads show where the model's .grad is None (every master's .grad held 9.0 before)."""
    for i, (m, g, old) in enumerate(zip(master_grads, grads, stale)):
        if g is None and m is not None:
            kept = max_abs_diff(m, old) == 0
            return (f"Parameter {i} has no .grad, but master {i}'s .grad is "
                    + ("still the stale 9.0 it held before the call" if kept else
                       "zeros" if bool((m == 0).all()) else "a tensor")
                    + ": where the model's .grad is None, set the master's .grad to None.")
    return "Where the model's .grad is None, the master's .grad must become None."


@pytest.mark.behaviour("grads_to_fp32")
@pytest.mark.parametrize("model,as_generator", [(FP16, False), (BF16, True), (FP16, True)],
                         ids=["fp16 list", "bf16 generator", "fp16 generator"])
def test_grads_match_reference(student, reference, model, as_generator):
    """model_grads_to_master_grads copies grads to fp32, replacing stale master grads, None for None"""
    masters = fp32_masters(model)
    grads = grads_for(model, 3, none_at=(1,))
    stale = [torch.full_like(m, 9.0) for m in masters]  # left over from an earlier step
    spec = dict(model=model, grads=grads, masters=masters, master_grads=stale, as_generator=as_generator)
    got, want = student.run("model_grads_to_master_grads", **spec), reference.run("model_grads_to_master_grads", **spec)
    diff, where = tensor_list_diff(got["master_grads"], want["master_grads"])
    assert diff == 0, (
        f"model_grads_to_master_grads({'model.parameters()' if as_generator else 'a list of params'}, masters) "
        f"with a {model['dtype']} model: {where} differs from an fp32 copy of the model's grad (by {diff}). "
        + where_none(got["master_grads"], grads, stale))
    assert all(g is None or g.dtype == torch.float32 for g in got["master_grads"]), (
        f"master grads have dtypes {got['master_grad_dtypes']}; they must be float32.")


@pytest.mark.behaviour("copy_back_any_dtype")
@pytest.mark.parametrize("model,as_generator", [(FP16, True), (BF16, False), (FP32, False), (BUFFERS, False)],
                         ids=["fp16 generator", "bf16 list", "fp32 list", "fp16 with BatchNorm's buffers"])
def test_copy_back_matches_reference(student, reference, model, as_generator):
    """master_params_to_model_params rounds masters into the same parameters, leaving the masters alone"""
    g = torch.Generator().manual_seed(4)
    masters = [m + torch.randn(m.shape, generator=g) * 1e-2 for m in fp32_masters(model)]
    spec = dict(model=model, masters=masters, as_generator=as_generator, inputs=model_inputs(model, 4, seed=7),
                change=[torch.randn(m.shape, generator=g) for m in masters])
    got, want = student.run("master_params_to_model_params", **spec), reference.run("master_params_to_model_params", **spec)
    diff, where = tensor_list_diff(got["values"], want["values"])
    assert diff == 0, (f"After master_params_to_model_params with a {model['dtype']} model, {where} is not its "
                       f"master rounded to {model['dtype']} (off by {diff:.3g}).")
    assert all(got["same_objects"]) and all(got["dtypes_kept"]) and same_dtypes(got, want), (
        "master_params_to_model_params must keep the model's parameter objects and dtype: copy in place.")
    off, _ = grads_off(got.get("model_grads"), want["model_grads"])
    assert all(got["leaves"]) and not off, (
        "after the copy a parameter is no longer a leaf (a backward() through the model gives other gradients): "
        "do the copy under torch.no_grad().")
    moved, _ = tensor_list_diff(got["masters_after"], masters)
    assert moved == 0, "master_params_to_model_params changed the masters; only the model changes."
    aliased, where = tensor_list_diff(got["masters_after_model_changed"], masters)
    assert aliased == 0, (
        f"After master_params_to_model_params with a {model['dtype']} model, changing the model changed the "
        f"masters too ({where}): the model now shares memory with them. Copy the values in place, "
        "p.copy_(master) under torch.no_grad(), rather than pointing p.data at the master.")


def same_dtypes(got: dict, want: dict) -> bool:
    """The model's parameters came back in the dtypes the reference's did."""
    return [v.dtype for v in got["values"]] == [v.dtype for v in want["values"]]


# ---- scenarios: models drawn at random (dtype, layers, frozen and unused parameters, list or generator) ----

def scenario(seed: int) -> dict:
    rng = random.Random(seed)
    dtype = rng.choice(["float16", "bfloat16", "float32"])
    arch = rng.choice(["mlp", "embed", "lm"])
    if arch == "mlp":
        model = {"arch": "mlp", "sizes": [rng.randint(2, 6) for _ in range(rng.randint(2, 4))], "bias": rng.random() < 0.8}
        frozen = "0.weight"
    elif arch == "embed":
        model, frozen = {"arch": "embed", "vocab": 9, "dim": 4, "classes": 3}, "embed.weight"
    else:
        model, frozen = {"arch": "lm", "vocab": 7, "dim": 3}, "head.bias"
    model.update(seed=700 + seed, dtype=dtype)
    extra = rng.choice(["frozen", "unused", "none"])
    if extra == "frozen":
        model["frozen"] = frozen
    if extra == "unused":
        model["unused"] = True
    return {"model": model, "as_generator": rng.random() < 0.5, "none_at": rng.randrange(8)}


# four draws that between them hold every dtype, a frozen and an unused parameter, a list and a generator
SEEDS = (0, 2, 9, 10)


def named(spec: dict) -> str:
    m = spec["model"]
    return (f"a {m['dtype']} {m['arch']} model" + (f" with {m['frozen']} frozen" if "frozen" in m else "")
            + (" with a parameter the forward never uses" if m.get("unused") else ""))


@pytest.mark.behaviour("fp32_leaves")
@pytest.mark.parametrize("seed", SEEDS, ids=[f"scenario {i}" for i in SEEDS])
def test_random_models_masters(student, reference, seed):
    """Random models: make_master_params gives what the reference gives, and leaves the model alone"""
    spec = scenario(seed)
    use = master_scenario(spec["model"], model_values(spec["model"]), seed=1000 + seed)
    got = student.run("make_master_params", **use)
    want = reference.run("make_master_params", **use)
    assert len(got["masters"]) == len(want["masters"]), (
        f"make_master_params({named(spec)}) returned {len(got['masters'])} masters for {len(want['masters'])} "
        "parameters.")
    for i, (g, w) in enumerate(zip(got["masters"], want["masters"])):
        assert is_fp32_master(g, w), (
            f"make_master_params({named(spec)}): master {i} should be an fp32 leaf with requires_grad=True "
            f"holding parameter {i}'s values; got {({k: v for k, v in g.items() if k != 'value'})}.")
    err, where = update_error(got, use)
    assert err < UPDATE_TOLERANCE, (
        f"make_master_params({named(spec)}), then 4 SGD steps too small for fp16 on the masters: "
        f"{moved_off(err, where)}. The masters must be fp32 leaves with requires_grad=True, in a list.")
    changed = [k for k, v in got["model_kept"].items() if not v]
    off, where = grads_off(got.get("model_grads"), want["model_grads"])
    what = changed or f"a backward() through it gives other gradients, at {where}"
    assert not changed and not off, f"make_master_params({named(spec)}) changed the model ({what})."


@pytest.mark.behaviour("grads_to_fp32")
@pytest.mark.parametrize("seed", SEEDS, ids=[f"scenario {i}" for i in SEEDS])
def test_random_models_grads(student, reference, seed):
    """Random models: model_grads_to_master_grads gives what the reference gives"""
    spec = scenario(seed)
    masters = fp32_masters(spec["model"])
    grads = grads_for(spec["model"], 800 + seed, none_at=(spec["none_at"] % len(masters),))
    stale = [torch.full_like(m, 9.0) for m in masters]
    call = dict(model=spec["model"], grads=grads, masters=masters, master_grads=stale, as_generator=spec["as_generator"])
    got = student.run("model_grads_to_master_grads", **call)
    want = reference.run("model_grads_to_master_grads", **call)
    diff, where = tensor_list_diff(got["master_grads"], want["master_grads"])
    assert diff == 0 and all(g is None or g.dtype == torch.float32 for g in got["master_grads"]), (
        f"model_grads_to_master_grads({named(spec)}, {'a generator' if spec['as_generator'] else 'a list'}): "
        f"{where or 'the master grads'} differ from fp32 copies of the model's grads (None where it is None); "
        f"dtypes {got['master_grad_dtypes']}.")


@pytest.mark.behaviour("copy_back_any_dtype")
@pytest.mark.parametrize("seed", SEEDS, ids=[f"scenario {i}" for i in SEEDS])
def test_random_models_copy_back(student, reference, seed):
    """Random models: master_params_to_model_params gives what the reference gives"""
    spec = scenario(seed)
    g = torch.Generator().manual_seed(900 + seed)
    masters = [m + torch.randn(m.shape, generator=g) * 1e-2 for m in fp32_masters(spec["model"])]
    call = dict(model=spec["model"], masters=masters, as_generator=spec["as_generator"],
                inputs=model_inputs(spec["model"], 4, seed=950 + seed))
    got = student.run("master_params_to_model_params", **call)
    want = reference.run("master_params_to_model_params", **call)
    diff, where = tensor_list_diff(got["values"], want["values"])
    kept = (all(got["same_objects"]) and all(got["dtypes_kept"]) and got["leaves"] == want["leaves"]
            and same_dtypes(got, want) and not grads_off(got.get("model_grads"), want["model_grads"])[0])
    assert diff == 0 and kept, (
        f"master_params_to_model_params({named(spec)}, {'a generator' if spec['as_generator'] else 'a list'}): "
        + (f"{where} is not its master rounded to the model's dtype (off by {diff:.3g})." if diff else
           "the parameters should stay the same objects, in their dtype, leaves that require grad (frozen ones "
           "as they were): copy in place under torch.no_grad()."))
