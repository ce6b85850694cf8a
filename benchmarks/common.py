"""What every benchmark shares: the machine record, the device clock, tables and the results folder."""
import dataclasses
import gc
import json
import os
import platform
import statistics
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"


def reference():
    """The reference implementation, executed from the instructor notebook (never a copy)."""
    from autograder.instructor.reference import reference_namespace
    return reference_namespace()


# ---- the machine ----

def machine(device: torch.device) -> dict:
    """Where and when the figures were taken, so that a table can be read next to its machine."""
    info = {
        "machine": platform.node(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": _git_commit(),
        "device": str(device),
        # other work on the machine slows every figure: 1, 5 and 15 minute load averages when written
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    if device.type == "cuda":
        info["gpu"] = torch.cuda.get_device_name(device)
        info["cuda"] = torch.version.cuda
        info["tf32_matmul"] = torch.backends.cuda.matmul.allow_tf32  # False: fp32 figures are true fp32
    return info


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _git_commit() -> str:
    """The repository's commit, with "+changes" when tracked files differ from it."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, timeout=10).stdout.strip()
        changed = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                 capture_output=True, text=True, timeout=10).stdout.strip()
        return head + ("+changes" if changed else "")
    except (OSError, subprocess.SubprocessError):
        return ""


def busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy since boot, all cores together."""
    import psutil
    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def own_seconds() -> float:
    """CPU seconds of this process and of the children it has waited for."""
    import resource
    return sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


# ---- the device: one code path for CPU and CUDA ----

def synchronize(device: torch.device) -> None:
    """Wait for queued GPU work, so that a timer measures the work and not the launch."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


_BASELINE = {}  # device -> bytes allocated when its peak was last reset


def reset_peak_memory(device: torch.device) -> None:
    """Start a measurement: collect garbage, wait for the device, reset its peak and read what is allocated
    already (earlier measurements' tensors, cuBLAS's workspace), which peak_memory leaves out."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        _BASELINE[str(device)] = torch.cuda.memory_allocated(device)


def peak_memory(device: torch.device):
    """The CUDA allocator's peak since the last reset, above what was allocated then, in bytes; None on CPU
    (there is no allocator to ask)."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - _BASELINE.get(str(device), 0)


def timed(fn, device: torch.device) -> float:
    """Seconds that fn() takes on `device`."""
    synchronize(device)
    start = time.perf_counter()
    fn()
    synchronize(device)
    return time.perf_counter() - start


def median(values):
    return statistics.median(values) if values else float("nan")


def quartiles(values) -> tuple:
    """(25th, 75th) percentiles: how noisy a median is."""
    if len(values) < 2:
        return (values[0], values[0]) if values else (float("nan"), float("nan"))
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


# ---- configs: plain data, overridable from the command line ----

def override(config, assignments) -> object:
    """A copy of a config dataclass with `key=value` strings applied (values are Python literals)."""
    import ast
    fields = {f.name for f in dataclasses.fields(config)}
    changes = {}
    for text in assignments or []:
        key, sep, value = text.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in fields:
            raise SystemExit(f"-o {text!r}: expected KEY=VALUE with KEY one of {', '.join(sorted(fields))}")
        try:
            changes[key] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            changes[key] = value  # a bare word, such as a path or a variant name
    return dataclasses.replace(config, **changes)


# ---- output ----

def format_table(rows: list, columns: list) -> str:
    """rows: dicts; columns: (header, key or function of the row, format spec). Missing values show as '-'."""
    cells = []
    for row in rows:
        line = []
        for _, key, spec in columns:
            value = key(row) if callable(key) else row.get(key)
            line.append("-" if value is None else (format(value, spec) if spec else str(value)))
        cells.append(line)
    headers = [c[0] for c in columns]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h) for i, h in enumerate(headers)]
    rule = "  ".join("-" * w for w in widths)
    out = ["  ".join(h.rjust(w) for h, w in zip(headers, widths)), rule]
    out += ["  ".join(v.rjust(w) for v, w in zip(line, widths)) for line in cells]
    return "\n".join(out)


def count(n: int) -> str:
    """12345678 -> '12.3M': parameter counts in a table."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return str(n)


def mib(n) -> float:
    return None if n is None else n / 2**20


def write_result(name: str, device: torch.device, config, result: dict, seconds: float,
                 results_dir: Path = RESULTS) -> Path:
    """benchmarks/results/<name>[-cuda].json: the figures with their machine, config and run time."""
    results_dir = Path(results_dir)
    results_dir.mkdir(parents=True, exist_ok=True)
    path = results_dir / (name + ("" if device.type == "cpu" else f"-{device.type}") + ".json")
    doc = {"benchmark": name, **machine(device), "config": dataclasses.asdict(config),
           "seconds": round(seconds, 1), **result}
    path.write_text(to_json(doc) + "\n")
    return path


def to_json(value, indent: str = "") -> str:
    """JSON with one key per line, but lists without dicts in them (sizes, per-seed figures) on one line."""
    if isinstance(value, dict) and value:
        inner = indent + " "
        items = [f"{inner}{json.dumps(str(k))}: {to_json(v, inner)}" for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + indent + "}"
    if isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value):
        inner = indent + " "
        return "[\n" + ",\n".join(inner + to_json(v, inner) for v in value) + "\n" + indent + "]"
    return json.dumps(value, default=_plain)


def _plain(value):
    if isinstance(value, (torch.dtype, torch.device, Path)):
        return str(value)
    raise TypeError(f"not JSON serialisable: {value!r}")
