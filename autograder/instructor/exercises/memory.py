"""The memory point of the accumulating exercises (accumulate_gradients, the training step, token accumulation),
measured: only one micro-batch's graph may be alive at a time.

The probe's call runs in the sandbox, and the grader reads the peak of the sandbox's memory cgroup
around it (sandbox/session.py), where the student's code cannot reach. The model is sized so that
keeping every micro-batch's graph alive costs many times what one micro-batch costs: a loop that
calls backward() on each micro-batch stays far below half the whole batch's activations, and any
code shape that keeps the graphs (one backward of a summed loss, torch.cat of the outputs, the whole
batch at once) goes above it.
"""
import pytest

from ...runner import NOT_CHECKED
from ...text import NO_MEMORY_MEASURE

BATCH, MICRO, WIDTH, FEATURES, CLASSES = 4096, 128, 4096, 4, 4
# a wide hidden layer with little arithmetic: its activations, not its weights, are what memory holds
WIDE = {"arch": "mlp", "sizes": [FEATURES, WIDTH, CLASSES], "seed": 41, "act": "tanh"}
SEQUENCES, LENGTH, VOCAB, MICRO_SEQUENCES = 128, 64, 2048, 4
WIDE_LM = {"arch": "lm", "vocab": VOCAB, "dim": 8, "seed": 42}


def activation_bytes(dtype_bytes: int = 4) -> int:
    """What the whole batch's saved activations of WIDE take: the hidden layer's output and its tanh."""
    return BATCH * WIDTH * 2 * dtype_bytes


def lm_activation_bytes() -> int:
    """What the whole batch's logits and their log-softmax take in WIDE_LM."""
    return SEQUENCES * LENGTH * VOCAB * 4 * 2


def assert_one_graph_at_a_time(got: dict, call: str, whole_batch: int, micro_batches: int, micro_batch_size: int):
    """The call added less than half of what keeping every micro-batch's graph costs; past that, the message
    names what the probe saw take the memory: a call of the model on more than a micro-batch (under no_grad
    too, its activations are held while it runs), or graphs kept alive together."""
    memory = got.get("memory")
    if memory is None:
        pytest.skip(NOT_CHECKED + NO_MEMORY_MEASURE)  # never a pass: the rubric records it as not checked
    added, limit = memory["added"], whole_batch // 2
    mib = 2 ** 20
    measured = (f"{call} raised the sandbox's memory by {added / mib:.0f} MiB at its peak. Keeping one "
                f"micro-batch's graph at a time needs about {whole_batch / micro_batches / mib:.0f} MiB; the whole "
                f"batch's activations take about {whole_batch / mib:.0f} MiB, and the limit is {limit / mib:.0f} MiB. ")
    largest = max(got.get("batches") or got.get("batches_seen") or [0])
    assert added < limit or largest <= micro_batch_size, measured + (
        f"The model was called on {largest} examples at once: a forward pass holds that many examples' "
        "activations while it runs, even under torch.no_grad(). Hint: compute the loss you return from each "
        "micro-batch's own loss (loss.item() times its share), never from a forward of the whole batch.")
    assert added < limit or got.get("graphs_alive", 2) <= 1, measured + (
        f"Something kept the micro-batches' graphs alive together ({got.get('graphs_alive')} at once): call "
        "backward() on each micro-batch's loss inside the loop, instead of adding the losses (or concatenating "
        "the outputs) and calling backward() once.")
    assert added < limit, measured + (
        "Each micro-batch's graph was freed before the next forward, so something else the call kept grew with "
        "the batch (a list of every micro-batch's outputs or losses, not detached?). Hint: keep only Python "
        "floats (loss.item()) from one micro-batch to the next.")
