"""What the hand-written step costs: the reference mixed_precision_train_step against the same step
written with torch.autocast and torch.amp.GradScaler, and an fp32 step, on the same model and batch.

The three steps are timed in turn within each repetition (the order rotates), so that a slow
patch of a shared machine slows all three; the figures are medians.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder import lesson

from .common import count, format_table, median, quartiles, reference, timed

STEPS = ("fp32", "reference mixed", "torch.amp mixed")


@dataclass
class Config:
    sizes: tuple = (64, 512, 512, 512, 512, 10)  # the lesson's memory-demo model
    batch_size: int = 128
    micro_batch_size: int = 32
    max_grad_norm: float = 1.0
    warmup: int = 2
    repetitions: int = 15


CPU = Config()
QUICK = Config(sizes=(64, 128, 128, 10), batch_size=32, micro_batch_size=16, warmup=1, repetitions=3)
# Tensor-core sized: every dimension a multiple of 8 and large enough that matmuls dominate
CUDA = Config(sizes=(1024, 4096, 4096, 4096, 4096, 1024), batch_size=8192, micro_batch_size=2048,
              warmup=5, repetitions=30)


def amp_train_step(model, optimizer, scaler, loss_fn, inputs, targets, micro_batch_size: int,
                   max_grad_norm=None) -> tuple:
    """The reference step's contract written the torch.amp way: an fp32 model under autocast.

    Returns (whole-batch mean loss, whether the optimizer stepped), as the reference does.
    """
    device_type = inputs.device.type
    optimizer.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        with torch.autocast(device_type, dtype=torch.float16):
            out = model(x)
        loss = loss_fn(out.float(), y)
        scaler.scale(loss * share).backward()
        total_loss += loss.item() * share
    scaler.unscale_(optimizer)
    if max_grad_norm is not None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), max_grad_norm)
    scale = scaler.get_scale()
    scaler.step(optimizer)  # skipped by the scaler when a gradient is inf or NaN
    scaler.update()
    return total_loss, scaler.get_scale() >= scale


def make_steps(ns: dict, config: Config, device: torch.device) -> dict:
    """One closure per step kind, each with its own model (same initial weights) and optimizer."""
    sizes = tuple(config.sizes)
    x = torch.rand(config.batch_size, sizes[0], device=device)
    y = torch.randint(0, sizes[-1], (config.batch_size,), device=device)
    m, clip = config.micro_batch_size, config.max_grad_norm

    fp32 = lesson.make_mlp(sizes, seed=0, device=device)
    fp32_opt = torch.optim.Adam(fp32.parameters(), lr=1e-3)

    def fp32_step():
        ns["accumulate_gradients"](fp32, F.cross_entropy, x, y, m)
        torch.nn.utils.clip_grad_norm_(fp32.parameters(), clip)
        fp32_opt.step()

    half = lesson.make_mlp(sizes, seed=0, device=device, dtype=torch.float16)
    masters = ns["make_master_params"](half)
    ref_opt = torch.optim.Adam(masters, lr=1e-3)
    ref_scaler = ns["DynamicLossScaler"]()

    def reference_step():
        ns["mixed_precision_train_step"](half, masters, ref_opt, ref_scaler, F.cross_entropy, x, y, m, clip)

    amp = lesson.make_mlp(sizes, seed=0, device=device)
    amp_opt = torch.optim.Adam(amp.parameters(), lr=1e-3)
    amp_scaler = torch.amp.GradScaler(device.type)

    def amp_step():
        amp_train_step(amp, amp_opt, amp_scaler, F.cross_entropy, x, y, m, clip)

    return dict(zip(STEPS, (fp32_step, reference_step, amp_step)))


def run(config: Config, device: torch.device) -> dict:
    steps = make_steps(reference(), config, device)
    for _ in range(config.warmup):
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    for rep in range(config.repetitions):
        order = list(steps)[rep % len(steps):] + list(steps)[:rep % len(steps)]
        for name in order:
            times[name].append(timed(steps[name], device))
    paired = [r / a for r, a in zip(times["reference mixed"], times["torch.amp mixed"])]
    rows = []
    for name in steps:
        q1, q3 = quartiles(times[name])
        rows.append({"step": name, "median_s": median(times[name]), "q1_s": q1, "q3_s": q3,
                     "over_fp32": median(times[name]) / median(times["fp32"]),
                     "over_amp": median(times[name]) / median(times["torch.amp mixed"]), "times_s": times[name]})
    params = sum(a * b + b for a, b in zip(config.sizes[:-1], config.sizes[1:]))
    summary = {"params": params,
               "reference_over_amp": median(times["reference mixed"]) / median(times["torch.amp mixed"]),
               "reference_over_amp_paired_median": median(paired),
               "reference_over_fp32": median(times["reference mixed"]) / median(times["fp32"]),
               "amp_over_fp32": median(times["torch.amp mixed"]) / median(times["fp32"])}
    return {"rows": rows, "summary": summary}


def table(result: dict) -> str:
    columns = [("step", "step", ""), ("median ms", lambda r: 1e3 * r["median_s"], ".1f"),
               ("q1 ms", lambda r: 1e3 * r["q1_s"], ".1f"), ("q3 ms", lambda r: 1e3 * r["q3_s"], ".1f"),
               ("/ fp32", "over_fp32", ".2f"), ("/ torch.amp", "over_amp", ".2f")]
    s = result["summary"]
    return (format_table(result["rows"], columns)
            + f"\nreference / torch.amp: {s['reference_over_amp']:.2f} (median of paired ratios"
            f" {s['reference_over_amp_paired_median']:.2f}); model of {count(s['params'])} parameters")
