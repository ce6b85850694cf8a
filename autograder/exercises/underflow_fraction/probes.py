"""underflow_fraction's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/harness.py (what it imports
below is already there); imported as a module, it takes those names from harness.
"""
if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import (DTYPES, call, describe, lookup, plain_tensor, probe, shape_text)


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
