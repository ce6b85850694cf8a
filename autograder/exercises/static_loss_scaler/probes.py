"""The loss scalers' probes (DynamicLossScaler's checks drive them too): plain inputs in, plain data out (see
checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.models import DTYPES, grads_of, make_leaves
    from ...checks.plain_data import attr, describe, kwargs_text, plain_tensor


@probe
def loss_scaler(ctx, ns, cls="StaticLossScaler", init=None, loss_weights=None, values=(), grads=(),
                dtype="float32", as_generator=False, args=()):
    """Construct the scaler (args positionally, init by keyword), scale a loss and backprop it, then unscale_ a
    set of gradients."""
    Scaler = lookup(ns, cls)
    init = init or {}
    shown_args = ", ".join([*(repr(a) for a in args), *([kwargs_text(init)] if init else [])])
    scaler = ctx.call(f"{cls}({shown_args})", Scaler, *args, **init)
    out = {"scale": describe(getattr(scaler, "scale", None))}
    if loss_weights is not None:
        w = loss_weights.clone().requires_grad_(True)
        loss = (w * w).sum() / 2  # d loss / d w = w, so after backward w.grad = scale * w
        scaled = ctx.call("scaler.scale_loss(loss)", scaler.scale_loss, loss)
        out["scaled_loss"] = describe(scaled)
        if isinstance(scaled, torch.Tensor) and scaled.requires_grad:
            scaled.backward()
            out["weight_grad"] = plain_tensor(w.grad)
    if values:
        params = make_leaves(values, grads, DTYPES[dtype])
        buffer = flat_grads(params)
        arg = (p for p in params) if as_generator else params
        found = ctx.call(f"scaler.unscale_({'a generator of' if as_generator else 'a list of'} {len(params)} params)",
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
def scalers_side_by_side(ctx, ns, cls="StaticLossScaler", init=None, other_init=None, found_infs=(),
                         other_found_infs=(), grads=()):
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
                ctx.call(f"second.update({other_found_infs[step]})", other.update, bool(other_found_infs[step]))
                other_scales.append(describe(getattr(other, "scale", None)))
            ctx.call(f"scaler.update({found}) at update {step + 1}", scaler.update, bool(found))
            scales.append(describe(getattr(scaler, "scale", None)))
        params = make_leaves([torch.ones_like(g) for g in grads], grads)
        if params:
            ctx.call("scaler.unscale_(params)", scaler.unscale_, params)
        return {"scales": scales, "grads": grads_of(params), "other_scales": other_scales}

    alone = used(ctx.call(f"{cls}({kwargs_text(init)})", Scaler, **init))
    first = ctx.call(f"{cls}({kwargs_text(init)})", Scaler, **init)
    second = ctx.call(f"{cls}({kwargs_text(other_init)})", Scaler, **other_init)
    return {"alone": alone, "beside": used(first, second)}
