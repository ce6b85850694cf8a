"""The training step's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
from ...checks.inputs import classification_batch
from ...checks.scenarios import MLP16, fp32_values


def case(student):
    # an overflowing call, then a clean one (the scale backs off from 2^40 to 2^4): both branches on the GPU
    batches = [classification_batch(6, 6, 4, seed=s) for s in (2, 3)]
    out = student.run("mixed_precision_train_step", model=MLP16, masters=fp32_values(MLP16), batches=batches,
                      loss="cross_entropy", micro_batch_size=4, optimizer={"name": "sgd", "lr": 0.1},
                      scaler={"init_scale": 2.0 ** 40, "backoff_factor": 2.0 ** -36}, max_grad_norm=1.0)
    assert len(out["steps"]) == 2
