"""The probes: one driver per exercise that calls the student's code on plain inputs and reports what
happened as plain data (a dict of tensors, numbers, strings, lists). The checks decide pass or fail.

Built from harness.py: imported from there as a module; in the sandbox, harness.py has already been
executed into this file's namespace (see harness.py), and nothing is imported.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from .harness import (DTYPES, StudentRaised, attr, call, describe, describe_exception, dtype_name, graphs_alive,
                          grads_of, kwargs_text, lookup, make_leaves, make_optimizer, plain_tensor, probe, prop,
                          recorded_model, shape_text, shares_memory, state_of, values_of)

# A probe reports values: what the code returned, and what it left in the objects the probe handed it, read
# back through the references the probe held before the call (a caller's view). What it observes besides
# (aliasing, dtypes, flags, recorded sizes) are reports, for the messages only (checks/answers.py declares
# which is which). Each scenario below turns a behaviour into values: a later use of what the code made.
    from .harness import run  # noqa: F401  (probes.run(namespace, name, spec) runs one of the probes below)

# ---- Exercise 1 ----

@probe
def underflow_fraction(ns, values, dtype=None, twice=False):
    """twice: call it again on the same tensor, as later code that reuses the input would ("again")."""
    fn = lookup(ns, "underflow_fraction")
    args = (values,) if dtype is None else (values, DTYPES[dtype])
    what = f"underflow_fraction({shape_text(values)}{'' if dtype is None else ', torch.' + dtype})"
    out = {"result": describe(call(what, fn, *args)), "input_after": plain_tensor(values)}
    if twice:
        out["again"] = describe(call(what + ", called again on the same tensor", fn, *args))
    return out



# ---- Exercises 2 and 3 ----

@probe
def loss_scaler(ns, cls="StaticLossScaler", init=None, loss_weights=None, values=(), grads=(),
                dtype="float32", as_generator=False, args=()):
    """Construct the scaler (args positionally, init by keyword), scale a loss and backprop it, then unscale_ a
    set of gradients."""
    Scaler = lookup(ns, cls)
    init = init or {}
    shown_args = ", ".join([*(repr(a) for a in args), *([kwargs_text(init)] if init else [])])
    scaler = call(f"{cls}({shown_args})", Scaler, *args, **init)
    out = {"scale": describe(getattr(scaler, "scale", None))}
    if loss_weights is not None:
        w = loss_weights.clone().requires_grad_(True)
        loss = (w * w).sum() / 2  # d loss / d w = w, so after backward w.grad = scale * w
        scaled = call("scaler.scale_loss(loss)", scaler.scale_loss, loss)
        out["scaled_loss"] = describe(scaled)
        if isinstance(scaled, torch.Tensor) and scaled.requires_grad:
            scaled.backward()
            out["weight_grad"] = plain_tensor(w.grad)
    if values:
        params = make_leaves(values, grads, DTYPES[dtype])
        buffer = flat_grads(params)
        arg = (p for p in params) if as_generator else params
        found = call(f"scaler.unscale_({'a generator of' if as_generator else 'a list of'} {len(params)} params)",
                     scaler.unscale_, arg)
        out["found_inf"] = describe(found)
        out["grads"] = grads_of(params)
        out["held_grads"] = held(buffer, grads)  # divided in place shows here; a new .grad tensor does not
        out["scale_after"] = describe(getattr(scaler, "scale", None))
    return out


def flat_grads(leaves):
    """Put the leaves' gradients in one flat buffer, each .grad a view of it, as DDP's buckets and flattened
    master gradients hold them; the buffer, as the caller holds it."""
    grads = [attr(leaf, "grad") for leaf in leaves]
    if all(g is None for g in grads):
        return None
    buffer = torch.cat([g.reshape(-1) for g in grads if g is not None])
    start = 0
    for leaf, g in zip(leaves, grads):
        if g is not None:
            leaf.grad = buffer[start:start + g.numel()].view(g.shape)
            start += g.numel()
    return buffer


def held(buffer, like: list) -> list:
    """What the caller's flat gradient buffer holds, cut back into tensors shaped as `like` (None where None)."""
    out, start = [], 0
    for g in like:
        if g is None:
            out.append(None)
            continue
        out.append(plain_tensor(buffer[start:start + g.numel()].view(g.shape)))
        start += g.numel()
    return out


@probe
def scaler_updates(ns, init=None, found_infs=(), args=()):
    """Construct a DynamicLossScaler (positional `args`, then keywords `init`) and feed it a sequence of
    found_inf flags; report the scales."""
    Scaler = lookup(ns, "DynamicLossScaler")
    init, args = init or {}, list(args)
    shown = ", ".join([*(repr(a) for a in args), *([kwargs_text(init)] if init else [])])
    scaler = call(f"DynamicLossScaler({shown})", Scaler, *args, **init)
    scales = [describe(getattr(scaler, "scale", None))]
    for step, found in enumerate(found_infs):
        call(f"scaler.update({found}) at update {step + 1}", scaler.update, bool(found))
        scales.append(describe(getattr(scaler, "scale", None)))
    return {"scales": scales}


@probe
def scalers_side_by_side(ns, cls="StaticLossScaler", init=None, other_init=None, found_infs=(), other_found_infs=(),
                         grads=()):
    """One scaler used alone, then a fresh one used with a second one made right after it (the second updated in
    turn with other_found_infs): each one's scales and what its unscale_ makes of `grads`, and the second one's
    scales ("other_scales"). Instances that keep their state on self give the same answers both times, right or
    wrong; any difference is state they share."""
    Scaler = lookup(ns, cls)
    init, other_init = init or {}, other_init or {}

    def used(scaler, other=None):
        scales = [describe(getattr(scaler, "scale", None))]
        other_scales = [describe(getattr(other, "scale", None))] if other is not None else []
        for step, found in enumerate(found_infs):
            if other is not None and step < len(other_found_infs):
                call(f"second.update({other_found_infs[step]})", other.update, bool(other_found_infs[step]))
                other_scales.append(describe(getattr(other, "scale", None)))
            call(f"scaler.update({found}) at update {step + 1}", scaler.update, bool(found))
            scales.append(describe(getattr(scaler, "scale", None)))
        params = make_leaves([torch.ones_like(g) for g in grads], grads)
        if params:
            call("scaler.unscale_(params)", scaler.unscale_, params)
        return {"scales": scales, "grads": grads_of(params), "other_scales": other_scales}

    alone = used(call(f"{cls}({kwargs_text(init)})", Scaler, **init))
    first = call(f"{cls}({kwargs_text(init)})", Scaler, **init)
    second = call(f"{cls}({kwargs_text(other_init)})", Scaler, **other_init)
    return {"alone": alone, "beside": used(first, second)}



# ---- Exercise 4 ----

@probe
def make_master_params(ns, model, inputs=None, change=None, pulls=None, lr=2.0 ** -14, steps=4):
    """Make the masters, then use them as training does. inputs: the model is trained on them next (its
    gradients, read through the parameters held before the call, show whether it was left as it was). change:
    added to the model afterwards (masters that alias it move too). pulls: `steps` SGD steps on the masters of
    the loss sum(master * pull), each moving a master by -lr * pull: only an fp32 leaf that requires grad, in a
    container an optimizer can take after it was read once, moves by all of them."""
    fn = lookup(ns, "make_master_params")
    net = prop("build_model")(model)
    params = list(net.parameters())
    before = values_of(params)
    grad_flags = [bool(attr(p, "requires_grad")) for p in params]
    returned = call("make_master_params(model)", fn, net)
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
def model_grads_to_master_grads(ns, model, grads, masters, master_grads, as_generator=False, change=None):
    """change: added to the model's .grad afterwards (a master .grad that aliases it moves too)."""
    fn = lookup(ns, "model_grads_to_master_grads")
    net = prop("build_model")(model)
    params = list(net.parameters())
    for p, g in zip(params, grads):
        p.grad = None if g is None else g.clone().to(p.dtype)
    master_leaves = make_leaves(masters, master_grads)
    arg = net.parameters() if as_generator else params
    call("model_grads_to_master_grads(model_params, master_params)", fn, arg, master_leaves)
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
def master_params_to_model_params(ns, model, masters, as_generator=False, inputs=None, change=None):
    """The model's values after the copy, read through the parameters held before it; inputs: the model is then
    trained on them (a copy tracked by autograd, or parameters that no longer require grad, show in its
    gradients); change: added to the model afterwards (masters it now shares memory with move too)."""
    fn = lookup(ns, "master_params_to_model_params")
    net = prop("build_model")(model)
    params = list(net.parameters())
    dtypes = [attr(p, "dtype") for p in params]
    master_leaves = make_leaves(masters, [None] * len(masters))
    arg = net.parameters() if as_generator else params
    call("master_params_to_model_params(model_params, master_params)", fn, arg, master_leaves)
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


# ---- Exercise 5 ----

@probe
def accumulate_gradients(ns, model, inputs, targets, loss, micro_batch_size, stale_grads=False, at_most=None,
                         twice=False):
    """at_most: the model's first layer returns NaN for a call of more examples (the gradients show it); twice:
    call it again on the same batch, from no gradient: its gradients ("grads_again") show any weight the first
    call changed."""
    fn = lookup(ns, "accumulate_gradients")
    net, batches = recorded_model(model, at_most)
    params = list(net.parameters())
    if stale_grads:
        for p in params:
            if p.requires_grad:
                p.grad = torch.full_like(p, 3.0)
    what = f"accumulate_gradients(model, {loss}, batch of {len(inputs)}, micro_batch_size={micro_batch_size})"
    with graphs_alive(batches) as graphs:
        result = call(what, fn, net, prop("LOSSES")[loss], inputs, targets, micro_batch_size)
    out = {"returned": describe(result), "grads": grads_of(params), "batches": batches, "graphs_alive": graphs["most"],
           "names": [name for name, _ in net.named_parameters()], "weights": values_of(params)}
    if twice:  # from no gradient again: only a weight the first call changed can make the second differ
        for p in params:
            p.grad = None
        call(what + ", called again", fn, net, prop("LOSSES")[loss], inputs, targets, micro_batch_size)
        out["grads_again"] = grads_of(params)
    return out


# ---- Exercise 6 ----


@probe
def mixed_precision_train_step(ns, model, masters, batches, loss, micro_batch_size, optimizer,
                               scaler=None, max_grad_norm=None, stale_grads=False, at_most=None):
    """Run the student's step once per (inputs, targets) in `batches`; report everything it touched, the model
    read through the parameters held before the first call. at_most: the model's first layer returns NaN for a
    call of more examples."""
    fn = lookup(ns, "mixed_precision_train_step")
    Scaler = prop("counting")(lookup(ns, "DynamicLossScaler"))
    net, seen = recorded_model(model, at_most)
    params = list(net.parameters())
    master_leaves = make_leaves(masters, [None] * len(masters))
    opt = make_optimizer(master_leaves, optimizer)
    scaler_obj = call(f"DynamicLossScaler({kwargs_text(scaler or {})})", Scaler, **(scaler or {}))
    steps, most = [], 0
    for i, (inputs, targets) in enumerate(batches):
        if stale_grads:
            for p in params:
                p.grad = torch.full_like(p, 7.0)
            for m in master_leaves:
                m.grad = torch.full_like(m, -5.0)
        scaler_obj.update_calls = []
        what = (f"mixed_precision_train_step(model, master_params, {optimizer['name']}, scaler, {loss}, "
                f"batch of {len(inputs)}, micro_batch_size={micro_batch_size}, max_grad_norm={max_grad_norm})"
                + (f" [call {i + 1}]" if len(batches) > 1 else ""))
        losses = []  # a report: (dtype of the output loss_fn was given, the loss) per call of it
        with graphs_alive(seen) as graphs:
            result = call(what, fn, net, master_leaves, opt, scaler_obj, prop("recorded_loss")(
                prop("LOSSES")[loss], losses), inputs, targets, micro_batch_size, max_grad_norm)
        most = max(most, graphs["most"])
        steps.append({
            "returned": describe(result),
            "masters": values_of(master_leaves),
            "model": values_of(params),
            "model_grads": grads_of(params),  # as backward() left them, unless the step cleared them
            "state": state_of(opt),
            "scale": describe(getattr(scaler_obj, "scale", None)),
            "update_calls": list(scaler_obj.update_calls),
            "loss_calls": losses,
        })
    after = list(net.parameters())
    return {
        "steps": steps,
        "batches_seen": seen,
        "graphs_alive": most,  # a report: the most micro-batch graphs held at once
        "model_dtypes": [dtype_name(p) for p in after],  # reports: the model's values above show both
        "same_objects": [a is b for a, b in zip(after, params)] + [len(after) == len(params)],
    }


# ---- Practice question 5 ----

@probe
def q5_answer(ns):
    return {"answer": describe(lookup(ns, "Q5_ANSWER"))}


# ---- Exercise 7 ----

@probe
def token_accumulation(ns, model, inputs, targets, micro_batch_size, ignore_index=None, stale_grads=False,
                       at_most=None, twice=False):
    """Call accumulate_token_gradients once; a ValueError is reported (an empty batch must raise one). at_most:
    the model's first layer returns NaN for a call of more sequences; twice: call it again on the same batch
    ("grads_again" shows any weight the first call changed)."""
    fn = lookup(ns, "accumulate_token_gradients")
    net, batches = recorded_model(model, at_most)
    params = list(net.parameters())
    if stale_grads:
        for p in params:
            p.grad = torch.full_like(p, 3.0)
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    what = (f"accumulate_token_gradients(model, {shape_text(inputs)}, targets, micro_batch_size={micro_batch_size}"
            + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")")
    out = {"names": [name for name, _ in net.named_parameters()], "batches": batches}
    try:
        with graphs_alive(batches) as graphs:
            result = fn(net, inputs, targets, micro_batch_size, **kwargs)
    except NotImplementedError as exc:
        raise StudentRaised(what, describe_exception(exc)) from None
    except BaseException as exc:  # the checks decide whether this exception was the right one
        return {**out, "raised": describe_exception(exc), "value_error": isinstance(exc, ValueError), "call": what,
                "grads": grads_of(params)}  # a batch without counted tokens leaves no NaN behind
    out.update({"raised": None, "call": what, "returned": describe(result), "grads": grads_of(params),
                "graphs_alive": graphs["most"],
                "weights": values_of(params)})
    if twice:  # from no gradient again: only a weight the first call changed can make the second differ
        for p in params:
            p.grad = None
        call(what + ", called again", fn, net, inputs, targets, micro_batch_size, **kwargs)
        out["grads_again"] = grads_of(params)
    return out
