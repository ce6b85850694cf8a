"""The master weights' GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
import torch

from ...checks.scenarios import MLP16, fp32_values


def case(student):
    out = student.run("make_master_params", model=MLP16)
    devices = [m.get("device") for m in out.get("masters", [])]
    assert devices == out["model_devices"], (
        f"make_master_params put the masters on {sorted(set(map(str, devices)))} for a model on "
        f"{sorted(set(out['model_devices']))}: make each master on its parameter's device "
        "(p.detach().float() keeps it there)")
    student.run("model_grads_to_master_grads", model=MLP16, grads=[torch.ones_like(v) for v in fp32_values(MLP16)],
                masters=fp32_values(MLP16), master_grads=[None] * len(fp32_values(MLP16)))
    student.run("master_params_to_model_params", model=MLP16, masters=fp32_values(MLP16))
