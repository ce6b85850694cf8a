"""autograder.checks.models: the models are the same from the same spec in every process, and the recording
layer sees each forward call's batch."""
import torch

from autograder.checks import models


def test_the_same_spec_builds_the_same_model_in_its_dtype():
    for spec in ({"arch": "mlp", "sizes": [4, 6, 3], "seed": 3, "dtype": "float16"},
                 {"arch": "embed", "vocab": 7, "dim": 4, "classes": 3, "seed": 4},
                 {"arch": "lm", "vocab": 9, "dim": 4, "seed": 5, "dtype": "bfloat16"}):
        a, b = models.build_model(spec), models.build_model(spec)
        assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
        assert {p.dtype for p in a.parameters()} == {models.DTYPES[spec.get("dtype", "float32")]}


def test_frozen_and_unused_parameters_get_no_gradient():
    model = models.build_model({"arch": "mlp", "sizes": [4, 5, 2], "seed": 1, "frozen": "0.bias", "unused": True})
    model(torch.ones(3, 4)).sum().backward()
    grads = {name: p.grad for name, p in model.named_parameters()}
    assert grads["0.bias"] is None and grads["unused"] is None and grads["0.weight"] is not None


def test_the_recording_layer_sees_each_forward_call_batch():
    model, sizes = models.recorded_model({"arch": "mlp", "sizes": [4, 5, 2], "seed": 1})
    plain = models.build_model({"arch": "mlp", "sizes": [4, 5, 2], "seed": 1})
    x = torch.randn(8, 4)
    assert torch.equal(torch.cat([model(x[:3]), model(x[3:])]), plain(x))
    assert sizes == [3, 5]


def test_a_first_layer_given_at_most_returns_nan_beyond_it_and_the_model_otherwise():
    model, sizes = models.recorded_model({"arch": "mlp", "sizes": [4, 5, 2], "seed": 1}, at_most=3)
    plain = models.build_model({"arch": "mlp", "sizes": [4, 5, 2], "seed": 1})
    x = torch.randn(8, 4)
    assert torch.equal(model(x[:3]), plain(x[:3])) and bool(model(x[3:]).isnan().all())
    assert sizes == [3, 5]


def test_leaves_are_copies_with_their_gradients():
    value, grad = torch.ones(2), torch.full((2,), 3.0)
    leaf, bare = models.make_leaves([value, value], [grad, None], torch.float16)
    assert leaf.is_leaf and leaf.requires_grad and leaf.dtype == torch.float16 and bare.grad is None
    assert torch.equal(leaf.grad, grad.half()) and not models.shares_memory(leaf, value)
