"""autograder.checks.messages: the words several exercises' checks share for one kind of mistake."""
import torch

from autograder.checks import messages


def scaler_run(scales, grads) -> dict:
    return {"scales": [{"type": "float", "value": s} for s in scales], "grads": grads}


def test_a_scaler_beside_another_interferes_only_when_it_behaves_otherwise():
    g = [torch.ones(2), None]
    alone = scaler_run([8.0, 4.0], g)
    assert not messages.instances_interfere({"alone": alone, "beside": scaler_run([8.0, 4.0], [torch.ones(2), None])})
    assert messages.instances_interfere({"alone": alone, "beside": scaler_run([8.0, 2.0], g)})
    assert messages.instances_interfere({"alone": alone, "beside": scaler_run([8.0, 4.0], [torch.ones(2) * 2, None])})
    assert messages.instances_interfere({"alone": alone, "beside": scaler_run([8.0, 4.0], [None, None])})


def test_kept_graphs_names_the_call_and_the_count():
    said = messages.kept_graphs("accumulate_gradients(...)", 4, 4)
    assert said.startswith("accumulate_gradients(...) held the graphs of 4 of its 4 micro-batches alive at once")
    assert "backward()" in said
