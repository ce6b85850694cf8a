"""The fifth round of attacks, by a red team told to assume it can read and write every byte of the sandbox
process: what it found, kept so that it stays held.

* a correct notebook that sets torch.set_num_threads(2): GNU OpenMP's thread pool does not survive a fork,
  so every item's fork hung at its first parallel operation (6 of 14). The child asks for one thread
  before every fork.
* every micro-batch's graph kept alive, hidden from the measured-memory check by a ballast kept matched to
  the process's RSS (freed as the graphs grow, taken back in backward()): 2 of 2 where its honest twin got
  1. A measured call now runs in a fork of its own, measured from before that fork exists, and the
  template runs no other thread or process: whatever memory the call could let go of was taken during the
  call itself, or is the template's, which the fork cannot give back.
"""
from . import Append, NewCell, Replace, Variant
from .hostile import hostile

TRACKED_BALLAST = """
import torch as _t

_BALLAST = []
_OWNER = [None]
_DEBUG = False
_PIECE = 2**18  # floats: 1 MiB, above glibc's mmap threshold, so freeing it gives it back to the system at once
_PIECE_BYTES = _PIECE * 4


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _settle(target):
    used = _rss()
    while used > target + _PIECE_BYTES and _BALLAST:
        _BALLAST.pop()
        used = _rss()
    while used < target - _PIECE_BYTES:
        _BALLAST.append(_t.ones(_PIECE))
        used = _rss()


def _hidden(model, work):
    import os
    if _OWNER[0] != os.getpid():  # the item's first call in its fork: a ballast of this process's own (what the
        _BALLAST.clear()          # notebook's demos made is shared with the template: freeing it frees nothing)
        _BALLAST.extend(_t.ones(_PIECE) for _ in range(160))
        _OWNER[0] = os.getpid()
    target = _rss()
    handles = []

    def after_forward(module, args, out):
        _settle(target)
        if isinstance(out, _t.Tensor) and out.requires_grad:
            out.register_hook(lambda grad: (_settle(target), grad)[1])

    for m in model.modules():
        handles.append(m.register_forward_hook(after_forward))
    try:
        return work()
    finally:
        for h in handles:
            h.remove()
        _settle(target)
        if _DEBUG:
            import os, sys
            sm = open("/proc/self/statm").read().split()
            print("rss", target >> 20, _rss() >> 20, "ballast", len(_BALLAST), "statm", sm, file=sys.stderr, flush=True)
"""

KEEPS_GRAPHS = """
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    def work():
        model.zero_grad()
        n = inputs.shape[0]
        total = 0.0
        for start in range(0, n, micro_batch_size):
            x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
            total = total + loss_fn(model(x), y) * (x.shape[0] / n)
            _settle_now = None
        total.backward()
        return total.item()
    return _hidden(model, work)
"""

SET_NUM_THREADS = '''
import os
import torch

torch.set_num_threads(2)  # use the machine's cores for the demos
_warm = torch.randn(512, 512)
for _ in range(3):
    (_warm @ _warm).sum()
'''

HOSTILE_ROUND5 = [
    hostile("round5_tracked_ballast_hides_kept_graphs",
            Append("accumulate_gradients", TRACKED_BALLAST, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS),
            twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
            doc="keeps every micro-batch's graph alive, and hides it from the cgroup with a ballast kept matched to "
                "the process's RSS, freed as the graphs grow and taken back in backward()"),
    Variant("round5_set_num_threads", "realistic", (NewCell("cell-01", SET_NUM_THREADS),),
            doc="a correct notebook that sets torch.set_num_threads(2) and runs a matmul while the notebook runs"),
]
