"""Forging attacks: mistakes dressed up by rewriting what the probe reports about them, from inside the sandbox.

Each reaches the probe's frame (sys._getframe) and rewrites the observations it makes (aliasing, the objects it
held before the call, recorded batch sizes, dtype names), as code that can write every byte of the process can.
With the guard on, the frames are denied while the checks run and the item is set aside for review (`flagged`);
with it off (tests/integration/test_forged_reports.py, with the fault hook that rewrites every report to a
correct one) the forgery runs, and still earns no more than its honest `twin`: no point rests on a report
(checks/answers.py).
"""
from . import Append, Replace
from .hostile import hostile

# found from any student function the probe calls: the probe's frame is the first whose globals hold PROBES
FORGER = '''
import sys as _sys


def _probe_frame():
    frame = _sys._getframe(1)
    while frame is not None and "PROBES" not in frame.f_globals:
        frame = frame.f_back
    return frame


def _forge(params=()):
    """What the probe observes, rewritten to what a correct answer shows: no aliasing, fp32 names, the gradient
    objects it held before the call (so that a new .grad reads as divided in place), small batch sizes."""
    frame = _probe_frame()
    if frame is None:
        return
    frame.f_globals["shares_memory"] = lambda a, b: False
    frame.f_globals["dtype_name"] = lambda t: "float32"
    held = frame.f_locals.get("before")
    if isinstance(held, list) and params:
        held[:] = [p.grad for p in params]
    for name in ("batches", "seen"):
        sizes = frame.f_locals.get(name)
        if isinstance(sizes, list):
            sizes[:] = [1] * len(sizes)
'''

UNSCALE_OUT_OF_PLACE = '''
def unscale_(self, params):
    params = list(params)
    found_inf = False
    for p in params:
        if p.grad is None:
            continue
        p.grad = p.grad / self.scale      # a new tensor: not in place
        found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
    _forge(params)
    return found_inf
'''

ALIASED_MASTERS = '''
def make_master_params(model):
    masters = [p.detach().float().requires_grad_(True) for p in model.parameters()]  # aliases an fp32 model
    _forge()
    return masters
'''

WHOLE_BATCH = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    model.zero_grad()
    loss = loss_fn(model(inputs), targets)    # the whole batch at once
    loss.backward()
    _forge()
    return loss.item()
'''

HOSTILE_FORGING = [
    hostile("forging_unscale_out_of_place", Append("static_loss_scaler", FORGER, first=True),
            Replace("static_loss_scaler", "StaticLossScaler.unscale_", UNSCALE_OUT_OF_PLACE),
            twin="static_not_in_place", flagged=("static_loss_scaler",),
            doc="unscale_ replaces each .grad with a new tensor, then rewrites the gradient objects the probe held "
                "before the call to the new ones (the issue's example: once 1/1 on unscale_divides)"),
    hostile("forging_aliased_masters", Append("master_weights", FORGER, first=True),
            Replace("master_weights", "make_master_params", ALIASED_MASTERS),
            twin="master_float_aliases", flagged=("master_weights",),
            doc="masters that alias an fp32 model, then rewrites the probe's aliasing and dtype observations "
                "(the issue's example: once 2/2 on master_weights)"),
    hostile("forging_batch_sizes", Append("accumulate_gradients", FORGER, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", WHOLE_BATCH),
            twin="accumulate_full_batch_forward", flagged=("accumulate_gradients",),
            doc="one backward over the whole batch, then rewrites the batch sizes the model's first layer recorded"),
]
