"""autograder.checks.probes, run in this process (as the notebook's check() runs them): a probe hands the code
its inputs and returns plain data, never raises, and names what is missing or what the code raised; the
reference's answers are those of an oracle written here."""
import torch

from autograder.checks import probes
from autograder.instructor.reference import reference_namespace


def oracle_fraction(values, dtype):
    nonzero = values != 0
    return int(((values.to(dtype) == 0) & nonzero).sum()) / max(int(nonzero.sum()), 1)


def test_a_probe_runs_the_code_and_returns_plain_data():
    values = torch.tensor([1e-8, 1.0, 0.0, 2.0**-30])
    obs = probes.run(reference_namespace(), "underflow_fraction", {"values": values, "dtype": "float16"})
    assert obs["status"] == "ok" and torch.equal(obs["input_after"], values)
    assert obs["result"]["value"] == oracle_fraction(values, torch.float16)


def test_a_missing_name_is_named_not_raised():
    obs = probes.run({}, "q5_answer", {})
    assert obs == {"status": "missing", "name": "Q5_ANSWER"}


def test_what_the_code_raised_is_described_with_the_call():
    def underflow_fraction(values, dtype=None):
        raise ZeroDivisionError("no nonzero values")
    obs = probes.run({"underflow_fraction": underflow_fraction}, "underflow_fraction", {"values": torch.zeros(3)})
    assert obs["status"] == "raised" and obs["call"].startswith("underflow_fraction(")
    assert obs["type"] == "ZeroDivisionError" and "no nonzero values" in obs["message"]


def test_torch_defaults_are_the_usual_ones_inside_and_the_callers_after():
    seen = {}

    def underflow_fraction(values, dtype=None):
        seen["dtype"], seen["grad"] = torch.get_default_dtype(), torch.is_grad_enabled()
        return 0.0
    torch.set_default_dtype(torch.float64)
    try:
        with torch.no_grad():
            probes.run({"underflow_fraction": underflow_fraction}, "underflow_fraction", {"values": torch.ones(2)})
            assert not torch.is_grad_enabled()
        assert torch.get_default_dtype() == torch.float64
    finally:
        torch.set_default_dtype(torch.float32)
    assert seen == {"dtype": torch.float32, "grad": True}


def test_in_the_sandbox_the_files_run_in_one_namespace_and_import_nothing_of_the_package(monkeypatch):
    """As the sandbox's worker loads them (isolation.PROBE_FILES): executed in order into one namespace,
    each probes.py takes harness.py's, models.py's and plain_data.py's names from that namespace, not from an
    import of this package."""
    from autograder.checks import harness
    from autograder.sandbox.isolation import probe_files
    monkeypatch.setattr(harness, "run", None)  # an import of the package would find this
    namespace = {"__name__": "lesson20_probes"}
    for path in probe_files(isolate=False):
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), namespace)
    assert sorted(namespace["PROBES"]) == sorted(harness.PROBES) != []
    values = torch.tensor([1e-8, 1.0, 2.0**-30])
    obs = namespace["run"](reference_namespace(), "underflow_fraction", {"values": values, "dtype": "float16"})
    assert obs["status"] == "ok" and obs["result"]["value"] == oracle_fraction(values, torch.float16)


class InPlace:
    scale = 4.0

    def unscale_(self, params):
        for p in params:
            if p.grad is not None:
                p.grad.div_(self.scale)
        return False


class OutOfPlace(InPlace):
    def unscale_(self, params):
        for p in params:
            if p.grad is not None:
                p.grad = p.grad / self.scale
        return False


def test_unscale_in_place_shows_in_the_gradient_buffer_the_caller_holds():
    grads = [torch.tensor([8.0, -4.0]), None, torch.tensor([2.0])]
    spec = {"cls": "S", "values": [torch.ones(2), torch.ones(2), torch.ones(1)], "grads": grads}
    for scaler, held_divided in ((InPlace, True), (OutOfPlace, False)):
        obs = probes.run({"S": scaler}, "loss_scaler", spec)
        assert [None if g is None else g.tolist() for g in obs["grads"]] == [[2.0, -1.0], None, [0.5]]
        want = [None if g is None else (g / 4 if held_divided else g).tolist() for g in grads]
        assert [None if g is None else g.tolist() for g in obs["held_grads"]] == want, scaler.__name__


def test_a_model_handed_more_than_at_most_examples_gives_nan():
    """The probe's gate: the same code's gradients are NaN only where it calls the model on more at once."""
    model = {"arch": "mlp", "sizes": [3, 4, 2], "seed": 0, "dtype": "float64"}
    inputs, targets = torch.randn(6, 3, dtype=torch.float64), torch.tensor([0, 1, 0, 1, 1, 0])

    def whole(net, loss_fn, x, y, micro):
        net.zero_grad()
        loss = loss_fn(net(x), y)
        loss.backward()
        return loss.item()
    spec = dict(model=model, inputs=inputs, targets=targets, loss="cross_entropy", micro_batch_size=2)
    for fn, nan in ((whole, True), (reference_namespace()["accumulate_gradients"], False)):
        obs = probes.run({"accumulate_gradients": fn}, "accumulate_gradients", {**spec, "at_most": 2})
        free = probes.run({"accumulate_gradients": fn}, "accumulate_gradients", spec)
        assert any(bool(g.isnan().any()) for g in obs["grads"]) == nan
        assert not any(bool(g.isnan().any()) for g in free["grads"])


def test_no_two_probe_files_define_the_same_name():
    """In the sandbox every exercise's probes run in one namespace (isolation.PROBE_FILES): a top-level name that two
    files define would have the later one replace the earlier one's."""
    import ast
    from collections import Counter
    from autograder.sandbox.isolation import PROBE_FILES
    names = Counter(name for path in PROBE_FILES for node in ast.parse(path.read_text()).body
                    for name in ([node.name] if isinstance(node, (ast.FunctionDef, ast.ClassDef)) else
                                 [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)]))
    assert len(PROBE_FILES) > 2 and names["probe"] == 1
    assert not [name for name, count in names.items() if count > 1]


def test_the_hooks_set_while_the_code_runs_lead_only_to_the_copy_it_is_handed():
    """torch's saved-tensor hooks are global while the student's code runs, where that code can read them: their
    functions' globals are the props copy (whose objects the code is handed anyway), never the probes' own
    namespace, whose names the probe calls after the code returns. Executed as the sandbox executes the files."""
    from autograder.sandbox.isolation import probe_files
    probes_namespace, props = {"__name__": "lesson20_probes"}, {"__name__": "lesson20_props"}
    for namespace in (props, probes_namespace):
        for path in probe_files(isolate=False):
            with open(path) as f:
                exec(compile(f.read(), path, "exec"), namespace)
    seen = []

    def accumulate_gradients(net, loss_fn, x, y, micro):
        seen.append(torch._C._autograd._top_saved_tensors_default_hooks(False)[0].__globals__)
        return reference_namespace()["accumulate_gradients"](net, loss_fn, x, y, micro)
    spec = dict(model={"arch": "mlp", "sizes": [3, 4, 2], "seed": 0}, inputs=torch.randn(4, 3),
                targets=torch.tensor([0, 1, 0, 1]), loss="cross_entropy", micro_batch_size=2)
    obs = probes_namespace["run"]({"accumulate_gradients": accumulate_gradients}, "accumulate_gradients", spec,
                                  "cpu", props)
    assert obs["status"] == "ok" and seen and all(g is props for g in seen)
