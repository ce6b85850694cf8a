"""Practice question 5's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.plain_data import describe


@probe
def q5_answer(ctx, ns):
    return {"answer": describe(lookup(ns, "Q5_ANSWER"))}
