"""Practice question 5's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/harness.py (what it imports
below is already there); imported as a module, it takes those names from harness.
"""
if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import (describe, lookup, probe)


@probe
def q5_answer(ns):
    return {"answer": describe(lookup(ns, "Q5_ANSWER"))}
