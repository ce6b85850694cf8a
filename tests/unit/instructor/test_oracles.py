"""autograder.instructor.oracles: each oracle (instructor/exercises/<id>/oracles.py) against a computation that does
not share its code, and ORACLES gathers every one by its name."""
from importlib import import_module
from pathlib import Path

import pytest
import torch

from autograder.checks.inputs import classification_batch
from autograder.instructor.exercises.accumulate_gradients.oracles import full_batch_grads
from autograder.instructor.exercises.dynamic_loss_scaler.oracles import torch_scales
from autograder.instructor.exercises.master_weights.oracles import model_values
from autograder.instructor import oracles
from autograder.instructor.oracles import ORACLES

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
    gathered = {f for path in sorted(Path(oracles.__file__).parent.glob("exercises/*/oracles.py"))
                for f in import_module(f"autograder.instructor.exercises.{path.parent.name}.oracles").ORACLES}
    assert set(ORACLES.values()) == gathered and len(gathered) >= 6
