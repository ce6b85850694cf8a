"""Visible checks for Exercise 4: make_master_params, model_grads_to_master_grads,
master_params_to_model_params."""
import pytest
import torch

from autograder.checks.expect import expected, max_abs_diff, moved_with_the_model

FP16_MODEL = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 1, "dtype": "float16"}
# with an fp32 model, .float() returns the very same tensor: only here can a master alias the model
FP32_MODEL = {"arch": "mlp", "sizes": [4, 6, 3], "seed": 5, "dtype": "float32"}


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


@pytest.mark.behaviour("fp32_leaves")
def test_one_fp32_leaf_per_parameter(student):
    """make_master_params returns one fp32 leaf per parameter, in order, with requires_grad=True"""
    want = expected("model_values", FP16_MODEL)
    out = student.run("make_master_params", model=FP16_MODEL)
    assert out["length"] == len(want), (
        f"make_master_params(model) returned {out['length']} tensors for a model with {len(want)} parameters "
        "(weights and biases of 2 Linear layers). Hint: one copy per tensor in model.parameters(), as a list.")
    for i, (m, w) in enumerate(zip(out["masters"], want)):
        assert m.get("type") == "Tensor", f"make_master_params(model)[{i}] is a {m.get('type')}, not a tensor."
        assert m["dtype"] == "float32", (
            f"master {i} has dtype {m['dtype']}; masters must be float32. Hint: .float() or .to(torch.float32).")
        assert m["shape"] == list(w.shape), f"master {i} has shape {m['shape']}, the parameter has {list(w.shape)}."
        assert max_abs_diff(m["value"], w.float()) == 0, holds_other_values(i, m["value"], want)
        assert m["is_leaf"] and m["requires_grad"], (
            f"master {i}: is_leaf={m['is_leaf']}, requires_grad={m['requires_grad']}; both must be True so the "
            "optimizer can own it. Hint: detach() the copy, then .requires_grad_(True).")
        assert m["device"] == out["model_devices"][i], (
            f"master {i} is on {m['device']}, its parameter on {out['model_devices'][i]}: each master lives on its "
            "parameter's device. Hint: keep the device the copy comes from (p.detach().to(torch.float32, copy=True)); "
            "never .cuda() or a DEVICE constant, which the grader, on a CPU, does not have.")


@pytest.mark.behaviour("separate_copies")
def test_masters_share_no_memory(student):
    """Changing the fp16 model afterwards does not change the masters"""
    out = student.run("make_master_params", model=FP16_MODEL)
    for i, m in enumerate(out["masters"]):
        assert not moved_with_the_model(m, out["after_model_changed"][i]), (
            f"After adding 1 to the model's parameters, master {i} changed too: it shares memory with the model. "
            "Hint: make a real copy (clone) rather than a view.")


@pytest.mark.behaviour("grads_to_fp32")
def test_grads_are_copied_as_fp32(student):
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
        assert out["master_grad_dtypes"][i] == "float32", (
            f"master {i}'s .grad has dtype {out['master_grad_dtypes'][i]}; it must be float32 like the master.")
        assert max_abs_diff(got, g.float()) == 0, f"master {i}'s .grad does not equal the model's gradient."


@pytest.mark.behaviour("copy_back")
def test_copy_back_keeps_dtype_and_parameters(student):
    """master_params_to_model_params writes the masters into the same fp16 parameter objects"""
    before = expected("fp32_masters", FP16_MODEL)
    masters = [m + 0.25 for m in before]
    out = student.run("master_params_to_model_params", model=FP16_MODEL, masters=masters)
    assert all(out["same_objects"]), (
        "After master_params_to_model_params, model.parameters() are not the same objects as before. "
        "An optimizer or a hook holding the old ones would be cut off. Hint: copy into each parameter in place.")
    took_masters = all(max_abs_diff(got, m) == 0 for got, m in zip(out["values"], masters))
    assert all(out["dtypes_kept"]), (
        "master_params_to_model_params changed the model's dtype; the working copy must stay float16. "
        + ("The parameters now hold the fp32 masters exactly: each took its master's tensor (p.data = ...) "
           "instead of a copy in place. " if took_masters else "")
        + "Hint: copy in place, p.copy_(m) under torch.no_grad(), which casts m to p's dtype.")
    for i, (got, m, old) in enumerate(zip(out["values"], masters, before)):
        assert max_abs_diff(got, m.half()) == 0, (
            f"parameter {i} does not hold master {i} rounded to float16"
            + not_copied(i, got, out["masters_after"][i], old))
    assert all(out["leaves"]), (
        "After the copy a model parameter is no longer a leaf (or lost requires_grad): the copy was tracked "
        "by autograd. Hint: do it under `with torch.no_grad():`.")


@pytest.mark.behaviour("separate_copies")
def test_masters_of_an_fp32_model_own_their_memory(student):
    """The masters of an fp32 model are copies: changing the model afterwards leaves them alone"""
    want = expected("model_values", FP32_MODEL)
    out = student.run("make_master_params", model=FP32_MODEL)
    assert out["length"] == len(want), (
        f"make_master_params(fp32 model) returned {out['length']} tensors for {len(want)} parameters.")
    for i, m in enumerate(out["masters"]):
        assert not moved_with_the_model(m, out["after_model_changed"][i]), (
            f"make_master_params(model) on an fp32 model: master {i} shares memory with parameter {i} (adding 1 "
            "to the model changed it too). For an fp32 tensor, .float() and .to(torch.float32) return the tensor "
            "itself, not a copy. Hint: .clone() it, or pass copy=True to .to().")


@pytest.mark.behaviour("grads_to_fp32")
def test_master_grads_share_no_memory_with_the_model(student):
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
