"""The master weights' probes: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.models import grads_of, make_leaves, shares_memory, values_of
    from ...checks.plain_data import attr, dtype_name, plain_tensor


@probe
def make_master_params(ctx, ns, model, inputs=None, change=None, pulls=None, lr=2.0 ** -14, steps=4):
    """Make the masters, then use them as training does. inputs: the model is trained on them next (its
    gradients, read through the parameters held before the call, show whether it was left as it was). change:
    added to the model afterwards (masters that alias it move too). pulls: `steps` SGD steps on the masters of
    the loss sum(master * pull), each moving a master by -lr * pull: only an fp32 leaf that requires grad, in a
    container an optimizer can take after it was read once, moves by all of them."""
    fn = lookup(ns, "make_master_params")
    net = ctx.model(model)
    params = list(net.parameters())
    before = values_of(params)
    grad_flags = [bool(attr(p, "requires_grad")) for p in params]
    returned = ctx.call("make_master_params(model)", fn, net)
    after = list(net.parameters())
    out = {"type": type(returned).__name__,
           # the model as make_master_params left it: the same parameter objects, values, dtypes and flags
           "model_kept": {"same_objects": len(after) == len(params) and all(a is p for a, p in zip(after, params)),
                          "requires_grad": [bool(attr(p, "requires_grad")) for p in after] == grad_flags,
                          "values": all(bool((v == w).all()) for v, w in zip(values_of(after), before))
                          and all(dtype_name(a) == dtype_name(p) for a, p in zip(after, params))},
           "model_dtypes": [dtype_name(p) for p in params], "model_devices": [str(attr(p, "device")) for p in params]}
    try:
        masters = list(returned)  # read once, as the optimizer will
    except Exception:
        return {**out, "length": -1, "masters": []}
    out["length"] = len(masters)
    out["masters"] = [master_entry(m, p) for m, p in zip(masters, params + [None] * len(masters))]
    tensors = [m if isinstance(m, torch.Tensor) else None for m in masters]
    if inputs is not None:
        out["model_grads"] = trained(net, params, inputs)
    if change is not None:
        with torch.no_grad():
            for p, d in zip(params, change):
                p.add_(d.to(attr(p, "dtype")))
        out["after_model_changed"] = [None if m is None else plain_tensor(m) for m in tensors]
    if pulls is not None:
        out["updated"] = updated(returned, tensors, pulls, lr, steps)
    return out


def master_entry(m, p) -> dict:
    """A master's values, as it came back, and what the probe sees of it (reports, for the messages)."""
    if not isinstance(m, torch.Tensor):
        return {"type": type(m).__name__}
    return {"type": "Tensor", "value": plain_tensor(m), "dtype": dtype_name(m), "device": str(attr(m, "device")),
            "shape": list(attr(m, "shape")), "is_leaf": bool(attr(m, "is_leaf")),
            "requires_grad": bool(attr(m, "requires_grad")),
            "shares_memory": p is not None and shares_memory(m, p)}


def trained(net, params, inputs):
    """One forward and backward of the model on `inputs`, as the next training step runs it: each parameter's
    .grad, read through `params` (the references held before the call), or None where the model could not be
    trained at all."""
    for p in params:
        p.grad = None
    try:
        net(inputs).float().square().mean().backward()
    except Exception:  # no parameter requires grad any more, or they no longer share one dtype
        return None
    return grads_of(params)


def updated(returned, masters: list, pulls: list, lr: float, steps: int):
    """The masters after `steps` SGD steps of the loss sum(master * pull), the optimizer built on what
    make_master_params returned (as the training step's optimizer is); None where no optimizer can take them
    (not leaves, not tensors, an empty or used-up container) or no master requires grad."""
    try:
        optimizer = torch.optim.SGD(returned, lr=lr)
    except Exception:
        return None
    for _ in range(steps):
        for m in masters:
            if m is not None:
                m.grad = None
        try:
            sum((m * pull).sum() for m, pull in zip(masters, pulls) if m is not None).backward()
            optimizer.step()
        except Exception:
            return None
    return [None if m is None else plain_tensor(m) for m in masters]


@probe
def model_grads_to_master_grads(ctx, ns, model, grads, masters, master_grads, as_generator=False, change=None):
    """change: added to the model's .grad afterwards (a master .grad that aliases it moves too)."""
    fn = lookup(ns, "model_grads_to_master_grads")
    net = ctx.model(model)
    params = list(net.parameters())
    for p, g in zip(params, grads):
        p.grad = None if g is None else g.clone().to(p.dtype)
    master_leaves = make_leaves(masters, master_grads)
    arg = net.parameters() if as_generator else params
    ctx.call("model_grads_to_master_grads(model_params, master_params)", fn, arg, master_leaves)
    out = {"master_grads": grads_of(master_leaves),
           "master_grad_dtypes": [None if attr(m, "grad") is None else dtype_name(attr(m, "grad"))
                                  for m in master_leaves]}
    with torch.no_grad():  # a master grad that aliases the model grad would move with it
        for i, p in enumerate(params):
            if p.grad is not None:
                p.grad.add_(1 if change is None else change[i].to(attr(p.grad, "dtype")))
    out["master_grads_after_model_changed"] = grads_of(master_leaves)
    return out


@probe
def master_params_to_model_params(ctx, ns, model, masters, as_generator=False, inputs=None, change=None):
    """The model's values after the copy, read through the parameters held before it; inputs: the model is then
    trained on them (a copy tracked by autograd, or parameters that no longer require grad, show in its
    gradients); change: added to the model afterwards (masters it now shares memory with move too)."""
    fn = lookup(ns, "master_params_to_model_params")
    net = ctx.model(model)
    params = list(net.parameters())
    dtypes = [attr(p, "dtype") for p in params]
    master_leaves = make_leaves(masters, [None] * len(masters))
    arg = net.parameters() if as_generator else params
    ctx.call("master_params_to_model_params(model_params, master_params)", fn, arg, master_leaves)
    after = list(net.parameters())
    out = {
        "values": values_of(params),
        "same_objects": [a is b for a, b in zip(after, params)] + [len(after) == len(params)],
        "dtypes_kept": [attr(a, "dtype") == d for a, d in zip(after, dtypes)],
        "leaves": [bool(attr(a, "is_leaf") and attr(a, "grad_fn") is None and attr(a, "requires_grad"))
                   for a in after],
        "masters_after": values_of(master_leaves),
    }
    if inputs is not None:
        out["model_grads"] = trained(net, params, inputs)
    with torch.no_grad():  # a model that now shares memory with its masters would move them too
        for i, p in enumerate(params):
            p.add_(1 if change is None else change[i].to(attr(p, "dtype")))
    out["masters_after_model_changed"] = values_of(master_leaves)
    return out
