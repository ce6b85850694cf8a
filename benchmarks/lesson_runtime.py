"""How long the lesson takes: every instructor notebook run headless (nbclient), full-length demos.

A completed student notebook runs the instructor notebook's code, so its time is the student's. `load` busy
Python processes run beside it (the other work of a shared machine: one per core is a fully busy machine), and
`threads` sets OMP_NUM_THREADS for the kernel (0: unset, torch takes every core).
"""
import multiprocessing
import os
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from .common import ROOT, busy_seconds, format_table, own_seconds

TARGET_SECONDS = 60.0


@dataclass
class Config:
    notebooks: str = "solutions/*/*.ipynb"   # glob, relative to the repository
    cell_timeout: int = 600                 # seconds per cell
    load: int = 0                           # busy Python processes beside the notebook
    threads: int = 0                        # OMP_NUM_THREADS for the kernel; 0 leaves it unset


CPU = Config()
QUICK = CPU


def _spin(stop):
    """A busy loop until `stop` is set: one core's worth of someone else's work."""
    while not stop.is_set():
        sum(range(10_000))


class BusyMachine:
    """`n` busy processes for the time of a `with` block."""

    def __init__(self, n: int):
        self.n, self.stop, self.workers = n, multiprocessing.Event(), []

    def __enter__(self):
        self.workers = [multiprocessing.Process(target=_spin, args=(self.stop,), daemon=True) for _ in range(self.n)]
        for worker in self.workers:
            worker.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for worker in self.workers:
            worker.join(timeout=10)
        return False


def run_notebook(path: Path, config: Config, device: torch.device) -> dict:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = nbformat.read(str(path), as_version=4)
    env = {k: v for k, v in os.environ.items() if k not in ("NBGRADER_EXECUTION", "OMP_NUM_THREADS")}  # full demos
    env["LESSON20_DEVICE"] = device.type
    if config.threads:
        env["OMP_NUM_THREADS"] = str(config.threads)
    client = NotebookClient(nb, timeout=config.cell_timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    error = ""
    with BusyMachine(config.load):
        machine_before, own_before = busy_seconds(), own_seconds()
        start = time.perf_counter()
        try:
            client.execute(env=env)
        except CellExecutionError as exc:
            error = str(exc).strip().splitlines()[-1][:300]
        seconds = time.perf_counter() - start
        # the kernel is a child that has been waited for by now, so its CPU is in own_seconds()
        others = (busy_seconds() - machine_before) - (own_seconds() - own_before)
    code = [c for c in nb.cells if c.cell_type == "code"]
    return {"notebook": str(path.relative_to(ROOT)), "code_cells": len(code), "seconds": seconds,
            "other_cores": max(others, 0.0) / seconds, "load": config.load, "threads": config.threads or "all",
            "status": "error" if error else "ok", "error": error}


def run(config: Config, device: torch.device) -> dict:
    paths = sorted(ROOT.glob(config.notebooks))
    if not paths:
        raise SystemExit(f"no notebooks match {config.notebooks!r} under {ROOT}")
    rows = [run_notebook(p, config, device) for p in paths]
    total = sum(r["seconds"] for r in rows)
    return {"rows": rows, "summary": {"total_seconds": total, "target_seconds": TARGET_SECONDS,
                                      "within_target": total < TARGET_SECONDS,
                                      "errors": sum(r["status"] != "ok" for r in rows)}}


def table(result: dict) -> str:
    s = result["summary"]
    rows = result["rows"] + [{"notebook": "total", "seconds": s["total_seconds"]}]
    return (format_table(rows, [("notebook", "notebook", ""), ("code cells", "code_cells", "d"),
                                ("busy processes beside it", "load", ""), ("OMP_NUM_THREADS", "threads", ""),
                                ("seconds", "seconds", ".1f"), ("other work, cores", "other_cores", ".2f"),
                                ("status", "status", "")])
            + f"\ntarget: under {s['target_seconds']:.0f} s in total: {'met' if s['within_target'] else 'NOT met'}"
            + "".join(f"\n{r['notebook']}: {r['error']}" for r in result["rows"] if r["error"]))
