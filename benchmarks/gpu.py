"""The CUDA run: memory, parity and overhead on a GPU, in one prepared command.

    python -m benchmarks.gpu                    # writes benchmarks/results/<name>-cuda.json
    python -m benchmarks.gpu --device cpu --quick   # dry run of the same code on a CPU

Memory adds torch.cuda.max_memory_allocated (fp32 against mixed, one batch against micro-batches)
to the lesson's counts; overhead times fp32 against mixed (the reference and torch.amp) on a
tensor-core sized model. The code is the CPU benchmarks' own: only the configs (each module's CUDA)
and the device differ.
"""
import sys

from . import GPU_BENCHMARKS
from .cli import main

if __name__ == "__main__":
    sys.exit(main(default_device="cuda", default_names=GPU_BENCHMARKS))
