"""StaticLossScaler's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
import torch

from ...checks.read import kind, shown


def scaler(cls):
    """The case of a scaler class (DynamicLossScaler's too): scale a loss, unscale_ CUDA gradients."""
    def case(student):
        out = student.run("loss_scaler", cls=cls, loss_weights=torch.tensor([1.0, -2.0]),
                          values=[torch.ones(3), torch.ones(2)], grads=[torch.ones(3), torch.tensor([1.0, float("inf")])])
        assert kind(out["found_inf"]) == "bool", (
            f"unscale_ returned {shown(out['found_inf'])} for CUDA gradients, not a Python bool")
    return case


case = scaler("StaticLossScaler")
