"""DynamicLossScaler's oracle: torch.amp.GradScaler's own update kernel.

Computes graded answers, so it stays on the instructor's side (see instructor/oracles.py).
"""
import torch

from ....backends import remembered


@remembered
def torch_scales(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                 found_infs=()):
    """The oracle for the dynamic scaler: torch.amp.GradScaler's own update kernel."""
    scale = torch.tensor([float(init_scale)], dtype=torch.float32)
    tracker = torch.zeros(1, dtype=torch.int32)
    scales = [float(scale)]
    for found in found_infs:
        torch._amp_update_scale_(scale, tracker, torch.tensor([1.0 if found else 0.0]),
                                 growth_factor, backoff_factor, growth_interval)
        scales.append(float(scale))
    return scales


# the oracles its checks may ask for by name (their `expected` fixture)
ORACLES = (torch_scales,)
