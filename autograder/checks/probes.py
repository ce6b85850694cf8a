"""The probes: one driver per exercise that calls the student's code on plain inputs and reports what
happened as plain data (a dict of tensors, numbers, strings, lists). The checks decide pass or fail.

Built from harness.py: imported from there as a module; in the sandbox, harness.py has already been
executed into this file's namespace (see harness.py), and nothing is imported.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from .harness import (DTYPES, StudentRaised, attr, call, describe, describe_exception, dtype_name,
                          grads_of, kwargs_text, lookup, make_leaves, make_optimizer, plain_tensor, probe, prop,
                          recorded_model, shape_text, shares_memory, state_of, values_of)
    from .harness import run  # noqa: F401  (probes.run(namespace, name, spec) runs one of the probes below)

# ---- Exercise 1 ----

@probe
def underflow_fraction(ns, values, dtype=None):
    fn = lookup(ns, "underflow_fraction")
    args = (values,) if dtype is None else (values, DTYPES[dtype])
    result = call(f"underflow_fraction({shape_text(values)}{'' if dtype is None else ', torch.' + dtype})", fn, *args)
    return {"result": describe(result), "input_after": plain_tensor(values)}  # the checks compare it with the input



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
        before = [p.grad for p in params]
        arg = (p for p in params) if as_generator else params
        found = call(f"scaler.unscale_({'a generator of' if as_generator else 'a list of'} {len(params)} params)",
                     scaler.unscale_, arg)
        out["found_inf"] = describe(found)
        out["grads"] = grads_of(params)
        out["same_grad_objects"] = [p.grad is g for p, g in zip(params, before)]
        out["scale_after"] = describe(getattr(scaler, "scale", None))
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
def make_master_params(ns, model):
    fn = lookup(ns, "make_master_params")
    net = prop("build_model")(model)
    params = list(net.parameters())
    before = values_of(params)
    grad_flags = [bool(attr(p, "requires_grad")) for p in params]
    masters = call("make_master_params(model)", fn, net)
    after = list(net.parameters())
    out = {"type": type(masters).__name__,
           # the model as make_master_params left it: the same parameter objects, values, dtypes and flags
           "model_kept": {"same_objects": len(after) == len(params) and all(a is p for a, p in zip(after, params)),
                          "requires_grad": [bool(attr(p, "requires_grad")) for p in after] == grad_flags,
                          "values": all(bool((v == w).all()) for v, w in zip(values_of(after), before))
                          and all(dtype_name(a) == dtype_name(p) for a, p in zip(after, params))}}
    try:
        masters = list(masters)
    except Exception:
        return {**out, "length": -1}
    out["length"] = len(masters)
    out["masters"] = []
    for p, m in zip(params, masters):
        if not isinstance(m, torch.Tensor):
            out["masters"].append({"type": type(m).__name__})
            continue
        out["masters"].append({
            "type": "Tensor", "dtype": dtype_name(m), "device": str(attr(m, "device")),
            "shape": list(attr(m, "shape")), "is_leaf": bool(attr(m, "is_leaf")),
            "requires_grad": bool(attr(m, "requires_grad")), "shares_memory": shares_memory(m, p),
            "value": plain_tensor(m),
        })
    # a master that aliases the model would move when the model does
    with torch.no_grad():
        for p in params:
            p.add_(1)
    out["after_model_changed"] = [plain_tensor(m) if isinstance(m, torch.Tensor) else None for m in masters]
    out["model_dtypes"] = [dtype_name(p) for p in params]
    out["model_devices"] = [str(attr(p, "device")) for p in params]
    return out


@probe
def model_grads_to_master_grads(ns, model, grads, masters, master_grads, as_generator=False):
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
        for p in params:
            if p.grad is not None:
                p.grad.add_(1)
    out["master_grads_after_model_changed"] = grads_of(master_leaves)
    return out


@probe
def master_params_to_model_params(ns, model, masters, as_generator=False):
    fn = lookup(ns, "master_params_to_model_params")
    net = prop("build_model")(model)
    params = list(net.parameters())
    dtypes = [attr(p, "dtype") for p in params]
    master_leaves = make_leaves(masters, [None] * len(masters))
    arg = net.parameters() if as_generator else params
    call("master_params_to_model_params(model_params, master_params)", fn, arg, master_leaves)
    after = list(net.parameters())
    out = {
        "values": values_of(after),
        "same_objects": [a is b for a, b in zip(after, params)] + [len(after) == len(params)],
        "dtypes_kept": [attr(a, "dtype") == d for a, d in zip(after, dtypes)],
        "leaves": [bool(attr(a, "is_leaf") and attr(a, "grad_fn") is None and attr(a, "requires_grad"))
                   for a in after],
        "masters_after": values_of(master_leaves),
    }
    with torch.no_grad():  # a model that now shares memory with its masters would move them too
        for a in after:
            a.add_(1)
    out["masters_after_model_changed"] = values_of(master_leaves)
    return out


# ---- Exercise 5 ----

@probe
def accumulate_gradients(ns, model, inputs, targets, loss, micro_batch_size, stale_grads=False):
    fn = lookup(ns, "accumulate_gradients")
    net, batches = recorded_model(model)
    if stale_grads:
        for p in net.parameters():
            if p.requires_grad:
                p.grad = torch.full_like(p, 3.0)
    result = call(f"accumulate_gradients(model, {loss}, batch of {len(inputs)}, "
                  f"micro_batch_size={micro_batch_size})",
                  fn, net, prop("LOSSES")[loss], inputs, targets, micro_batch_size)
    return {"returned": describe(result), "grads": grads_of(net.parameters()), "batches": batches,
            "names": [name for name, _ in net.named_parameters()], "values": values_of(net.parameters())}


# ---- Exercise 6 ----


@probe
def mixed_precision_train_step(ns, model, masters, batches, loss, micro_batch_size, optimizer,
                               scaler=None, max_grad_norm=None, stale_grads=False):
    """Run the student's step once per (inputs, targets) in `batches`; report everything it touched."""
    fn = lookup(ns, "mixed_precision_train_step")
    Scaler = prop("counting")(lookup(ns, "DynamicLossScaler"))
    net, seen = recorded_model(model)
    params = list(net.parameters())
    master_leaves = make_leaves(masters, [None] * len(masters))
    opt = make_optimizer(master_leaves, optimizer)
    scaler_obj = call(f"DynamicLossScaler({kwargs_text(scaler or {})})", Scaler, **(scaler or {}))
    steps = []
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
        result = call(what, fn, net, master_leaves, opt, scaler_obj, prop("LOSSES")[loss], inputs, targets,
                      micro_batch_size, max_grad_norm)
        steps.append({
            "returned": describe(result),
            "masters": values_of(master_leaves),
            "model": values_of(net.parameters()),
            "model_grads": grads_of(net.parameters()),  # as backward() left them, unless the step cleared them
            "state": state_of(opt),
            "scale": describe(getattr(scaler_obj, "scale", None)),
            "update_calls": list(scaler_obj.update_calls),
        })
    after = list(net.parameters())
    return {
        "steps": steps,
        "batches_seen": seen,
        "model_dtypes": [dtype_name(p) for p in after],
        "same_objects": [a is b for a, b in zip(after, params)] + [len(after) == len(params)],
    }


# ---- Practice question 5 ----

@probe
def q5_answer(ns):
    return {"answer": describe(lookup(ns, "Q5_ANSWER"))}


# ---- Exercise 7 ----

@probe
def token_accumulation(ns, model, inputs, targets, micro_batch_size, ignore_index=None, stale_grads=False):
    """Call accumulate_token_gradients once; a ValueError is reported as data (an empty batch must raise one)."""
    fn = lookup(ns, "accumulate_token_gradients")
    net, batches = recorded_model(model)
    if stale_grads:
        for p in net.parameters():
            p.grad = torch.full_like(p, 3.0)
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    what = (f"accumulate_token_gradients(model, {shape_text(inputs)}, targets, micro_batch_size={micro_batch_size}"
            + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")")
    out = {"names": [name for name, _ in net.named_parameters()], "batches": batches}
    try:
        result = fn(net, inputs, targets, micro_batch_size, **kwargs)
    except NotImplementedError as exc:
        raise StudentRaised(what, describe_exception(exc)) from None
    except BaseException as exc:  # the checks decide whether this exception was the right one
        return {**out, "raised": describe_exception(exc), "value_error": isinstance(exc, ValueError), "call": what}
    return {**out, "raised": None, "call": what, "returned": describe(result), "grads": grads_of(net.parameters()),
            "values": values_of(net.parameters())}
