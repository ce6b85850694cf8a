"""autograder.selfcheck: the check() a student calls in the notebook."""
import pytest

from autograder.selfcheck import check


def test_repr_is_the_score_nbgrader_reads():
    result = check("q5_answer", {"Q5_ANSWER": "b"})
    assert repr(result) == "1" and "q5_answer" in str(result)
    assert repr(check("q5_answer", {})) == "0"


def test_wrong_use_gets_a_clear_error():
    with pytest.raises(KeyError, match="the ids are"):
        check("no_such_item", {})
    with pytest.raises(ValueError, match="graded by your instructor"):
        check("practice_q1", {})
    with pytest.raises(TypeError, match="pass globals"):
        check("q5_answer", None)


def test_a_gpu_notebooks_default_device_changes_nothing_and_is_put_back():
    """`torch.set_default_device("cuda")`, common in GPU notebooks, would make every factory call of the checks
    fail on a CPU-only machine: the checks run with the CPU as the default, and the student's is put back."""
    import torch
    import torch.utils._device as device_mode

    from autograder.instructor.reference import reference_namespace
    namespace = reference_namespace()
    torch.set_default_device("cuda")
    try:
        results = {i: check(i, namespace) for i in ("master_weights", "accumulate_gradients")}
        assert device_mode.CURRENT_DEVICE == torch.device("cuda")
    finally:
        torch.set_default_device("cpu")
    for item_id, result in results.items():
        failed = [o.message for o in result.result.outcomes if not o.passed]
        assert result.result.outcomes and not failed, (item_id, failed[:2])


def test_a_cuda_only_line_is_named_with_the_cpu_hint():
    from autograder.text import raised
    text = raised("make_master_params(model)", "AssertionError", "Torch not compiled with CUDA enabled", "line 3")
    assert "runs your code on the CPU" in text and "p.device" in text
    assert "CPU" not in raised("f()", "ValueError", "bad", "")


def test_the_gpu_line_is_shown_beside_the_report_and_changes_no_score():
    from autograder.instructor.reference import reference_namespace
    namespace = dict(reference_namespace())
    result = check("accumulate_gradients", namespace, gpu="cpu")  # CI's only device: the same path as "cuda"
    assert repr(result) == "2" and result.on_gpu.startswith("✓ On your GPU (cpu, not graded)")
    assert result.on_gpu in str(result) and "lesson20-gpu" in result._repr_html_()
    namespace["accumulate_gradients"] = lambda *args: 1 / 0
    broken = check("accumulate_gradients", namespace, gpu="cpu")
    assert broken.on_gpu.startswith("✗ On your GPU") and "ZeroDivisionError" in broken.on_gpu
    assert check("accumulate_gradients", namespace, gpu="").on_gpu == ""
    assert check("q5_answer", {"Q5_ANSWER": "a"}, gpu="cpu").on_gpu == ""
