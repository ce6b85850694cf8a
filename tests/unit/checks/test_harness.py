"""autograder.checks.harness: a probe is handed its Context (where the objects it hands to the student's code
come from, the device, the traceback reader) as an argument; nothing of a request is left in a module global."""
import pytest
import torch

from autograder.checks import harness, models

SPEC = {"arch": "mlp", "sizes": [3, 2], "seed": 0}


@pytest.fixture
def context_probe():
    """A probe, registered for the test, that reports what its Context gave it."""
    @harness.probe
    def context_probe(ctx, ns, spec, values=None):
        model = ctx.model(spec)
        recorded, sizes = ctx.recorded_model(spec)
        result = ctx.call("fn(model)", harness.lookup(ns, "fn"), model)
        return {"model_device": str(next(model.parameters()).device), "recorded_type": type(recorded).__name__,
                "values_device": None if values is None else str(values.device), "result": result,
                "loss": ctx.prop("LOSSES") is models.LOSSES}
    yield "context_probe"
    del harness.PROBES["context_probe"]


def test_the_objects_handed_out_come_from_the_props_namespace_given(context_probe):
    built = []

    def build_model(spec, sizes=None, at_most=None, device=None):
        built.append(device)
        return models.build_model(spec, sizes, at_most, device)

    props = {**vars(models), "build_model": build_model}
    props["recorded_model"] = lambda spec, at_most=None, device=None: (build_model(spec, [], at_most, device), [])
    obs = harness.run({"fn": lambda model: 1.5}, context_probe, {"spec": SPEC}, props=props)
    assert obs["status"] == "ok" and obs["result"] == 1.5 and built == [torch.device("cpu")] * 2
    assert obs["loss"] is True  # LOSSES comes from props too, which holds models' own here


def test_without_props_the_objects_come_from_the_modules_and_the_device_is_the_requests(context_probe):
    obs = harness.run({"fn": lambda model: 0}, context_probe, {"spec": SPEC, "values": torch.ones(2)}, device="meta")
    assert obs["status"] == "ok" and obs["model_device"] == "meta" and obs["values_device"] == "meta"
    assert obs["recorded_type"] == "Sequential"
    # nothing of the request stays behind: the next model is built on the CPU
    assert next(models.build_model(SPEC).parameters()).device.type == "cpu"


def test_the_student_raising_is_described_with_the_traceback_reader_given(context_probe):
    seen = []

    def reader(tb):
        seen.append(tb)
        return [("<cell 2>", 4, "fn")]

    def fn(model):
        raise RuntimeError("no")

    obs = harness.run({"fn": fn}, context_probe, {"spec": SPEC}, entries=reader)
    assert obs["status"] == "raised" and obs["call"] == "fn(model)" and obs["type"] == "RuntimeError"
    assert seen and obs["where"].startswith("line 4 in fn()")


def test_a_missing_name_is_reported_not_raised(context_probe):
    assert harness.run({}, context_probe, {"spec": SPEC}) == {"status": "missing", "name": "fn"}
