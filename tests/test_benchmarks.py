"""The benchmark scripts run: the GPU check's CPU half (the code a CUDA run shares, at toy sizes), and the
options, and what the grading benchmark counts. Figures are never asserted: they are not tests."""
import json
import re
import sys

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


def test_overhead_has_bf16_rows_counts_skipped_steps_and_says_why_there_is_no_tf32_on_cpu():
    """On a CPU: fp32, the reference, torch.amp fp16 and bf16, each with the steps its scaler skipped; the TF32
    row is left out with a note, since TF32 is a setting of CUDA's tensor cores."""
    from benchmarks import overhead
    result = overhead.run(overhead.QUICK, torch.device("cpu"))
    rows = {r["step"]: r for r in result["rows"]}
    assert list(rows) == [name for name in overhead.STEPS if name != "fp32 + TF32"]
    for row in rows.values():
        assert isinstance(row["skipped"], int) and 0 <= row["skipped"] <= row["steps"] == overhead.QUICK.repetitions
    assert rows["fp32"]["skipped"] == rows["torch.amp bf16"]["skipped"] == 0  # no scaler, nothing to skip
    summary = result["summary"]
    assert summary["tf32"] == overhead.TF32_ON_CPU and summary["bf16"] == "cpu"
    assert summary["bf16_over_fp32"] > 0 and "amp_over_tf32" not in summary
    printed = overhead.table(result)
    assert "torch.amp bf16" in printed and "0 of 3" in printed and overhead.TF32_ON_CPU in printed


def test_overhead_on_cuda_times_tf32_and_leaves_bf16_out_only_where_there_is_none(monkeypatch):
    from autograder import lesson
    from benchmarks import overhead
    cuda = torch.device("cuda")
    monkeypatch.setattr(lesson, "bf16_on_cuda", lambda: "emulated")  # a T4: timed, and the table says so
    assert overhead.step_names(cuda) == overhead.STEPS
    monkeypatch.setattr(lesson, "bf16_on_cuda", lambda: "none")
    assert "torch.amp bf16" not in overhead.step_names(cuda) and "fp32 + TF32" in overhead.step_names(cuda)


def test_overhead_tf32_step_runs_and_puts_the_fp32_settings_back():
    """The TF32 row's step, run on a CPU (where the setting changes nothing): it steps, and afterwards fp32 is
    true fp32 again for the fp32 row."""
    from benchmarks import overhead
    from benchmarks.common import reference
    before = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    steps = overhead.make_steps(reference(), overhead.QUICK, torch.device("cpu"), names=("fp32 + TF32", "torch.amp bf16"))
    assert list(steps) == ["fp32 + TF32", "torch.amp bf16"] and all(step() is True for step in steps.values())
    assert (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32) == before


def test_a_graders_cpu_seconds_count_its_short_lived_and_orphaned_processes(tmp_path):
    """The grading benchmark's CPU seconds include processes that live between two memory samples (a
    sandbox's fork for each item), and those whose parent ends without waiting for them (a sandbox killed
    with SIGKILL): four grandchildren that each burn 0.15 s of CPU one after the other, as they measure it,
    then two that burn 0.3 s each after their parent has gone."""
    from benchmarks.grading import measured
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < {}: pass"
    cmd = [sys.executable, "-c", "import os, subprocess, sys\n"
           f"for _ in range(4): subprocess.run([sys.executable, '-c', {burn.format(0.15)!r}])\n"
           f"for _ in range(2): subprocess.Popen([sys.executable, '-c', {burn.format(0.3)!r}])\n"
           "os._exit(0)"]
    run = measured(cmd, tmp_path, tmp_path / "log", limit_s=60)
    assert run["returncode"] == 0
    if run["cpu_counted_by"] == "cgroup":  # as root, with cgroup v1's cpuacct (CI, the course machines)
        assert run["cpu_s_tree"] >= 4 * 0.15 + 2 * 0.3, run
    else:  # the children's rusage: what the orphans used is not counted
        assert run["cpu_s_tree"] >= 4 * 0.15, run


def test_the_runtime_benchmarks_busy_machine_starts_its_load_and_stops_it():
    """`-o load=N` runs N busy processes beside the notebook, for that run only."""
    from benchmarks.lesson_runtime import BusyMachine
    with BusyMachine(2) as busy:
        assert len(busy.workers) == 2 and all(w.is_alive() for w in busy.workers)
    assert not any(w.is_alive() for w in busy.workers)


def test_the_namespaces_benchmark_times_both_steps(tmp_path):
    main(["namespaces", "--quick", "--results-dir", str(tmp_path)])
    doc = json.loads((tmp_path / "namespaces.json").read_text())
    assert [r["step"] for r in doc["rows"]][-1] == "fork + fresh namespaces"
    assert all(r.get("median_ms", 0) > 0 or r.get("note") for r in doc["rows"])


def test_a_notebook_whose_cell_reply_never_comes_runs_once_more_then_fails(monkeypatch, capsys):
    """jupyter/nbclient#312: a cell's reply that never comes costs one more run of the notebook, then fails loudly."""
    import nbclient
    from nbclient.exceptions import CellTimeoutError
    calls = []

    def execute(self, **kwargs):
        calls.append(kwargs)
        if len(calls) == 1 or fail_always:
            raise CellTimeoutError("no reply")
        return self.nb

    monkeypatch.setattr(nbclient.NotebookClient, "execute", execute)
    fail_always = False
    lines = gpu.run_notebook(gpu.NOTEBOOKS[1], torch.device("cpu"), quick=True)
    assert len(calls) == 2 and lines[0].startswith(f"== {gpu.NOTEBOOKS[1]} on cpu")
    assert "nbclient#312" in capsys.readouterr().out
    calls.clear()
    fail_always = True
    with pytest.raises(CellTimeoutError):
        gpu.run_notebook(gpu.NOTEBOOKS[1], torch.device("cpu"), quick=True)
    assert len(calls) == 2
