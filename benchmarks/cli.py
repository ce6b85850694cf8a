"""Command line: `python -m benchmarks [NAME ...] [--quick] [--device cpu|cuda] [-o KEY=VALUE ...]`
and `python -m benchmarks.gpu` (the same, on CUDA, for memory, parity and overhead)."""
import argparse
import importlib
import time
from pathlib import Path

import torch

from . import BENCHMARKS, DEFAULT_BENCHMARKS, GPU_BENCHMARKS
from .common import RESULTS, override, write_result


def run_one(name: str, device: torch.device, quick: bool = False, options=(), results_dir=RESULTS) -> dict:
    """Run one benchmark, print its table and write its JSON; return the result."""
    module = importlib.import_module(BENCHMARKS[name])
    if device.type == "cuda" and not hasattr(module, "CUDA"):
        raise SystemExit(f"{name} runs on CPU only; on CUDA: {', '.join(GPU_BENCHMARKS)}")
    base = module.QUICK if quick else (module.CUDA if device.type == "cuda" else module.CPU)
    config = override(base, options)
    print(f"== {name} on {device} ==", flush=True)
    start = time.perf_counter()
    result = module.run(config, device)
    seconds = time.perf_counter() - start
    print(module.table(result))
    path = write_result(name, device, config, result, seconds, results_dir)
    print(f"({seconds:.0f} s; wrote {path})\n", flush=True)
    return result


def main(argv=None, default_device: str = "cpu", default_names=DEFAULT_BENCHMARKS) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"any of {', '.join(BENCHMARKS)} (default: {', '.join(default_names)})")
    parser.add_argument("--device", default=default_device, choices=["cpu", "cuda"])
    parser.add_argument("--quick", action="store_true", help="toy sizes: proves the scripts run, figures mean nothing")
    parser.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config field of the benchmark(s) named, e.g. -o repetitions=30")
    parser.add_argument("--results-dir", type=Path, default=RESULTS, help=f"where the JSON goes (default {RESULTS})")
    args = parser.parse_args(argv)
    names = args.names or list(default_names)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    if args.option and len(names) != 1:
        parser.error("-o applies to one benchmark: name exactly one")
    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("--device cuda: torch sees no CUDA GPU on this machine")
    device = torch.device(args.device)
    start = time.perf_counter()
    for name in names:
        run_one(name, device, args.quick, args.option, args.results_dir)
    print(f"all done in {time.perf_counter() - start:.0f} s")
    return 0

