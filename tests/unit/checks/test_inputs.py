"""autograder.checks.inputs: the checks' seeded inputs."""
import torch

from autograder.checks import inputs


def test_generated_inputs_are_seeded_and_in_range():
    values = inputs.log_uniform(1000, -30, 5, seed=1)
    assert torch.equal(values, inputs.log_uniform(1000, -30, 5, seed=1))
    logs = values.double().abs().log2()
    assert -30 - 1e-6 <= float(logs.min()) and float(logs.max()) <= 5 + 1e-6
    tokens, targets = inputs.token_batch_of_lengths([3, 1], vocab=7, seed=0, masked_prefix=1)
    assert tokens.shape == targets.shape == (2, 3)
    assert targets[0].tolist()[0] == -100 and targets[1].tolist() == [-100, -100, -100]
