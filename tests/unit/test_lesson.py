"""autograder.lesson: the helpers the lesson's demos call: device choice, shorter demos under the autograder,
the digits split, byte counts of storages, the activation meter and the CUDA peak, what the GPU offers (bf16,
TF32), and demos that wait for an unwritten exercise."""
import gc
import weakref

import pytest
import torch

from autograder import lesson


def test_a_forced_device_is_taken_and_a_wrong_one_named(monkeypatch):
    monkeypatch.setenv(lesson.DEVICE_VARIABLE, "CPU ")
    assert lesson.pick_device() == torch.device("cpu")
    monkeypatch.setenv(lesson.DEVICE_VARIABLE, "tpu")
    with pytest.raises(ValueError, match=lesson.DEVICE_VARIABLE):
        lesson.pick_device()
    monkeypatch.setenv(lesson.DEVICE_VARIABLE, "cuda:x")
    with pytest.raises(ValueError, match="cuda:N"):
        lesson.pick_device()


def test_a_gpus_index_is_taken_and_checked(monkeypatch):
    monkeypatch.setenv(lesson.DEVICE_VARIABLE, "cuda:1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert lesson.pick_device() == torch.device("cuda:1")
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(RuntimeError, match="indices are 0 to 0"):
        lesson.pick_device()


def test_demos_run_short_only_under_the_autograder(monkeypatch):
    monkeypatch.delenv("NBGRADER_EXECUTION", raising=False)
    assert not lesson.is_autograding() and lesson.demo_size(100, 5) == 100
    monkeypatch.setenv("NBGRADER_EXECUTION", "autograde")
    assert lesson.is_autograding() and lesson.demo_size(100, 5) == 5


def test_digits_split_into_disjoint_train_and_test_sets():
    x_train, y_train, x_test, y_test = lesson.load_digits(test_fraction=0.25, seed=3)
    assert x_train.shape[1] == 64 and len(x_test) == int(0.25 * (len(x_train) + len(x_test)))
    assert 0 <= float(x_train.min()) and float(x_train.max()) <= 1 and set(y_test.tolist()) <= set(range(10))
    again = lesson.load_digits(test_fraction=0.25, seed=3)
    assert torch.equal(again[0], x_train) and torch.equal(again[3], y_test)


def test_a_shared_storage_is_counted_once():
    a = torch.zeros(100, dtype=torch.float16)
    assert lesson.tensor_bytes([a, a[10:], a.view(10, 10), None]) == a.numel() * a.element_size()
    assert lesson.tensor_bytes([a, torch.zeros(3)]) == 200 + 12


def test_optimizer_state_bytes_counts_adams_two_moments():
    model = lesson.make_mlp((4, 3), seed=0)
    optimizer = torch.optim.Adam(model.parameters())
    model(torch.ones(2, 4)).sum().backward()
    optimizer.step()
    params = sum(p.numel() * p.element_size() for p in model.parameters())
    steps = sum(s["step"].numel() * s["step"].element_size() for s in optimizer.state.values())
    assert lesson.optimizer_state_bytes(optimizer) == 2 * params + steps


def test_a_demo_that_needs_an_unwritten_exercise_says_so(capsys):
    with lesson.needs("underflow_fraction"):
        raise NotImplementedError("Exercise 1")
    assert "underflow_fraction" in capsys.readouterr().out
    with pytest.raises(ValueError), lesson.needs("underflow_fraction"):
        raise ValueError("a real bug is not hidden")


def test_the_activation_meter_counts_what_autograd_saves_once_and_no_parameter():
    """Linear(8, 16) saves its input (3 x 8 fp32) and its weight (a parameter, not counted); ReLU saves its
    output (3 x 16), which the next Linear saves again as its input (counted once)."""
    model = lesson.make_mlp((8, 16, 4), seed=0)
    with lesson.ActivationMeter(model) as meter:
        model(torch.ones(3, 8)).sum().backward()
    assert meter.peak_bytes == 3 * 8 * 4 + 3 * 16 * 4


def test_the_activation_meter_lets_go_of_the_model_when_its_block_ends():
    """No reference cycle is left: with the garbage collector off, `del model` after the `with` block frees the
    model at once, while the meter is still alive, and the meter goes as soon as its last name does."""
    def measured():
        model = lesson.make_mlp((8, 16, 4), seed=0)
        with lesson.ActivationMeter(model) as meter:
            model(torch.ones(3, 8)).sum().backward()
        model_ref = weakref.ref(model)
        del model
        assert model_ref() is None, "the meter still holds the model after its with block"
        return weakref.ref(meter), meter.peak_bytes

    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        meter_ref, peak = measured()
        assert peak > 0 and meter_ref() is None, "the meter is kept alive by a reference cycle"
    finally:
        if was_enabled:
            gc.enable()


def test_peak_memory_on_a_cpu_is_none_and_asks_nothing(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("PeakMemory on a CPU called a torch.cuda function or the garbage collector")
    for name in ("synchronize", "reset_peak_memory_stats", "memory_allocated", "max_memory_allocated"):
        monkeypatch.setattr(torch.cuda, name, refuse)
    monkeypatch.setattr(lesson.gc, "collect", refuse)
    with lesson.PeakMemory(torch.device("cpu")) as peak:
        torch.zeros(1000)
    assert peak.baseline is None and peak.increase is None


def test_peak_memory_on_cuda_is_the_peak_above_a_baseline_taken_after_collecting(monkeypatch):
    """The CUDA path, against a fake allocator: collect, synchronize, reset the peak, then read the baseline;
    after the block, synchronize and subtract it from the peak."""
    calls = []
    allocated = {"now": 300, "peak": 900}
    monkeypatch.setattr(lesson.gc, "collect", lambda: calls.append("collect"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: calls.append("synchronize"))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda device=None: calls.append("reset"))
    monkeypatch.setattr(torch.cuda, "memory_allocated",
                        lambda device=None: calls.append("allocated") or allocated["now"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda device=None: calls.append("peak") or allocated["peak"])
    with lesson.PeakMemory("cuda") as peak:
        assert calls == ["collect", "synchronize", "reset", "allocated"] and peak.baseline == 300
    assert calls[4:] == ["synchronize", "peak"] and peak.increase == 900 - 300


def test_bf16_is_native_emulated_or_absent(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert lesson.bf16_on_cuda() == "none"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)
    assert lesson.bf16_on_cuda() == "native"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    monkeypatch.setattr(lesson, "_bf16_tensor_works", lambda: True)
    assert lesson.bf16_on_cuda() == "emulated"  # a T4: bf16 runs, without bf16 tensor cores
    monkeypatch.setattr(lesson, "_bf16_tensor_works", lambda: False)
    assert lesson.bf16_on_cuda() == "none"


def test_bf16_on_an_older_torch_reads_the_compute_capability(monkeypatch):
    """Before `including_emulation`, is_bf16_supported() took no argument: the capability decides."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    monkeypatch.setattr(torch.version, "hip", None)
    monkeypatch.setattr(lesson, "_bf16_tensor_works", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (8, 0))
    assert lesson.bf16_on_cuda() == "native"
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: (7, 0))
    assert lesson.bf16_on_cuda() == "emulated"


def test_tf32_is_allowed_inside_the_block_only():
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    with pytest.raises(ValueError), lesson.tf32_allowed():
        assert torch.backends.cuda.matmul.allow_tf32 and torch.backends.cudnn.allow_tf32
        raise ValueError("the settings come back even after an error")
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before
