"""Memory of one Adam training step, fp32 against mixed precision and one batch against micro-batches.

Counted with the lesson's own helpers (ActivationMeter, tensor_bytes, optimizer_state_bytes),
through the reference exercises; on CUDA the allocator's peak above its baseline (common.peak_memory)
is reported next to the counts.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder import lesson

from .common import count, format_table, mib, peak_memory, reference, reset_peak_memory

# The paper (Micikevicius et al., 2018): mixed precision "nearly halves" training memory.
PAPER_RATIO = 0.5


MLP = {  # layer widths; "wN": 4 hidden layers of width N
    "digits": (64, 128, 128, 10),
    "w512": (64, 512, 512, 512, 512, 10),
    "w1024": (64, 1024, 1024, 1024, 1024, 10),
    "w2048": (64, 2048, 2048, 2048, 2048, 10),
    "w4096": (64, 4096, 4096, 4096, 4096, 10),
}


@dataclass
class Config:
    # (layer widths, batch size) per row. The model grows at one batch size, from the lesson's digits
    # model to about 50M parameters; fp16 matmuls on a CPU run at well under 1 GFLOP/s, so the batch
    # stays small. The last row is the lesson's memory demo (batch 2048), where activations dominate.
    models: tuple = tuple((MLP[name], 64) for name in ("digits", "w512", "w1024", "w2048", "w4096")) + (
        (MLP["w512"], 2048),)
    micro_batches: int = 4  # accumulation: k micro-batches of batch/k against one batch


CPU = Config()
QUICK = Config(models=(((64, 32, 10), 32), ((64, 128, 128, 10), 32), ((64, 256, 256, 10), 64)))
# A GPU holds the batch sizes at which activations dominate, as in the paper's networks
CUDA = Config(models=tuple(((1024, w, w, w, w, 1024), b) for w in (1024, 2048, 4096, 8192) for b in (256, 8192)))


def measure_step(ns: dict, sizes, mode: str, batch_size: int, micro_batch_size: int,
                 device: torch.device) -> dict:
    """Bytes held by one Adam step of an MLP, by kind, plus the CUDA peak (None on CPU).

    mode "fp32" runs the reference accumulate_gradients; "mixed" runs the reference
    mixed_precision_train_step on an fp16 model with fp32 masters.
    """
    dtype = torch.float32 if mode == "fp32" else torch.float16
    model = lesson.make_mlp(sizes, seed=0, device=device, dtype=dtype)  # born fp16: no fp32 copy in the peak
    x = torch.rand(batch_size, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (batch_size,), device=device)
    reset_peak_memory(device)
    masters = []
    with lesson.ActivationMeter(model) as meter:
        if mode == "fp32":
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
            ns["accumulate_gradients"](model, F.cross_entropy, x, y, micro_batch_size)
            optimizer.step()
        else:
            masters = ns["make_master_params"](model)
            optimizer = torch.optim.Adam(masters, lr=1e-3)
            scaler = ns["DynamicLossScaler"]()
            for _ in range(30):  # an overflow skips the step, and Adam's state would never be made
                _, stepped = ns["mixed_precision_train_step"](model, masters, optimizer, scaler,
                                                              F.cross_entropy, x, y, micro_batch_size)
                if stepped:
                    break
    parts = {
        "weights": lesson.tensor_bytes(model.parameters()),
        "gradients": lesson.tensor_bytes(p.grad for p in model.parameters()),
        "masters": lesson.tensor_bytes(masters) + lesson.tensor_bytes(m.grad for m in masters),
        "optimizer": lesson.optimizer_state_bytes(optimizer),
        "activations": meter.peak_bytes,
    }
    return {**parts, "total": sum(parts.values()), "cuda_peak": peak_memory(device)}


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def run(config: Config, device: torch.device) -> dict:
    ns = reference()
    rows = []
    for sizes, batch_size in config.models:
        sizes = tuple(sizes)
        micro_batch_size = math.ceil(batch_size / config.micro_batches)
        one = measure_step(ns, sizes, "fp32", batch_size, batch_size, device)
        mixed = measure_step(ns, sizes, "mixed", batch_size, batch_size, device)
        accumulated = measure_step(ns, sizes, "fp32", batch_size, micro_batch_size, device)
        params = sum(a * b + b for a, b in zip(sizes[:-1], sizes[1:]))
        rows.append({
            "sizes": list(sizes), "params": params, "batch_size": batch_size,
            "micro_batch_size": micro_batch_size, "micro_batches": math.ceil(batch_size / micro_batch_size),
            "fp32": one, "mixed": mixed, "accumulated": accumulated,
            "activation_share_fp32": one["activations"] / one["total"],
            "activations_mixed_over_fp32": _ratio(mixed["activations"], one["activations"]),
            "total_mixed_over_fp32": _ratio(mixed["total"], one["total"]),
            "activations_accumulated_over_one_batch": _ratio(accumulated["activations"], one["activations"]),
            "total_accumulated_over_one_batch": _ratio(accumulated["total"], one["total"]),
            "cuda_peak_mixed_over_fp32": _ratio(mixed["cuda_peak"], one["cuda_peak"]),
            "cuda_peak_accumulated_over_one_batch": _ratio(accumulated["cuda_peak"], one["cuda_peak"]),
        })
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return {"rows": rows, "summary": {"paper_ratio": PAPER_RATIO}}


def table(result: dict) -> str:
    rows = result["rows"]
    flat = [{**r, "model": count(r["params"]), "fp32_mib": mib(r["fp32"]["total"]),
             "mixed_mib": mib(r["mixed"]["total"]), "split": f"{r['micro_batches']}x{r['micro_batch_size']}"}
            for r in rows]
    flat.append({"model": "paper", "activations_mixed_over_fp32": PAPER_RATIO, "total_mixed_over_fp32": PAPER_RATIO})
    columns = [
        ("params", "model", ""),
        ("batch", "batch_size", "d"),
        ("fp32 MiB", "fp32_mib", ".1f"),
        ("mixed MiB", "mixed_mib", ".1f"),
        ("act share", "activation_share_fp32", ".0%"),
        ("act mixed/fp32", "activations_mixed_over_fp32", ".3f"),
        ("total mixed/fp32", "total_mixed_over_fp32", ".3f"),
        ("k x m", "split", ""),
        ("act accum/one", "activations_accumulated_over_one_batch", ".3f"),
        ("total accum/one", "total_accumulated_over_one_batch", ".3f"),
    ]
    if any(r["fp32"]["cuda_peak"] is not None for r in rows):
        columns += [("CUDA peak mixed/fp32", "cuda_peak_mixed_over_fp32", ".3f"),
                    ("CUDA peak accum/one", "cuda_peak_accumulated_over_one_batch", ".3f")]
    return (format_table(flat, columns)
            + "\nact: bytes autograd saves for backward (largest forward window). total: weights, gradients,"
            "\nfp32 masters and their gradients, optimizer state and activations. act share: activations in the"
            "\nfp32 total. accum: fp32 accumulation in k micro-batches of m against one batch of k*m."
            "\npaper: Micikevicius et al. (2018), mixed precision 'nearly halves' memory.")
