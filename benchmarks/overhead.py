"""What the hand-written step costs: the reference mixed_precision_train_step against the same step
written with torch.autocast and torch.amp.GradScaler, an fp32 step (on CUDA also with TF32 allowed, the
fair baseline since Ampere), and autocast bf16 without a scaler, on the same model and batch.

The steps are timed in turn within each repetition (the order rotates), so that a slow patch of a
shared machine slows all of them; the figures are medians. Each row counts the steps its scaler
skipped during the timed repetitions (a skipped step does no optimizer update, so it is cheaper).
On a CPU the TF32 row is left out: TF32 is a setting of CUDA's tensor cores, and a CPU would time
fp32 again. The summary says whether bf16 is native or only emulated on the GPU.
"""
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder import lesson

from .common import count, format_table, median, quartiles, reference, timed

STEPS = ("fp32", "fp32 + TF32", "reference mixed", "torch.amp mixed", "torch.amp bf16")
TF32_ON_CPU = "skipped on cpu: TF32 is a CUDA tensor-core setting, so the row would time fp32 again"


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
                   max_grad_norm=None, dtype=torch.float16) -> tuple:
    """The reference step's contract written the torch.amp way: an fp32 model under autocast in `dtype`
    (for bf16, pass a disabled GradScaler, as nanoGPT does).

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
        with torch.autocast(device_type, dtype=dtype):
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


def step_names(device: torch.device) -> tuple:
    """The rows timed on `device`: no TF32 on a CPU, no bf16 on a GPU that cannot make a bf16 tensor."""
    if device.type != "cuda":
        return tuple(name for name in STEPS if name != "fp32 + TF32")
    if lesson.bf16_on_cuda() == "none":
        return tuple(name for name in STEPS if name != "torch.amp bf16")
    return STEPS


def make_steps(ns: dict, config: Config, device: torch.device, names=None) -> dict:
    """One closure per step kind in `names` (default: step_names(device)), each with its own model (same initial
    weights) and optimizer; each returns whether its optimizer stepped."""
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
        return True

    tf32 = lesson.make_mlp(sizes, seed=0, device=device)
    tf32_opt = torch.optim.Adam(tf32.parameters(), lr=1e-3)

    def tf32_step():
        with lesson.tf32_allowed():  # the backward's products and the optimizer's too; fp32 again afterwards
            ns["accumulate_gradients"](tf32, F.cross_entropy, x, y, m)
            torch.nn.utils.clip_grad_norm_(tf32.parameters(), clip)
            tf32_opt.step()
        return True

    half = lesson.make_mlp(sizes, seed=0, device=device, dtype=torch.float16)
    masters = ns["make_master_params"](half)
    ref_opt = torch.optim.Adam(masters, lr=1e-3)
    ref_scaler = ns["DynamicLossScaler"]()

    def reference_step():
        return ns["mixed_precision_train_step"](half, masters, ref_opt, ref_scaler, F.cross_entropy, x, y, m, clip)[1]

    amp = lesson.make_mlp(sizes, seed=0, device=device)
    amp_opt = torch.optim.Adam(amp.parameters(), lr=1e-3)
    amp_scaler = torch.amp.GradScaler(device.type)

    def amp_step():
        return amp_train_step(amp, amp_opt, amp_scaler, F.cross_entropy, x, y, m, clip)[1]

    bf16 = lesson.make_mlp(sizes, seed=0, device=device)
    bf16_opt = torch.optim.Adam(bf16.parameters(), lr=1e-3)
    no_scaler = torch.amp.GradScaler(device.type, enabled=False)  # bf16 has fp32's range: nothing to scale

    def bf16_step():
        return amp_train_step(bf16, bf16_opt, no_scaler, F.cross_entropy, x, y, m, clip, dtype=torch.bfloat16)[1]

    steps = dict(zip(STEPS, (fp32_step, tf32_step, reference_step, amp_step, bf16_step)))
    return {name: steps[name] for name in (names or step_names(device))}


def run(config: Config, device: torch.device) -> dict:
    steps = make_steps(reference(), config, device)
    for _ in range(config.warmup):
        for step in steps.values():
            step()
    times = {name: [] for name in steps}
    skipped = dict.fromkeys(steps, 0)

    def counted(name):
        def once():
            if not steps[name]():
                skipped[name] += 1
        return once

    for rep in range(config.repetitions):
        order = list(steps)[rep % len(steps):] + list(steps)[:rep % len(steps)]
        for name in order:
            times[name].append(timed(counted(name), device))
    paired = [r / a for r, a in zip(times["reference mixed"], times["torch.amp mixed"])]
    rows = []
    for name in steps:
        q1, q3 = quartiles(times[name])
        rows.append({"step": name, "median_s": median(times[name]), "q1_s": q1, "q3_s": q3,
                     "over_fp32": median(times[name]) / median(times["fp32"]),
                     "over_amp": median(times[name]) / median(times["torch.amp mixed"]),
                     "skipped": skipped[name], "steps": config.repetitions, "times_s": times[name]})
    params = sum(a * b + b for a, b in zip(config.sizes[:-1], config.sizes[1:]))
    summary = {"params": params,
               "reference_over_amp": median(times["reference mixed"]) / median(times["torch.amp mixed"]),
               "reference_over_amp_paired_median": median(paired),
               "reference_over_fp32": median(times["reference mixed"]) / median(times["fp32"]),
               "amp_over_fp32": median(times["torch.amp mixed"]) / median(times["fp32"]),
               "bf16": lesson.bf16_on_cuda() if device.type == "cuda" else "cpu",
               "tf32": "timed" if "fp32 + TF32" in times else TF32_ON_CPU}
    bf16 = median(times["torch.amp bf16"]) if "torch.amp bf16" in times else None  # no row where there is no bf16
    if bf16 is not None:
        summary["bf16_over_fp32"] = bf16 / median(times["fp32"])
    if "fp32 + TF32" in times:  # since Ampere the fair baseline: fp32 matmuls on tensor cores
        tf32 = median(times["fp32 + TF32"])
        summary["amp_over_tf32"] = median(times["torch.amp mixed"]) / tf32
        if bf16 is not None:
            summary["bf16_over_tf32"] = bf16 / tf32
    return {"rows": rows, "summary": summary}


def table(result: dict) -> str:
    columns = [("step", "step", ""), ("median ms", lambda r: 1e3 * r["median_s"], ".1f"),
               ("q1 ms", lambda r: 1e3 * r["q1_s"], ".1f"), ("q3 ms", lambda r: 1e3 * r["q3_s"], ".1f"),
               ("/ fp32", "over_fp32", ".2f"), ("/ torch.amp", "over_amp", ".2f"),
               ("skipped", lambda r: f"{r['skipped']} of {r['steps']}", "")]
    s = result["summary"]
    bf16 = {"cpu": "bf16: on a CPU, through its own kernels", "native": "bf16 native on this GPU",
            "emulated": "bf16 only emulated on this GPU (no bf16 tensor cores): its time is not bf16 speed",
            "none": "bf16 unsupported on this GPU"}.get(s["bf16"], f"bf16 {s['bf16']}")
    return (format_table(result["rows"], columns)
            + f"\nreference / torch.amp: {s['reference_over_amp']:.2f} (median of paired ratios"
            f" {s['reference_over_amp_paired_median']:.2f}); model of {count(s['params'])} parameters"
            + ("" if s["tf32"] == "timed" else f"\nfp32 + TF32: {s['tf32']}") + f"\n{bf16}")
