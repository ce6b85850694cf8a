"""The one GPU check: on a CUDA machine, everything the lesson and its checks do on a GPU, in one command.

    python -m benchmarks.gpu                        # on CUDA; refuses (exit 2) where torch sees no GPU
    python -m benchmarks.gpu --device cpu --quick   # the same code on the CPU at toy sizes (CI runs it)

It prints, in order:
1. the environment: the GPU, CUDA, whether bf16 is native, TF32's switches;
2. both notebooks end to end (the instructor's, the student's as released) with LESSON20_DEVICE set: each
   check cell's score and its ungraded GPU line, and the printed figures of the demos (the traces' bit-for-bit
   difference, the skipped steps, the memory ratios, the step times);
3. the visible checks on the reference, plainly and under torch.set_default_device(device);
4. the benchmarks that run on CUDA (memory, parity, overhead), which write benchmarks/results/<name>-cuda.json.
On an H200 the whole run is meant to take under 8 minutes; --quick runs the notebooks' short demos.
"""
import argparse
import html
import os
import re
import sys
import time
from pathlib import Path

import torch

from . import GPU_BENCHMARKS
from .cli import run_one
from .common import RESULTS, ROOT

NOTEBOOKS = ("solutions/lesson20/lesson20.ipynb", "lessons/lesson20/lesson20.ipynb")
SHOWN_LINES = 12  # of each demo cell's printed output
CELL_SECONDS = {False: 900, True: 180}  # a cell's longest run, full and quick (--quick: seconds alone, minutes on a busy machine)


def environment(device: torch.device) -> list:
    lines = [f"torch {torch.__version__}, device {device}"]
    if device.type != "cuda":
        return lines + ["no CUDA: the GPU figures below are the CPU's, and the GPU lines of the checks are skipped"]
    from autograder.lesson import bf16_on_cuda  # the lesson's own answer, which its speed demo prints
    if device.index is not None:
        torch.cuda.set_device(device)
    props = torch.cuda.get_device_properties(device)
    bf16 = bf16_on_cuda()
    return lines + [
        f"GPU {props.name}, compute capability {props.major}.{props.minor}, {props.total_memory / 2**30:.0f} GiB, "
        f"{torch.cuda.device_count()} visible",
        f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}",
        f"bf16: {bf16}" + ("" if bf16 == "native" else " (slow, or absent: the lesson's speed demo says so)"),
        f"TF32: matmul {torch.backends.cuda.matmul.allow_tf32}, cuDNN {torch.backends.cudnn.allow_tf32} "
        f"(float32 matmul precision {torch.get_float32_matmul_precision()!r})",
    ]


def check_cell_lines(cell) -> list:
    """A check cell's score (what nbgrader reads) and its GPU line, from the outputs it saved."""
    lines = []
    for out in cell.get("outputs", []):
        data = out.get("data", {})
        if "text/plain" in data and out.get("output_type") == "execute_result":
            lines.append(f"score {data['text/plain'].strip()}")
        found = re.search(r'<p class="lesson20-gpu">(.*?)</p>', data.get("text/html", ""), re.S)
        if found:
            lines.append(html.unescape(found.group(1)))
        if out.get("output_type") == "error":
            lines.append(f"{out['ename']}: {out['evalue'][:200]}")
    return lines


def printed(cell) -> list:
    text = "".join(out.get("text", "") for out in cell.get("outputs", []) if out.get("output_type") == "stream")
    lines = [ln for ln in text.splitlines() if ln.strip() and "it/s]" not in ln]  # progress bars left out
    return lines[:SHOWN_LINES] + ([f"... ({len(lines) - SHOWN_LINES} more lines)"] if len(lines) > SHOWN_LINES else [])


def run_notebook(relative: str, device: torch.device, quick: bool) -> list:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError

    path = ROOT / relative
    nb = nbformat.read(str(path), as_version=4)
    env = {k: v for k, v in os.environ.items() if k != "NBGRADER_EXECUTION"}
    env["LESSON20_DEVICE"] = str(device)
    if quick:
        env["NBGRADER_EXECUTION"] = "autograde"  # the demos' short form (lesson.demo_size)
    start = time.perf_counter()
    for attempt in (1, 2):
        client = NotebookClient(nb, timeout=CELL_SECONDS[quick], kernel_name="python3", allow_errors=True,
                                resources={"metadata": {"path": str(path.parent)}})
        try:
            client.execute(env=env)
            break
        except CellExecutionError as exc:  # allow_errors keeps going; this is the kernel itself failing
            return [f"== {relative}: the notebook could not run: {str(exc).splitlines()[-1][:300]}"]
        except CellTimeoutError:
            # nbclient can wait forever for the reply to a cell that shows widgets while its kernel sits idle
            # (jupyter/nbclient#312): the notebook runs once more, in a new kernel, and says so
            if attempt == 2:
                raise
            print(f"  {relative}: no reply to a cell within {CELL_SECONDS[quick]} s (jupyter/nbclient#312); "
                  "running the notebook again", flush=True)
            nb = nbformat.read(str(path), as_version=4)
            start = time.perf_counter()
    lines = [f"== {relative} on {device}: {time.perf_counter() - start:.1f} s"]
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = cell.source.lstrip()
        if source.startswith("check("):
            lines.append(f"  {source.splitlines()[0]}: " + "; ".join(check_cell_lines(cell)))
        elif not cell.metadata.get("nbgrader", {}).get("solution"):
            shown = printed(cell)
            errors = [f"{o['ename']}: {o['evalue'][:200]}" for o in cell.get("outputs", []) if o.get("output_type") == "error"]
            if shown or errors:
                lines.append(f"  [{cell.get('id', '?')}]")
                lines += [f"    {ln}" for ln in shown + errors]
    return lines


def visible_checks(device: torch.device) -> list:
    """The reference through every visible check, plainly and with `device` as torch's default device."""
    from autograder.instructor.reference import reference_namespace
    from autograder.items import AUTO_ITEMS
    from autograder.selfcheck import check

    namespace = reference_namespace()
    gpu = str(device) if device.type == "cuda" else ""
    lines = []
    for default in (None, device):
        if default is not None:
            torch.set_default_device(default)
        try:
            for item in AUTO_ITEMS:
                result = check(item.id, namespace, gpu=gpu)
                failed = [o.name for o in result.result.outcomes if not o.passed]
                lines.append(f"  {'default ' + str(default) if default else 'plain':<14} {item.id:<28} "
                             f"{repr(result)}/{item.points:g}" + (f"  failing: {failed}" if failed else "")
                             + (f"  {result.on_gpu[:1]} on the GPU" if result.on_gpu else ""))
        finally:
            torch.set_default_device("cpu")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for the CPU half (default cuda)")
    parser.add_argument("--quick", action="store_true", help="toy sizes and short demos: proves the run, not the figures")
    parser.add_argument("--results-dir", type=Path, default=RESULTS)
    parser.add_argument("--skip", action="append", default=[], choices=["notebooks", "checks", "benchmarks"],
                        help="leave a part out")
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print(f"python -m benchmarks.gpu: --device {args.device}, but torch {torch.__version__} sees no CUDA GPU on "
              "this machine; nothing was run. Run it on a GPU machine, or its CPU half with --device cpu --quick.",
              file=sys.stderr)
        return 2
    start = time.perf_counter()
    print("\n".join(["== environment", *("  " + ln for ln in environment(device))]), flush=True)
    if "notebooks" not in args.skip:
        for relative in NOTEBOOKS:
            print("\n".join(run_notebook(relative, device, args.quick)), flush=True)
    if "checks" not in args.skip:
        print("\n".join(["== the visible checks on the reference", *visible_checks(device)]), flush=True)
    if "benchmarks" not in args.skip:
        for name in GPU_BENCHMARKS:
            run_one(name, device, args.quick, (), args.results_dir)
    print(f"== all done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
