"""The benchmark scripts run: memory, parity and overhead at toy sizes, through the GPU entry point
on the CPU (the code a CUDA run shares). Figures are never asserted: they are not tests."""
import json

from benchmarks.cli import main
from benchmarks.gpu import GPU_BENCHMARKS


def test_gpu_entry_point_runs_on_cpu_at_toy_sizes(tmp_path, capsys):
    assert main(["--device", "cpu", "--quick", "--results-dir", str(tmp_path)], default_names=GPU_BENCHMARKS) == 0
    for name in GPU_BENCHMARKS:
        doc = json.loads((tmp_path / f"{name}.json").read_text())
        assert doc["benchmark"] == name and doc["device"] == "cpu" and doc["rows"]
        assert {"machine", "cpu_count", "torch", "date", "config"} <= set(doc)
    printed = capsys.readouterr().out
    assert "act mixed/fp32" in printed and "reference / torch.amp" in printed and "naive fp16" in printed


def test_options_override_a_config_field(tmp_path):
    main(["memory", "--quick", "-o", "models=(((64, 16, 10), 8),)", "--results-dir", str(tmp_path)])
    doc = json.loads((tmp_path / "memory.json").read_text())
    assert [r["params"] for r in doc["rows"]] == [64 * 16 + 16 + 16 * 10 + 10]
