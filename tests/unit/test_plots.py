"""autograder.plots: the overflow fraction the scale sweep shows, against fp16's largest finite value."""
import matplotlib
import torch

from autograder import plots

matplotlib.use("Agg")

FP16_MAX = torch.finfo(torch.float16).max  # 65504; 65520 and above round to inf


def test_overflow_fraction_counts_the_finite_values_that_become_inf():
    values = torch.tensor([1.0, FP16_MAX, 65519.0, 65520.0, -1e6, float("inf"), float("nan")])
    want = sum(torch.isinf(torch.tensor(v).half()).item() for v in (1.0, FP16_MAX, 65519.0, 65520.0, -1e6)) / 5
    assert plots.overflow_fraction(values) == want == 2 / 5
    assert plots.overflow_fraction(values, torch.bfloat16) == 0.0
    assert plots.overflow_fraction(torch.tensor([float("inf")])) == 0.0  # no finite value: nothing overflows


def test_a_histogram_draws_without_a_display():
    fig = plots.plot_fp16_histogram(torch.logspace(-30, 10, 50, base=2.0), "scaled gradients")
    assert fig is not None
