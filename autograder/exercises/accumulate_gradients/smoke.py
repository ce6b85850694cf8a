"""accumulate_gradients's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
from ...checks.inputs import classification_batch
from ...checks.scenarios import MLP32


def case(student):
    inputs, targets = classification_batch(5, 6, 4, seed=1)
    student.run("accumulate_gradients", model=MLP32, inputs=inputs, targets=targets, loss="cross_entropy",
                micro_batch_size=2)
