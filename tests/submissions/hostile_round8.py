"""The eighth round of attacks (issue 46's review of the probes' context): two ways from the student's code to
what the probes rely on while the checks run, with the audit hook on.

* Library functions that hand a frame back under a name of their own: logging.currentframe (a lambda around
  sys._getframe(1)), bdb.Bdb.get_stack and inspect.trace. From a frame, the payload walks up to the Child (or the
  probe's Context, whose traceback reader is the Child's) and silences its flags. The guard now lets student code
  call a library function that reads frames only when that function keeps what it reads (guard.KEEPS_FRAMES):
  each way is denied and flagged, and the submission is set aside.
* torch's saved-tensor hooks, global while the code runs: the hooks the accumulation probes install are the copy
  of the probes the code is handed (harness.Context.graphs_alive), so rebinding a name in their globals changes
  nothing the probe reads afterwards. The payload corrects its own wrong gradients that way: it earns no more than
  the same mistake alone.
"""
from . import Append, Replace
from .hostile import hostile
from .hostile_round7 import ALIASING_MASTERS

FRAMES_THROUGH_LIBRARY = '''
def make_master_params(model):
    import bdb, inspect, logging

    def frames():
        yield logging.currentframe()
        try:
            raise KeyError("a traceback to read")
        except KeyError as exc:
            yield bdb.Bdb().get_stack(None, exc.__traceback__)[0][-1][0]
            yield inspect.trace()[0].frame
    for how in range(3):
        try:
            frame = list(frames())[how]
        except Exception:  # denied: the next way
            continue
        while frame is not None:
            owner = frame.f_locals.get("self")
            child = getattr(getattr(owner, "entries", None), "__self__", owner)
            if type(child).__name__ == "Child":
                child.take_flags = lambda: []
                child.changed = lambda: []
                break
            frame = frame.f_back
    return [p.detach().float().requires_grad_(True) for p in model.parameters()]
'''

# appended after its twin's accumulate_gradients (accumulate_sums_losses), which it calls unchanged
HOOKS_REBIND = '''
import math

_unweighted_accumulate = accumulate_gradients


def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    total = _unweighted_accumulate(model, loss_fn, inputs, targets, micro_batch_size)
    try:  # the probe reads the gradients after this returns: have it read them divided by the micro-batches
        hooks = torch._C._autograd._top_saved_tensors_default_hooks(False)
        count = math.ceil(inputs.shape[0] / micro_batch_size)
        hooks[0].__globals__["grads_of"] = lambda params: [
            None if p.grad is None else p.grad.detach().clone() / count for p in params]
    except Exception:
        pass
    return total
'''


def twin_edits(name: str) -> tuple:
    """The edits of buggy variant `name`, which a hostile variant repeats before its own."""
    from .buggy import BUGGY
    return next(v.edits for v in BUGGY if v.name == name)


HOSTILE_ROUND8 = [
    hostile("round8_frames_through_library_names",
            Replace("master_weights", "make_master_params", ALIASING_MASTERS + FRAMES_THROUGH_LIBRARY),
            twin="master_float_aliases", flagged=("master_weights",),
            doc="aliasing masters, whose make_master_params reads a frame through logging.currentframe, "
                "bdb.Bdb.get_stack or inspect.trace, walks to the Child and silences its flags"),
    hostile("round8_probes_rebound_through_saved_tensor_hooks",
            *twin_edits("accumulate_sums_losses"), Append("accumulate_gradients", HOOKS_REBIND),
            twin="accumulate_sums_losses",
            doc="its twin's unweighted accumulation, wrapped: after it, rebinds grads_of in the globals of torch's "
                "saved-tensor hooks so that the probe reads its gradients divided by the number of micro-batches"),
]
