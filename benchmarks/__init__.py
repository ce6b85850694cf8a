"""Benchmarks for Lesson 20: scripts that print a table and write benchmarks/results/<name>.json.

    python -m benchmarks                      # all five defaults, on CPU
    python -m benchmarks mutation             # mutation testing of the checks (~20 min; not a default)
    python -m benchmarks memory overhead      # some of them
    python -m benchmarks memory -o batch_size=128 -o "sizes=((64, 256, 10),)"
    python -m benchmarks.gpu                  # memory, parity and overhead on CUDA

runtime   the instructor notebooks run headless (nbclient): seconds per notebook and in total
grading   `python -m autograder grade --jobs 2` against plain serial `nbgrader autograde`
memory    bytes of one training step: mixed / fp32, micro-batched / one batch, as the model grows
parity    final loss and accuracy of fp32, mixed precision and naive fp16 over three seeds
overhead  the reference mixed-precision step against torch.autocast + torch.amp.GradScaler
mutation  cosmic-ray mutants of the reference: the share of them the checks kill, per item
namespaces  a fresh kernel per submission (new namespaces) against a plain fork, in milliseconds
"""
# name -> module; each module has a Config dataclass with CPU and QUICK instances (CUDA where it
# runs there), run(config, device) -> {"rows": [...], "summary": {...}} and table(result) -> str
BENCHMARKS = {
    "runtime": "benchmarks.lesson_runtime",
    "grading": "benchmarks.grading",
    "memory": "benchmarks.memory",
    "parity": "benchmarks.parity",
    "overhead": "benchmarks.overhead",
    "mutation": "benchmarks.mutation",
    "namespaces": "benchmarks.namespaces",
}
# what `python -m benchmarks` (and `make benchmarks`) runs with no names: mutation alone takes ~20 min
DEFAULT_BENCHMARKS = ("runtime", "grading", "memory", "parity", "overhead")
GPU_BENCHMARKS = ("memory", "parity", "overhead")
