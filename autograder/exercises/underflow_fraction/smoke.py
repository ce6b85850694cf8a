"""underflow_fraction's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
import torch

from ...checks.read import kind, shown


def case(student):
    out = student.run("underflow_fraction", values=torch.tensor([2.0 ** -30, 0.5, 0.0, float("nan")]))
    assert kind(out["result"]) == "float", f"it returned {shown(out['result'])}, not a Python float"
