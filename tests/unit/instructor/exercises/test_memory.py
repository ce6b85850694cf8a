"""autograder.instructor.exercises.memory: the one-graph-at-a-time check passes under half the whole batch's
activations, fails above it with the sizes in its message, and skips where memory cannot be measured."""
import pytest

from autograder.instructor.exercises import memory


def test_the_activation_sizes_follow_the_models():
    assert memory.activation_bytes() == memory.BATCH * memory.WIDTH * 2 * 4
    assert memory.activation_bytes(2) * 2 == memory.activation_bytes(4)
    assert memory.BATCH // memory.MICRO > 2  # else keeping every graph would not stand out


def test_under_half_passes_and_above_fails_naming_the_fix():
    whole = memory.activation_bytes()
    memory.assert_one_graph_at_a_time({"memory": {"added": whole // 2 - 1}}, "f(...)", whole, 32, memory.MICRO)
    above = {"memory": {"added": whole}}
    with pytest.raises(AssertionError, match="backward"):  # graphs kept together, as the probe counted them
        memory.assert_one_graph_at_a_time({**above, "graphs_alive": 32}, "f(...)", whole, 32, memory.MICRO)
    with pytest.raises(AssertionError, match="no_grad"):  # a forward of the whole batch
        memory.assert_one_graph_at_a_time({**above, "graphs_alive": 1, "batches": [memory.BATCH]}, "f(...)", whole,
                                          32, memory.MICRO)
    with pytest.raises(AssertionError, match=r"loss\.item"):  # neither: something else grew with the batch
        memory.assert_one_graph_at_a_time({**above, "graphs_alive": 1, "batches": [memory.MICRO]}, "f(...)", whole,
                                          32, memory.MICRO)


def test_no_measurement_is_a_skip_not_a_pass():
    with pytest.raises(pytest.skip.Exception):
        memory.assert_one_graph_at_a_time({}, "f(...)", memory.activation_bytes(), 32, memory.MICRO)
