"""One ungraded case per item, run on the student's GPU by the self-check when the kernel has CUDA.

The checks themselves run on the CPU, as the grader does, so a mistake that only a GPU shows (a CPU
tensor made inside the code and mixed with CUDA ones, a master left on the CPU) would pass them. Each
case here runs the item's code once with the model and the batch on the GPU and asks only that it runs
and keeps every tensor where its inputs are. It decides no points: a failure is shown beside the report.
"""
import torch

from .expect import classification_batch, kind, shown, token_batch_of_lengths
from .harness import build_model

MLP16 = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3, "dtype": "float16"}
MLP32 = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3}
LM = {"arch": "lm", "vocab": 12, "dim": 8, "seed": 5}


def fp32_values(spec: dict) -> list:
    return [p.detach().float() for p in build_model(spec).parameters()]


def underflow_fraction(student):
    out = student.run("underflow_fraction", values=torch.tensor([2.0 ** -30, 0.5, 0.0, float("nan")]))
    assert kind(out["result"]) == "float", f"it returned {shown(out['result'])}, not a Python float"


def scaler(cls):
    def case(student):
        out = student.run("loss_scaler", cls=cls, loss_weights=torch.tensor([1.0, -2.0]),
                          values=[torch.ones(3), torch.ones(2)], grads=[torch.ones(3), torch.tensor([1.0, float("inf")])])
        assert kind(out["found_inf"]) == "bool", (
            f"unscale_ returned {shown(out['found_inf'])} for CUDA gradients, not a Python bool")
    return case


def master_weights(student):
    out = student.run("make_master_params", model=MLP16)
    devices = [m.get("device") for m in out.get("masters", [])]
    assert devices == out["model_devices"], (
        f"make_master_params put the masters on {sorted(set(map(str, devices)))} for a model on "
        f"{sorted(set(out['model_devices']))}: make each master on its parameter's device "
        "(p.detach().float() keeps it there)")
    student.run("model_grads_to_master_grads", model=MLP16, grads=[torch.ones_like(v) for v in fp32_values(MLP16)],
                masters=fp32_values(MLP16), master_grads=[None] * len(fp32_values(MLP16)))
    student.run("master_params_to_model_params", model=MLP16, masters=fp32_values(MLP16))


def accumulate_gradients(student):
    inputs, targets = classification_batch(5, 6, 4, seed=1)
    student.run("accumulate_gradients", model=MLP32, inputs=inputs, targets=targets, loss="cross_entropy",
                micro_batch_size=2)


def train_step(student):
    # an overflowing call, then a clean one (the scale backs off from 2^40 to 2^4): both branches on the GPU
    batches = [classification_batch(6, 6, 4, seed=s) for s in (2, 3)]
    out = student.run("mixed_precision_train_step", model=MLP16, masters=fp32_values(MLP16), batches=batches,
                      loss="cross_entropy", micro_batch_size=4, optimizer={"name": "sgd", "lr": 0.1},
                      scaler={"init_scale": 2.0 ** 40, "backoff_factor": 2.0 ** -36}, max_grad_norm=1.0)
    assert len(out["steps"]) == 2


def token_accumulation(student):
    inputs, targets = token_batch_of_lengths([4, 2, 3], LM["vocab"], seed=4)
    student.run("token_accumulation", model=LM, inputs=inputs, targets=targets, micro_batch_size=2)


CASES = {
    "underflow_fraction": underflow_fraction,
    "static_loss_scaler": scaler("StaticLossScaler"),
    "dynamic_loss_scaler": scaler("DynamicLossScaler"),
    "master_weights": master_weights,
    "accumulate_gradients": accumulate_gradients,
    "mixed_precision_train_step": train_step,
    "token_accumulation": token_accumulation,
}


def trouble(item_id: str, student) -> str:
    """The smoke case of an item on `student`'s device: "" when it runs, else what went wrong, for the student
    (an item without a case, such as Q5's letter, has nothing to run)."""
    case = CASES.get(item_id)
    if case is None:
        return ""
    try:
        case(student)
    except AssertionError as failure:  # a CheckFailure too: the probe's own message, already worded
        return str(failure) or "the case failed"
    return ""
