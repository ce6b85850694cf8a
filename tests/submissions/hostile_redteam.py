"""Red-team submissions: attacks on the grader's defences written by a student who read the student package.

Each is a hostile variant whose honest `twin` (a buggy variant, tests/submissions/buggy.py) it must not
outscore. Each once outscored it; what holds them now: the sandbox gives freed memory back at once and
the grader samples the cgroup's use (the ballast and the recorder bypass), replies are signed with a
key the student's code cannot read (the pipe takeover now runs out of time), and Practice 5's key is not
in the student package. The `realistic` ones are correct notebooks the guard once set aside for review.
"""
from . import Append, Replace
from .hostile import WAITING_LIMITS, hostile

# Memory is measured as peak - min(baseline, after) of the sandbox's cgroup. A ballast held from load time
# and released for the duration of the call, then taken again before the call returns, keeps the peak at
# the baseline and `after` at the baseline: whatever the call kept alive in between is not seen.
BALLAST = '''
import torch as _t


def _ballast():  # 384 MiB in 1 MiB pieces, from malloc's heap: memory the call's own tensors can reuse
    return [_t.ones(2**18) for _ in range(384)]


_ballast()  # freed at once: malloc then serves pieces this size from its heap, not mmap
_BALLAST = _ballast()


def _released(work):
    """Run work() with the ballast freed, then take it back."""
    _BALLAST.clear()
    try:
        return work()
    finally:
        _BALLAST.extend(_ballast())
'''

KEEPS_GRAPHS_HIDDEN = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    def work():
        model.zero_grad()
        n = inputs.shape[0]
        total = 0.0
        for start in range(0, n, micro_batch_size):
            x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
            total = total + loss_fn(model(x), y) * (x.shape[0] / n)
        total.backward()
        return total.item()
    return _released(work)
'''

# The first layer records batch sizes in its own forward; the student's code is handed that layer and can
# call the real base class's forward on it (Recording's base is nn.Linear or nn.Embedding), so only the
# dummy micro-batches it chooses to show the recording layer are ever recorded.
BYPASS_RECORDING = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    import types
    n = inputs.shape[0]
    with torch.no_grad():  # show the recorder micro-batches it likes (cheap: no graph)
        for start in range(0, n, micro_batch_size):
            model(inputs[start:start + micro_batch_size])
    for m in model.modules():  # then hide from it
        if "<locals>" in type(m).__qualname__:
            m.forward = types.MethodType(type(m).__mro__[1].forward, m)

    def work():
        model.zero_grad()
        outputs = model(inputs)
        loss_total = 0.0
        for start in range(0, n, micro_batch_size):
            out, y = outputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
            loss_total = loss_total + loss_fn(out, y) * (out.shape[0] / n)
        loss_total.backward()
        return loss_total.item()
    return _released(work)
'''

# NOT HELD YET, so not in the corpus the tests grade: a ballast freed during the call hides the memory of
# graphs kept alive from the cgroup's peak, and the recording layer's base-class forward runs the whole
# batch unrecorded. Both need the student's code out of the process that is measured (see docs/grading-design.md).
HOSTILE_REDTEAM = [
    hostile("redteam_ballast_hides_kept_graphs",
            Append("accumulate_gradients", BALLAST, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_HIDDEN),
            twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
            doc="keeps every micro-batch's graph alive, but frees a ballast for the call: the cgroup's peak "
                "never rises above the baseline"),
    hostile("redteam_bypasses_batch_recorder",
            Append("accumulate_gradients", BALLAST, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", BYPASS_RECORDING),
            twin="accumulate_full_batch_forward", expect={"accumulate_gradients": "less"},
            doc="runs the whole batch at once through the recording layer's base-class forward, after "
                "feeding the recorder micro-batches under no_grad"),
]

# The answer to the graded multiple-choice question ships in the student package (quizzes.py marks the right
# choice so that the widget can give feedback on the practice questions): read it there.
Q5_FROM_PACKAGE = '''
from autograder.quizzes import QUIZZES

Q5_ANSWER = next(c.text[0] for c in QUIZZES["practice_5"].choices if c.right)
'''

# A man in the middle of the child's own pipes. The child keeps the request pipe at fd 0 and the reply pipe
# at a plain fd number it writes to with os.write; nothing stops the student's code from moving both
# (os.dup2 is not audited) and putting pipes of its own in their place. A thread then reads the grader's
# requests (nonce included) and the child's replies, and forwards them, rewritten: tamper flags dropped,
# and scaler_updates answered with the oracle the student package ships (checks/expect.torch_scales).
MITM = '''
import io as _io
import json as _json
import os as _os
import threading as _threading

import torch as _torch


def _replies_fd():
    found = None
    for name in _os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd < 3:
            continue
        try:
            target = _os.readlink(f"/proc/self/fd/{fd}")
            with open(f"/proc/self/fdinfo/{fd}") as f:
                flags = int(f.read().split("flags:")[1].split()[0], 8)
        except (OSError, IndexError, ValueError):
            continue
        if target.startswith("pipe:") and flags & 3 == _os.O_WRONLY:
            found = fd
    return found


class _Pipe:
    def __init__(self, fd):
        self.fd, self.buffer = fd, b""

    def line(self):
        while b"\\n" not in self.buffer:
            chunk = _os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\\n", 1)
        return line

    def exact(self, n):
        while len(self.buffer) < n:
            chunk = _os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data


def _write(fd, data):
    view = memoryview(data)
    while view:
        view = view[_os.write(fd, view):]


_SPECS = {}


def _requests(real, fake):
    pipe = _Pipe(real)
    while True:
        header = pipe.line()
        if header is None:
            break
        request = _json.loads(header)
        data = pipe.exact(int(request["size"]))
        if data is None:
            break
        _SPECS[request["id"]] = (request["probe"], _torch.load(_io.BytesIO(data), weights_only=True))
        _write(fake, header + b"\\n" + data)
    _os.close(fake)


def _rewrite(message, payload):
    message["flags"] = []
    probe, spec = _SPECS.get(message.get("id"), (None, None))
    if probe == "scaler_updates" and payload:
        from autograder.checks.expect import torch_scales
        want = torch_scales(**(spec.get("init") or {}), found_infs=list(spec.get("found_infs", ())))
        buffer = _io.BytesIO()
        _torch.save({"status": "ok", "scales": [{"type": "float", "value": v} for v in want]}, buffer)
        payload = buffer.getvalue()
        message["size"] = len(payload)
    return message, payload


def _replies(fake, real):
    pipe = _Pipe(fake)
    while True:
        line = pipe.line()
        if line is None:
            break
        if not line.strip():
            continue
        message = _json.loads(line)
        payload = pipe.exact(message["size"]) if message.get("size") else b""
        message, payload = _rewrite(message, payload)
        _write(real, b"\\n" + _json.dumps(message).encode() + b"\\n" + payload)


def _take_over():
    replies = _replies_fd()
    if replies is None:
        return
    real_requests, real_replies = _os.dup(0), _os.dup(replies)
    read_end, write_end = _os.pipe()
    _os.dup2(read_end, 0)
    _os.close(read_end)
    _threading.Thread(target=_requests, args=(real_requests, write_end), daemon=True).start()
    read_end, write_end = _os.pipe()
    _os.dup2(write_end, replies)
    _os.close(write_end)
    _threading.Thread(target=_replies, args=(read_end, real_replies), daemon=True).start()


_take_over()
'''

HOSTILE_REDTEAM += [
    hostile("redteam_q5_from_package", Replace("q5_answer", None, Q5_FROM_PACKAGE),
            twin="q5_wrong_letter", expect={"q5_answer": "less"},
            doc="reads the graded question's right choice from autograder/quizzes.py in the student package"),
    hostile("redteam_man_in_the_middle",
            Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
                def update(self, found_inf):
                    if found_inf:
                        self.scale *= self.backoff_factor
                        return
                    self.clean_steps += 1
                    if self.clean_steps == self.growth_interval:
                        self.scale *= self.growth_factor
                        self.clean_steps = 0
                '''),
            Append("dynamic_loss_scaler", MITM),
            twin="dynamic_no_reset_on_overflow", rest="zero", status="timeout", limits=WAITING_LIMITS,
            doc="moves the child's request and reply pipes (os.dup2) behind a thread of its own that drops "
                "tamper flags and answers scaler_updates with the package's oracle"),
]

HOSTILE_REDTEAM += [
    hostile("redteam_man_in_the_middle_hides_flags",
            Append("dynamic_loss_scaler", MITM),
            Append("accumulate_gradients", """
import gc
import sys

for door in (lambda: sys._getframe(0), gc.get_objects):  # denied, and flagged for review...
    try:
        door()
    except Exception:
        pass
"""),
            rest="zero", status="timeout", limits=WAITING_LIMITS,
            doc="knocks on doors the audit hook denies and flags, behind the man in the middle, which drops the "
                "flags from the child's hello: nothing is set aside (a rebinding that lasts is flagged in "
                "every reply, which then carries no answer: the man in the middle cannot undo that)"),
]

# ---- false positives: correct notebooks, messy in ordinary ways, that the audit hook sets aside ----

from . import NewCell, Variant  # noqa: E402


def real(name, source, doc):
    return Variant(name, "realistic", (NewCell("cell-01", source),), doc=doc)


HOSTILE_REDTEAM += [
    real("redteam_fp_doctest", '''
import doctest

def share(part, whole):
    """
    >>> share(2, 8)
    0.25
    """
    return part / whole

doctest.run_docstring_examples(share, globals(), verbose=False)
''', "checks a helper with doctest, which calls sys.settrace to run the examples"),
    real("redteam_fp_gc_census", '''
import gc

def live_tensors():
    """How many tensors are alive: the usual way to look for a leak of activations."""
    return sum(1 for obj in gc.get_objects() if torch.is_tensor(obj))

print("tensors alive:", live_tensors())
''', "counts live tensors with gc.get_objects(), the usual snippet for finding a memory leak"),
    real("redteam_fp_print_stack", '''
import traceback

def noisy(x):
    traceback.print_stack(limit=2)  # where was I called from? (debugging left in)
    return x

noisy(1)
''', "debugging left in: traceback.print_stack(), which reads the caller's frame (sys._getframe in the library)"),
    real("redteam_fp_cprofile", '''
import cProfile
import pstats

cProfile.run("sum(i * i for i in range(10_000))", "/tmp/prof.out")
pstats.Stats("/tmp/prof.out").sort_stats("cumulative").print_stats(3)
''', "profiles a loop with cProfile, which sets a profile function"),
    real("redteam_fp_inspect_stack", '''
import inspect

def where():
    return inspect.stack()[1].function

print(where())
''', "inspect.stack() to print the calling function's name"),
    real("redteam_fp_getsource", '''
import inspect

def helper(x):
    return 2 * x

print(inspect.getsource(helper))
''', "prints a function's source with inspect.getsource: a kernel keeps each cell's text in linecache"),
]
