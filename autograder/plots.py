"""The lesson's figures: fp16's range over a gradient histogram, training curves, the loss
scale over time, memory bars, and the loss-scale slider."""
import math

import matplotlib.pyplot as plt
import torch

from .exercises import exercise_name

FP16_MAX = 65504.0                     # largest finite fp16 value
FP16_MIN_NORMAL = 2.0 ** -14           # below this, fp16 loses mantissa bits (subnormals)
FP16_MIN_SUBNORMAL = 2.0 ** -24        # at or below half of this, 2^-25, a value becomes 0


def _log2_magnitudes(values: torch.Tensor) -> torch.Tensor:
    v = values.detach().double().flatten().cpu()
    v = v[torch.isfinite(v) & (v != 0)]
    return v.abs().log2()


def _mark_fp16_range(ax):
    ax.axvspan(ax.get_xlim()[0], math.log2(FP16_MIN_SUBNORMAL) - 1, color="tab:red", alpha=0.12,
               label="becomes 0 in fp16")
    ax.axvspan(math.log2(FP16_MIN_SUBNORMAL) - 1, math.log2(FP16_MIN_NORMAL), color="tab:orange",
               alpha=0.12, label="fp16 subnormal (fewer bits)")
    ax.axvline(math.log2(FP16_MIN_SUBNORMAL), color="tab:red", lw=1)
    ax.axvline(math.log2(FP16_MIN_NORMAL), color="tab:orange", lw=1)
    ax.axvline(math.log2(FP16_MAX), color="tab:purple", lw=1, label="fp16 max (65504)")


def plot_fp16_histogram(values: torch.Tensor, title: str = "", ax=None):
    """Histogram of log2|value| with fp16's zero, subnormal and overflow boundaries marked."""
    logs = _log2_magnitudes(values)
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    lo, hi = (float(logs.min()) - 1, float(logs.max()) + 1) if len(logs) else (-40.0, 20.0)
    ax.set_xlim(min(-40.0, lo), max(20.0, hi))  # wide enough for values scaled past fp16's max
    _mark_fp16_range(ax)
    # one filled outline rather than 120 bars: it looks the same and draws in a fraction of the time
    ax.hist(logs.numpy(), bins=120, range=ax.get_xlim(), color="tab:blue", histtype="stepfilled")
    ax.set_xlabel("log2 |value|")
    ax.set_ylabel("count")
    ax.set_title(title)
    ax.legend(loc="upper right", fontsize=8)
    return ax


def plot_training_curves(curves: dict, title: str = "training loss", ax=None):
    """One line per run; a run whose loss turns NaN or inf gets an x where it diverged."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3.5))
    styles = ["-", "--", ":", "-."]
    for k, (name, losses) in enumerate(curves.items()):
        losses = [float(x) for x in losses]
        bad = next((i for i, x in enumerate(losses) if not math.isfinite(x)), None)
        good = losses if bad is None else losses[:bad]
        line, = ax.plot(range(len(good)), good, styles[k % len(styles)], label=name)
        if bad is not None:
            y = good[-1] if good else 2.3
            ax.plot([bad], [y], "x", ms=12, mew=3, color=line.get_color())
            ax.annotate(f"{name}: loss is NaN/inf from step {bad}", (bad, y),
                        textcoords="offset points", xytext=(12, -18), color=line.get_color())
    ax.set_yscale("log")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("loss")
    ax.set_title(title)
    ax.legend()
    return ax


def plot_loss_scale(scales, stepped, ax=None):
    """log2 of the loss scale after each step, with the skipped (overflow) steps marked."""
    if ax is None:
        _, ax = plt.subplots(figsize=(8, 3))
    logs = [math.log2(s) for s in scales]
    ax.step(range(len(logs)), logs, where="post", label="log2(loss scale)")
    skipped = [i for i, ok in enumerate(stepped) if not ok]
    ax.plot(skipped, [logs[i] for i in skipped], "rv", label=f"skipped step (overflow): {len(skipped)}")
    ax.set_xlabel("optimizer step")
    ax.set_ylabel("log2 scale")
    ax.legend()
    return ax


def plot_memory(panels: dict, title: str = "memory, measured"):
    """Stacked bars, one panel per comparison: {panel: {bar: {part: bytes}}}."""
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.4), squeeze=False)
    for ax, (panel, bars) in zip(axes[0], panels.items()):
        parts = list(dict.fromkeys(part for bar in bars.values() for part in bar))
        bottoms = [0.0] * len(bars)
        for part in parts:
            heights = [bar.get(part, 0) / 2**20 for bar in bars.values()]
            ax.bar(list(bars), heights, bottom=bottoms, label=part)
            bottoms = [b + h for b, h in zip(bottoms, heights)]
        for x, total in enumerate(bottoms):
            ax.annotate(f"{total:.1f} MiB", (x, total), ha="center", va="bottom")
        ax.set_ylim(top=max(bottoms) * 1.12)
        ax.set_ylabel("MiB")
        ax.set_title(panel)
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3)
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def overflow_fraction(values: torch.Tensor, dtype=torch.float16) -> float:
    """Fraction of the finite values that become inf when cast to `dtype`."""
    finite = torch.isfinite(values)
    n = int(finite.sum())
    return int((finite & torch.isinf(values.to(dtype))).sum()) / n if n else 0.0


def scale_sweep(grads: torch.Tensor, underflow_fraction):
    """A slider over log2(loss scale): the scaled gradients against fp16's range.

    `underflow_fraction` is your function from its exercise; until it is written the
    slider still shows the histogram and the overflow fraction.
    """
    import ipywidgets as widgets
    from IPython.display import display

    grads = grads.detach().float().cpu()
    slider = widgets.IntSlider(value=0, min=0, max=40, step=1, description="log2 scale",
                               continuous_update=False)
    out = widgets.Output()

    def draw(log2_scale):
        scaled = grads.double() * 2.0 ** log2_scale
        try:
            under = f"{underflow_fraction(scaled):.2%}"
        except NotImplementedError:
            under = f"(write underflow_fraction in {exercise_name('underflow_fraction')} to see it)"
        over = overflow_fraction(scaled)
        with out:
            out.clear_output(wait=True)
            fig, ax = plt.subplots(figsize=(8, 3.5))
            plot_fp16_histogram(scaled, f"scale 2^{log2_scale}: underflow {under}, overflow {over:.2%}", ax)
            plt.show()
            plt.close(fig)

    slider.observe(lambda change: draw(change["new"]), names="value")
    box = widgets.VBox([slider, out])
    box.add_class("lesson20-scale-sweep")
    display(box)
    draw(slider.value)
    return slider
