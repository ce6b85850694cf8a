"""underflow_fraction's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.models import DTYPES
    from ...checks.plain_data import describe, plain_tensor, shape_text


@probe
def underflow_fraction(ctx, ns, values, dtype=None, twice=False):
    """twice: call it again on the same tensor, as later code that reuses the input would ("again")."""
    fn = lookup(ns, "underflow_fraction")
    args = (values,) if dtype is None else (values, DTYPES[dtype])
    what = f"underflow_fraction({shape_text(values)}{'' if dtype is None else ', torch.' + dtype})"
    out = {"result": describe(ctx.call(what, fn, *args)), "input_after": plain_tensor(values)}
    if twice:
        out["again"] = describe(ctx.call(what + ", called again on the same tensor", fn, *args))
    return out
