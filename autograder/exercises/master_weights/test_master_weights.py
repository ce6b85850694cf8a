"""Visible checks for make_master_params, model_grads_to_master_grads,
master_params_to_model_params."""
import math

import pytest
import torch

from autograder.checks.compare import max_abs_diff, moved_with_the_model
from autograder.checks.read import dtype_of
from autograder.checks.scenarios import STEPS, grads_off, master_scenario, model_inputs, update_error

FP16_MODEL = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 1, "dtype": "float16"}
# with an fp32 model, .float() returns the very same tensor: only here can a master alias the model
FP32_MODEL = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 5, "dtype": "float32"}
UPDATE_TOLERANCE = 0.02  # of the steps' sum: fp32 rounding is about 0.1% of it, fp16 loses most of it


def holds_other_values(i: int, value, params: list) -> str:
    """Why master i's values are wrong, as far as they show it: another parameter's values (out of order)."""
    same = [j for j, p in enumerate(params) if j != i and max_abs_diff(value, p.float()) == 0]
    if same:
        return (f"master {i} holds parameter {same[0]}'s values, not parameter {i}'s: the masters are out of "
                "order. Hint: one master per parameter, in the order of model.parameters().")
    return f"master {i} does not hold parameter {i}'s values."


def not_copied(i: int, value, master_after, old) -> str:
    """What a parameter that does not hold its master after the copy shows of why (its values before: `old`)."""
    if max_abs_diff(master_after, old.half().float()) == 0:
        return (f"; master {i} now holds the model's old values instead: the copy went in the wrong direction, "
                "model -> masters. Hint: copy each master into its parameter, p.copy_(master).")
    if max_abs_diff(value, old.half()) == 0:
        return ("; it kept its old values, so nothing was written into the model. Assigning to the loop variable "
                "(p = ...) only rebinds a name: copy in place, p.copy_(master) under torch.no_grad().")
    return "."


def why_not_updated(out: dict, err: float, where: str) -> str:
    """Why the masters did not take the optimizer's steps as fp32 leaves do, as far as the answer shows it."""
    masters = out.get("masters", [])
    if out.get("updated") is None:
        if out.get("type") not in ("list", "tuple"):
            return (f"make_master_params returned a {out.get('type')}: the optimizer could not read it again after "
                    "it was read once. Hint: return a list (a generator can be read only once).")
        if not all(m.get("is_leaf", True) for m in masters):
            return ("The optimizer refused the masters: they are not leaves, they hang off the model's graph. "
                    "Hint: detach() the copy, then .requires_grad_(True).")
        return ("An optimizer could not step the masters: each must be a tensor with requires_grad=True, "
                "so that backward() gives it a .grad. Hint: detach() the copy, then .requires_grad_(True).")
    if not all(m.get("requires_grad", True) for m in masters):
        return (f"{where} did not move: it has requires_grad=False, so backward() gives it no .grad and the "
                "optimizer skips it. Hint: .requires_grad_(True) on each copy.")
    return (f"{where} did not add up the steps: each is smaller than fp16 can show at most weights, so only an "
            "fp32 master keeps them. Hint: .float() or .to(torch.float32) on each copy.")


@pytest.mark.behaviour("fp32_leaves")
def test_one_fp32_leaf_per_parameter(student, expected):
    """make_master_params returns one fp32 leaf per parameter, in order, with requires_grad=True: an optimizer
    adds up steps too small for fp16 on them"""
    want = expected("model_values", FP16_MODEL)
    scenario = master_scenario(FP16_MODEL, want, seed=1)
    out = student.run("make_master_params", **scenario)
    masters = out["masters"]
    assert len(masters) == len(want), (
        f"make_master_params(model) returned {len(masters)} tensors for a model with {len(want)} parameters "
        "(weights and biases of 2 Linear layers). Hint: one copy per tensor in model.parameters(), as a list.")
    for i, (m, w) in enumerate(zip(masters, want)):
        value = m.get("value")
        assert value is not None, f"make_master_params(model)[{i}] is a {m.get('type')}, not a tensor."
        assert value.dtype == torch.float32, (
            f"master {i} has dtype {dtype_of(value)}; masters must be float32. Hint: .float() or .to(torch.float32).")
        assert value.shape == w.shape, f"master {i} has shape {list(value.shape)}, the parameter has {list(w.shape)}."
        assert max_abs_diff(value, w.float()) == 0, holds_other_values(i, value, want)
        assert m["is_leaf"] and m["requires_grad"], (
            f"master {i}: is_leaf={m['is_leaf']}, requires_grad={m['requires_grad']}; both must be True so the "
            "optimizer can own it. Hint: detach() the copy, then .requires_grad_(True).")
        assert m["device"] == out["model_devices"][i], (
            f"master {i} is on {m['device']}, its parameter on {out['model_devices'][i]}: each master lives on its "
            "parameter's device. Hint: keep the device the copy comes from (p.detach().to(torch.float32, copy=True)); "
            "never .cuda() or a DEVICE constant, which the grader, on a CPU, does not have.")
    err, where = update_error(out, scenario)
    assert err < UPDATE_TOLERANCE, (
        f"An optimizer built on the masters was asked for {STEPS} SGD steps of 2^-14 * (a pull of 0.5 to 1): "
        + ("it could not step them. " if math.isinf(err) else f"{where} moved {err:.0%} off their sum. ")
        + why_not_updated(out, err, where))


@pytest.mark.behaviour("separate_copies")
def test_masters_share_no_memory(student, expected):
    """Changing the fp16 model afterwards does not change the masters"""
    want = expected("model_values", FP16_MODEL)
    out = student.run("make_master_params", **master_scenario(FP16_MODEL, want, seed=2))
    for i, (m, after) in enumerate(zip(out["masters"], out["after_model_changed"])):
        assert not moved_with_the_model(m, after), (
            f"After adding 0.5 to 1 to each of the model's weights, master {i} changed too: it shares memory with "
            "the model. Hint: make a real copy (clone) rather than a view.")


@pytest.mark.behaviour("grads_to_fp32")
def test_grads_are_copied_as_fp32(student, expected):
    """model_grads_to_master_grads gives each master an fp32 copy of the model's grad (None stays None)"""
    masters = expected("fp32_masters", FP16_MODEL)
    grads = [torch.randn(m.shape, generator=torch.Generator().manual_seed(i)).half() for i, m in enumerate(masters)]
    grads[1] = None
    out = student.run("model_grads_to_master_grads", model=FP16_MODEL, grads=grads, masters=masters,
                      master_grads=[None] * len(masters))
    for i, (got, g) in enumerate(zip(out["master_grads"], grads)):
        if g is None:
            assert got is None, f"parameter {i} has no .grad, so master {i}'s .grad should be None, but it is a tensor."
            continue
        assert got is not None, f"master {i} has no .grad after model_grads_to_master_grads."
        assert got.dtype == torch.float32, (
            f"master {i}'s .grad has dtype {dtype_of(got)}; it must be float32 like the master.")
        assert max_abs_diff(got, g.float()) == 0, f"master {i}'s .grad does not equal the model's gradient."


@pytest.mark.behaviour("copy_back")
def test_copy_back_keeps_dtype_and_parameters(student, expected):
    """master_params_to_model_params writes the masters into the same fp16 parameter objects"""
    before = expected("fp32_masters", FP16_MODEL)
    masters = [m + 0.25 for m in before]
    inputs = model_inputs(FP16_MODEL, 4, seed=3)
    out = student.run("master_params_to_model_params", model=FP16_MODEL, masters=masters, inputs=inputs)
    assert all(out["same_objects"]), (
        "After master_params_to_model_params, model.parameters() are not the same objects as before. "
        "An optimizer or a hook holding the old ones would be cut off. Hint: copy into each parameter in place.")
    took_masters = all(max_abs_diff(got, m) == 0 for got, m in zip(out["values"], masters))
    assert all(out["dtypes_kept"]) and all(v.dtype == torch.float16 for v in out["values"]), (
        "master_params_to_model_params changed the model's dtype; the working copy must stay float16. "
        + ("The parameters now hold the fp32 masters exactly: each took its master's tensor (p.data = ...) "
           "instead of a copy in place. " if took_masters else "")
        + "Hint: copy in place, p.copy_(m) under torch.no_grad(), which casts m to p's dtype.")
    for i, (got, m, old) in enumerate(zip(out["values"], masters, before)):
        assert max_abs_diff(got, m.half()) == 0, (
            f"parameter {i} does not hold master {i} rounded to float16"
            + not_copied(i, got, out["masters_after"][i], old))
    off, where = grads_off(out.get("model_grads"), expected("trained_grads", FP16_MODEL, inputs,
                                                             values=[m.half() for m in masters]))
    assert all(out["leaves"]) and not off, (
        "After the copy a model parameter is no longer a leaf (or lost requires_grad): a backward() through the "
        f"model no longer gives it the gradient it should ({where}). The copy was tracked by autograd. Hint: do it "
        "under `with torch.no_grad():`.")


@pytest.mark.behaviour("separate_copies")
def test_masters_of_an_fp32_model_own_their_memory(student, expected):
    """The masters of an fp32 model are copies: changing the model afterwards leaves them alone"""
    want = expected("model_values", FP32_MODEL)
    out = student.run("make_master_params", **master_scenario(FP32_MODEL, want, seed=4))
    assert len(out["masters"]) == len(want), (
        f"make_master_params(fp32 model) returned {len(out['masters'])} tensors for {len(want)} parameters.")
    for i, m in enumerate(out["masters"]):
        assert not moved_with_the_model(m, out["after_model_changed"][i]), (
            f"make_master_params(model) on an fp32 model: master {i} shares memory with parameter {i} (changing "
            "the model changed it too). For an fp32 tensor, .float() and .to(torch.float32) return the tensor "
            "itself, not a copy. Hint: .clone() it, or pass copy=True to .to().")


@pytest.mark.behaviour("grads_to_fp32")
def test_master_grads_share_no_memory_with_the_model(student, expected):
    """model_grads_to_master_grads gives an fp32 model's masters gradients of their own"""
    masters = expected("fp32_masters", FP32_MODEL)
    grads = [torch.randn(m.shape, generator=torch.Generator().manual_seed(10 + i)) for i, m in enumerate(masters)]
    out = student.run("model_grads_to_master_grads", model=FP32_MODEL, grads=grads, masters=masters,
                      master_grads=[None] * len(masters))
    for i, (got, after, g) in enumerate(zip(out["master_grads"], out["master_grads_after_model_changed"], grads)):
        assert got is not None and max_abs_diff(got, g) == 0, (
            f"model_grads_to_master_grads on an fp32 model: master {i}'s .grad does not equal the model's gradient.")
        assert after is not None and max_abs_diff(after, g) == 0, (
            f"model_grads_to_master_grads on an fp32 model: master {i}'s .grad shares memory with the model's "
            "(adding 1 to the model's .grad changed it too), so the next backward() or zero_grad() would change "
            "the masters' gradients behind the optimizer's back. For an fp32 gradient, .float() returns the same "
            "tensor. Hint: p.grad.detach().to(torch.float32, copy=True), or .clone().")
