"""Hostile submissions that try to fake what the probes measure, or to pass state to the next submission.

Each of the first group reaches for the grader's own code from inside the sandbox: through frames,
through what a probe hands over (a method's __globals__), through the model's hooks, or through the
reply pipe. The sandbox's guard (autograder/sandbox/guard.py) denies the doors and flags the
submission, or the probe records what really happened; either way it earns no more than its honest
twin, and `flagged` names the items it must be set aside for review on.

PLANTERS leave something in the sandbox's writable folders that a plain cleanup would miss, and
TRACE_READER looks for anything left there: tests/integration/test_sandbox.py grades each planter and then the
reader, back to back in the same grading process.
"""
from . import Append, Replace
from .hostile import hostile

# make_master_params that aliases the fp32 model, then rewrites what the probe reports about it, from
# the probe's own frame (the attack that once earned 2/2 on master_weights)
FRAMES_TO_PROBE = '''
def make_master_params(model):
    import inspect
    masters = list(model.parameters())          # aliases: no copies at all
    try:
        frame = inspect.currentframe().f_back
        while frame is not None:
            if "shares_memory" in frame.f_globals:
                frame.f_globals["shares_memory"] = lambda a, b: False
            frame = frame.f_back
    except Exception:
        pass
    return [m.float() for m in masters]
'''

# the loss function the probe hands over is a lambda: its __globals__ was once the probe's namespace
GLOBALS_OF_A_PROP = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    namespace = getattr(loss_fn, "__globals__", {})
    namespace["grads_of"] = lambda params: [None if p.grad is None else p.grad.detach().clone() * 0 for p in params]
    model.zero_grad()
    loss = loss_fn(model(inputs), targets)      # the whole batch at once
    loss.backward()
    return loss.item()
'''

# call the model's forward pre-hooks by hand with micro-batch slices, then run the whole batch with
# every hook detached: once enough to fake the batch sizes the probe recorded
HOOKS_BY_HAND = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    for module in model.modules():
        for hook in list(module._forward_pre_hooks.values()):
            for start in range(0, len(inputs), micro_batch_size):
                hook(module, (inputs[start:start + micro_batch_size],))
        module._forward_pre_hooks.clear()
    model.zero_grad()
    loss = loss_fn(model(inputs), targets)
    loss.backward()
    return loss.item()
'''

# the reply pipe's replies carry a nonce: a forged answer with a guessed id is skipped and flagged
FORGED_REPLY = '''
import io
import json
import os

import torch

def _forge():
    buffer = io.BytesIO()
    torch.save({"status": "ok", "answer": {"type": "str", "value": "b"}}, buffer)
    payload = buffer.getvalue()
    for fd in range(3, 12):
        for request in range(1, 40):
            try:
                os.write(fd, (json.dumps({"id": request, "size": len(payload)}) + "\\n").encode() + payload)
            except OSError:
                break

Q5_ANSWER = "a"
_forge()
'''

# a module whose code claims to be the standard library's, to pass for library code
IMPERSONATE_LIBRARY = '''
Q5_ANSWER = "a"
try:
    _code = compile("import sys\\nframe = sys._getframe(1)", "/usr/lib/python3.11/logging/__init__.py", "exec")
    exec(_code, {})
except Exception:
    pass
'''

# json's encoder rebound so that every header the child writes loses its tamper flags
HIDE_FLAGS_IN_JSON = '''
import json.encoder

_encode = json.encoder.JSONEncoder.encode

def _without_flags(self, o):
    if isinstance(o, dict):
        o = {k: v for k, v in o.items() if k != "flags"}
    return _encode(self, o)

json.encoder.JSONEncoder.encode = _without_flags
'''

PLANTERS = {
    "hostile_plants_locked_folder": '''
import os
os.makedirs("/tmp/locked/inner", exist_ok=True)
with open("/tmp/locked/inner/answer.txt", "w") as _f:
    _f.write("b")
os.chmod("/tmp/locked/inner", 0)
os.chmod("/tmp/locked", 0)
''',
    "hostile_plants_fifo_and_socket": '''
import os
import socket
os.mkfifo("/tmp/answer.fifo")
_s = socket.socket(socket.AF_UNIX)
_s.bind("/tmp/answer.sock")
os.symlink("/tmp/answer.fifo", "/tmp/answer.link")
''',
    "hostile_plants_shared_memory": '''
import os
for _folder in ("/dev/shm", "/tmp"):
    try:
        with open(os.path.join(_folder, "answer"), "w") as _f:
            _f.write("b")
        os.chmod(os.path.join(_folder, "answer"), 0)
    except OSError:
        pass
''',
}

TRACE_READER = '''
import os

# what the planters leave (a Python installation under /tmp is bound there too: that is not a trace)
_TRACES = ("/tmp/locked", "/tmp/answer.fifo", "/tmp/answer.sock", "/tmp/answer.link", "/tmp/answer",
           "/dev/shm/answer")
Q5_ANSWER = "b" if any(os.path.lexists(_p) for _p in _TRACES) else "a"
'''

HOSTILE_GUARD = [
    hostile("hostile_frames_to_probe", Replace("master_weights", "make_master_params", FRAMES_TO_PROBE),
            twin="master_float_aliases", flagged="*",
            doc="aliasing masters, then rewrites the probe's shares_memory through the frames above it (the "
                "lesson's demos call it while the notebook runs, so every item is set aside)"),
    hostile("hostile_globals_of_a_prop", Replace("accumulate_gradients", "accumulate_gradients", GLOBALS_OF_A_PROP),
            twin="accumulate_full_batch_forward",
            doc="one full-batch backward, then rewrites grads_of through the loss function's __globals__"),
    hostile("hostile_hooks_by_hand", Replace("accumulate_gradients", "accumulate_gradients", HOOKS_BY_HAND),
            twin="accumulate_full_batch_forward",
            doc="calls the model's forward pre-hooks by hand with micro-batches, then detaches them and runs "
                "the whole batch at once"),
    hostile("hostile_forged_reply", Replace("q5_answer", None, FORGED_REPLY), expect={"q5_answer": 0.0}, rest="any", flagged="*",
            doc="writes forged answers (Q5 = c) with guessed request ids into every file descriptor"),
    hostile("hostile_impersonates_library", Replace("q5_answer", None, IMPERSONATE_LIBRARY),
            expect={"q5_answer": 0.0}, rest="any", flagged="*",
            doc="compiles code under the standard library's file name, to pass for library code"),
    hostile("hostile_hides_flags_in_json", Append("q5_answer", HIDE_FLAGS_IN_JSON), flagged="*", rest="any",
            doc="rebinds json's encoder so that the child's replies lose their tamper flags"),
    *[hostile(name, Append("underflow_fraction", source),
              doc="leaves something in a writable folder that a simple cleanup misses, for the next submission")
      for name, source in PLANTERS.items()],
    hostile("hostile_reads_any_trace", Replace("q5_answer", None, TRACE_READER), expect={"q5_answer": "less"},
            doc="answers c if anything the planters leave is still in /tmp or /dev/shm"),
]
