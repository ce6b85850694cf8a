"""DynamicLossScaler's update probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.plain_data import describe, kwargs_text


@probe
def scaler_updates(ctx, ns, init=None, found_infs=(), args=()):
    """Construct a DynamicLossScaler (positional `args`, then keywords `init`) and feed it a sequence of
    found_inf flags; report the scales."""
    Scaler = lookup(ns, "DynamicLossScaler")
    init, args = init or {}, list(args)
    shown = ", ".join([*(repr(a) for a in args), *([kwargs_text(init)] if init else [])])
    scaler = ctx.call(f"DynamicLossScaler({shown})", Scaler, *args, **init)
    scales = [describe(getattr(scaler, "scale", None))]
    for step, found in enumerate(found_infs):
        ctx.call(f"scaler.update({found}) at update {step + 1}", scaler.update, bool(found))
        scales.append(describe(getattr(scaler, "scale", None)))
    return {"scales": scales}
