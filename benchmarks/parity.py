"""Accuracy parity on the lesson's digits: fp32, mixed precision (the reference step) and naive fp16.

Each seed trains the three ways on the same initial weights and the same batches; the figures
are the final loss on the whole training set and the accuracy on the held-out digits.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from autograder import lesson

from .common import format_table, reference

MODES = ("fp32", "mixed precision", "naive fp16")
TARGET = 0.02  # mixed precision's final loss within 2% of fp32's


@dataclass
class Config:
    seeds: tuple = (0, 1, 2)
    steps: int = 500              # as the lesson's demo
    batch_size: int = 64
    micro_batch_size: int = 64
    lr: float = 1e-3
    sizes: tuple = (64, 128, 128, 10)
    growth_interval: int = 100    # as the lesson's demo: short, so the scale adapts within the run


CPU = Config()
QUICK = Config(seeds=(0,), steps=20)
CUDA = Config()


def train(ns: dict, mode: str, config: Config, seed: int, data, device: torch.device) -> dict:
    """Train the digits MLP with Adam one of three ways; return final loss, accuracy and scaler figures."""
    x_train, y_train, x_test, y_test = data
    model = lesson.make_mlp(tuple(config.sizes), seed=seed, device=device)
    batches = torch.Generator().manual_seed(seed + 1)
    skipped = 0
    if mode == "mixed precision":
        model.half()
        masters = ns["make_master_params"](model)
        optimizer = torch.optim.Adam(masters, lr=config.lr)
        scaler = ns["DynamicLossScaler"](growth_interval=config.growth_interval)
    else:
        if mode == "naive fp16":
            model.half()  # weights, gradients and Adam's state all in fp16; no loss scaling
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    dtype = next(model.parameters()).dtype
    for _ in range(config.steps):
        idx = torch.randint(0, len(x_train), (config.batch_size,), generator=batches).to(device)
        x, y = x_train[idx], y_train[idx]
        if mode == "mixed precision":
            _, stepped = ns["mixed_precision_train_step"](model, masters, optimizer, scaler, F.cross_entropy,
                                                          x, y, config.micro_batch_size)
            skipped += not stepped
        else:
            loss = F.cross_entropy(model(x.to(dtype)).float(), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    with torch.no_grad():
        loss = F.cross_entropy(model(x_train.to(dtype)).float(), y_train).item()
        accuracy = (model(x_test.to(dtype)).argmax(dim=1) == y_test).float().mean().item()
    result = {"mode": mode, "seed": seed, "final_loss": loss, "accuracy": accuracy, "diverged": not math.isfinite(loss)}
    if mode == "mixed precision":
        result.update(skipped_steps=skipped, final_scale=scaler.scale)
    return result


def _mean(values):
    finite = [v for v in values if math.isfinite(v)]
    return sum(finite) / len(finite) if finite else float("nan")


def run(config: Config, device: torch.device) -> dict:
    ns = reference()
    data = lesson.load_digits(device)
    runs = [train(ns, mode, config, seed, data, device) for seed in config.seeds for mode in MODES]
    by = {(r["mode"], r["seed"]): r for r in runs}
    gaps = [by["mixed precision", s]["final_loss"] / by["fp32", s]["final_loss"] - 1 for s in config.seeds]
    rows = []
    for mode in MODES:
        mine = [r for r in runs if r["mode"] == mode]
        rows.append({"mode": mode,
                     "final_loss": [r["final_loss"] for r in mine], "accuracy": [r["accuracy"] for r in mine],
                     "mean_final_loss": _mean([r["final_loss"] for r in mine]),
                     "mean_accuracy": _mean([r["accuracy"] for r in mine]),
                     "diverged": sum(r["diverged"] for r in mine)})
    fp32 = rows[0]
    naive = rows[2]
    naive_worse = all(by["naive fp16", s]["diverged"]
                      or by["naive fp16", s]["final_loss"] > (1 + TARGET) * by["fp32", s]["final_loss"]
                      for s in config.seeds)
    summary = {
        "mixed_over_fp32_loss_minus_1": gaps,
        "worst_gap": max(gaps, key=abs),
        "mixed_within_target": all(abs(g) <= TARGET for g in gaps),
        "naive_clearly_worse": naive_worse,
        "naive_diverged_seeds": naive["diverged"],
        "accuracy_points_mixed_minus_fp32": 100 * (rows[1]["mean_accuracy"] - fp32["mean_accuracy"]),
        "skipped_steps": [by["mixed precision", s]["skipped_steps"] for s in config.seeds],
        "final_scales": [by["mixed precision", s]["final_scale"] for s in config.seeds],
        "target": TARGET,
    }
    return {"rows": rows, "runs": runs, "summary": summary}


def table(result: dict) -> str:
    def per_seed(key, spec):
        return lambda r: " ".join(format(v, spec) for v in r[key])

    columns = [("mode", "mode", ""), ("final loss per seed", per_seed("final_loss", ".4f"), ""),
               ("mean loss", "mean_final_loss", ".4f"), ("accuracy per seed", per_seed("accuracy", ".1%"), ""),
               ("mean acc", "mean_accuracy", ".1%"), ("diverged", "diverged", "d")]
    s = result["summary"]
    return (format_table(result["rows"], columns)
            + f"\nmixed / fp32 final loss - 1, per seed: {' '.join(f'{g:+.2%}' for g in s['mixed_over_fp32_loss_minus_1'])}"
            f" (target within {s['target']:.0%}: {'met' if s['mixed_within_target'] else 'NOT met'});"
            f" accuracy mixed - fp32: {s['accuracy_points_mixed_minus_fp32']:+.1f} points"
            f"\nnaive fp16 clearly worse or diverged on every seed: {'yes' if s['naive_clearly_worse'] else 'NO'}"
            f" ({s['naive_diverged_seeds']} of {len(s['skipped_steps'])} diverged);"
            f" mixed precision skipped {s['skipped_steps']} steps, final scales {s['final_scales']}")
