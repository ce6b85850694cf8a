"""The benchmark scripts run: the GPU check's CPU half (the code a CUDA run shares, at toy sizes), and the
options. Figures are never asserted: they are not tests."""
import json
import re

import pytest
import torch

from benchmarks import gpu
from benchmarks.cli import main
from benchmarks.gpu import GPU_BENCHMARKS
from autograder.items import AUTO_ITEMS


@pytest.mark.slow
def test_the_gpu_check_runs_its_cpu_half(tmp_path, capsys):
    """python -m benchmarks.gpu --device cpu --quick: the environment, both notebooks with their check cells and
    demo figures, the visible checks plainly and under a default device, and the benchmarks at toy sizes."""
    assert gpu.main(["--device", "cpu", "--quick", "--results-dir", str(tmp_path)]) == 0
    for name in GPU_BENCHMARKS:
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        assert doc["benchmark"] == name and doc["device"] == "cpu" and doc["rows"]
        assert {"machine", "cpu_count", "torch", "date", "config"} <= set(doc)
    printed = capsys.readouterr().out
    assert "act mixed/fp32" in printed and "reference / torch.amp" in printed and "naive fp16" in printed
    for relative in gpu.NOTEBOOKS:
        assert f"== {relative} on cpu" in printed
    points = {item.id: item.points for item in AUTO_ITEMS}
    # the instructor's notebook scores full marks, the student's stubs 0
    scores = re.findall(r'check\("(\w+)", globals\(\)\): score ([\d.]+)', printed)
    assert [float(s) for _, s in scores[:len(points)]] == list(points.values())
    assert [float(s) for _, s in scores[len(points):]] == [0.0] * len(points)
    for default in ("plain", "default cpu"):
        rows = [ln for ln in printed.splitlines() if ln.strip().startswith(default + " ")]
        assert len(rows) == len(points) and not any("failing" in ln for ln in rows), rows


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA: the GPU check would run")
def test_the_gpu_check_refuses_loudly_without_cuda(capsys):
    assert gpu.main([]) == 2
    assert "sees no CUDA GPU" in capsys.readouterr().err


def test_options_override_a_config_field(tmp_path):
    main(["memory", "--quick", "-o", "models=(((64, 16, 10), 8),)", "--results-dir", str(tmp_path)])
    doc = json.loads((tmp_path / "memory.json").read_text())
    assert [r["params"] for r in doc["rows"]] == [64 * 16 + 16 + 16 * 10 + 10]
