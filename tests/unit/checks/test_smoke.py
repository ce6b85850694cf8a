"""autograder.checks.smoke: the ungraded GPU case of each item (run here on the CPU, the only device CI has;
python -m benchmarks.gpu runs them on CUDA)."""
import pytest
import torch

from autograder.backends import LocalStudent
from autograder.checks import harness, models, smoke
from autograder.instructor.reference import reference_namespace
from autograder.items import AUTO_ITEMS


def test_every_code_item_has_a_case_and_the_answer_has_none():
    assert set(smoke.CASES) == {i.id for i in AUTO_ITEMS if i.code}


@pytest.mark.parametrize("item", sorted(smoke.CASES))
def test_the_reference_passes_every_case(item):
    assert smoke.trouble(item, LocalStudent(reference_namespace())) == ""


def test_code_that_raises_is_reported_with_its_error():
    namespace = dict(reference_namespace())

    def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
        found = torch.tensor(False, device="meta")  # a tensor made on a device of its own, as on a GPU
        return float(found)
    namespace["accumulate_gradients"] = accumulate_gradients
    trouble = smoke.trouble("accumulate_gradients", LocalStudent(namespace))
    assert "accumulate_gradients(" in trouble and "raised" in trouble


class Reports:
    """A student backend that reports what it is given to report (the probe's plain data)."""

    def __init__(self, out):
        self.out = out

    def run(self, probe, **spec):
        return self.out


def test_masters_on_another_device_than_their_parameters_are_named():
    out = {"masters": [{"device": "cpu"}, {"device": "cpu"}], "model_devices": ["cuda:0", "cuda:0"]}
    trouble = smoke.trouble("master_weights", Reports(out))
    assert "['cpu']" in trouble and "['cuda:0']" in trouble and "parameter's device" in trouble


def test_the_probes_put_models_and_the_specs_tensors_on_the_device_and_put_the_cpu_back():
    spec = {"values": torch.ones(2), "batches": [(torch.ones(1), torch.zeros(1))], "n": 3}
    moved = harness.on_device(spec, torch.device("meta"))
    assert moved["values"].is_meta and all(t.is_meta for pair in moved["batches"] for t in pair) and moved["n"] == 3
    assert harness.on_device(spec, torch.device("cpu")) is spec
    context = harness.Context(vars(models), torch.device("meta"), None)
    model = context.model({"arch": "mlp", "sizes": [3, 2], "seed": 0})
    assert all(p.is_meta for p in model.parameters())
    assert all(p.device.type == "cpu" for p in models.build_model({"arch": "mlp", "sizes": [3, 2], "seed": 0}).parameters())
