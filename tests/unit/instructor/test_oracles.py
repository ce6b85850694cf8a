"""autograder.instructor.oracles: each oracle against a computation that does not share its code."""
import pytest
import torch

from autograder.checks.expect import classification_batch
from autograder.instructor.oracles import ORACLES, full_batch_grads, model_values, remembered, torch_scales

SPEC = {"arch": "mlp", "sizes": [5, 4, 3], "seed": 7, "act": "tanh"}


def rule(found_infs, init=2.0**16, growth=2.0, backoff=0.5, interval=3):
    """GradScaler's documented update rule, written out."""
    scale, tracker, scales = init, 0, [init]
    for found in found_infs:
        if found:
            scale, tracker = scale * backoff, 0
        else:
            tracker += 1
            if tracker == interval:
                scale, tracker = scale * growth, 0
        scales.append(scale)
    return scales


@pytest.mark.parametrize("found_infs", [(), (False,) * 7, (True, False, False, False, True, True, False)])
def test_torch_scales_follows_the_update_rule(found_infs):
    assert torch_scales(growth_interval=3, found_infs=found_infs) == rule(found_infs)


def test_a_full_batch_gradient_is_the_mean_of_the_per_example_ones():
    inputs, targets = classification_batch(6, 5, 3, seed=0)
    grads, loss = full_batch_grads(SPEC, "cross_entropy", inputs, targets)
    singles = [full_batch_grads(SPEC, "cross_entropy", inputs[i:i + 1], targets[i:i + 1]) for i in range(6)]
    assert loss == pytest.approx(sum(s[1] for s in singles) / 6, rel=1e-12)
    for k, grad in enumerate(grads):
        assert grad.dtype == torch.float64
        torch.testing.assert_close(grad, sum(s[0][k] for s in singles) / 6, rtol=1e-12, atol=1e-14)


def test_model_values_are_the_models_initial_values_and_every_oracle_is_named():
    assert [v.shape for v in model_values(SPEC)] == [(4, 5), (4,), (3, 4), (3,)]
    assert all(torch.equal(a, b) for a, b in zip(model_values(SPEC), model_values(SPEC)))
    assert all(name == f.__name__ for name, f in ORACLES.items())


def test_an_oracle_answers_once_per_question_and_each_caller_gets_its_own_copy():
    calls = []

    @remembered
    def doubled(values, factor=2.0):
        calls.append(1)
        return [values * factor]
    first = doubled(torch.ones(3), factor=2.0)
    first[0].add_(100)  # a check that changes what it was handed changes nothing for the next one
    again = doubled(torch.ones(3), factor=2.0)
    assert torch.equal(again[0], torch.full((3,), 2.0)) and len(calls) == 1
    assert torch.equal(doubled(torch.ones(3), factor=3.0)[0], torch.full((3,), 3.0)) and len(calls) == 2
    assert torch.equal(doubled(torch.zeros(3))[0], torch.zeros(3)) and len(calls) == 3
