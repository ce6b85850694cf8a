"""accumulate_token_gradients's GPU smoke case, run once on the student's GPU by the self-check,
ungraded (checks/smoke.py)."""
from ...checks.inputs import token_batch_of_lengths
from ...checks.scenarios import LM


def case(student):
    inputs, targets = token_batch_of_lengths([4, 2, 3], LM["vocab"], seed=4)
    student.run("token_accumulation", model=LM, inputs=inputs, targets=targets, micro_batch_size=2)
