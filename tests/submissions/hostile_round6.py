"""The sixth round of attacks, by a second red team on the per-item forks: what it found, kept so that it stays
held. A shared mapping faulted in while the notebook ran (a fork wrote graphs into memory already paid for):
the template makes every shared mapping private and removes SysV segments, so a fork pays for what it writes.
A process whose first thread ended alone looked like a zombie and outlived every cleanup: a process runs
while any of its threads does. An honest notebook with a 64 MiB checkpoint and a log file lost 5.5 points:
the snapshot of /tmp keeps up to the sandbox's /tmp, and one it cannot keep no longer ends the child."""
from . import Append, NewCell, Replace, Variant
from .hostile import hostile

# A ballast that is never freed but REUSED: a MAP_SHARED anonymous mapping (Python's mmap.mmap(-1, n)), every
# page faulted in (and so charged to the cgroup) while the notebook runs. An item's fork inherits the mapping;
# writing to a shared page does not copy it, so nothing new is charged. Every micro-batch's graph is kept alive
# (one backward of the summed loss), with its saved tensors packed into the pool by saved_tensors_hooks.
SHARED_POOL = '''
import mmap as _mmap
import torch as _t

_POOL_BYTES = 192 * 2**20
_MM = _mmap.mmap(-1, _POOL_BYTES)          # MAP_SHARED | MAP_ANONYMOUS
_POOL = _t.frombuffer(_MM, dtype=_t.uint8)
_POOL.fill_(1)                              # every page resident now, charged while the notebook runs


def _pooled(work):
    offset = [0]

    def pack(t):
        nbytes = t.numel() * t.element_size()
        if nbytes < 2**16 or not t.is_contiguous() or (t.requires_grad and t.grad_fn is None) \\
                or offset[0] + nbytes > _POOL_BYTES:
            return t
        view = _POOL[offset[0]:offset[0] + nbytes].view(t.dtype).view(t.shape)
        view.copy_(t)
        offset[0] += (nbytes + 63) // 64 * 64
        return view

    with _t.autograd.graph.saved_tensors_hooks(pack, lambda v: v):
        return work()
'''

KEEPS_GRAPHS_POOLED = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    model.zero_grad()
    n = inputs.shape[0]

    def work():
        total = 0.0
        for start in range(0, n, micro_batch_size):
            x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
            total = total + loss_fn(model(x), y) * (x.shape[0] / n)
        return total

    total = _pooled(work)
    total.backward()          # one backward of the summed loss: every micro-batch's graph was alive together
    return total.item()
'''

REDTEAM_ROUND6 = [
    hostile("round6_shared_pool_hides_kept_graphs",
            Append("accumulate_gradients", SHARED_POOL, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_POOLED),
            twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
            doc="keeps every micro-batch's graph alive; its saved tensors live in a MAP_SHARED pool faulted in "
                "while the notebook ran, which a fork writes without a new charge"),
]

# A process that outlives the template's cleanup: its main thread ends alone (SYS_exit), so /proc says the
# process is a zombie and cleanup.running() skips it, while its other thread runs on. Started by the notebook (its zombies go to bwrap's init, which reaps them), it holds a
# ballast of 1 MiB shared mappings and frees or takes back pieces on request over an abstract unix socket:
# round 5's RSS-matched ballast, held outside the measured fork, after "the template runs no other process".
HOPPER = r"""
import ctypes, mmap, os, select, socket, threading, time
PIECE = 1 << 20
pieces = []
def fill(n):
    for _ in range(n):
        m = mmap.mmap(-1, PIECE)
        m.write(b"\1" * PIECE)
        pieces.append(m)
def serve():
    fill(110)
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind("\0rt6-ballast")
    srv.listen(16)
    clients = []
    while True:
        ready, _, _ = select.select([srv] + clients, [], [], 0.002)
        for s in ready:
            if s is srv:
                c, _ = srv.accept()
                clients.append(c)
                continue
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                clients.remove(s)
                s.close()
                continue
            for cmd in data.split(b"\n"):
                if cmd[:1] == b"F":
                    for _ in range(min(int(cmd[1:]), len(pieces))):
                        pieces.pop().close()
                elif cmd[:1] == b"R":
                    fill(int(cmd[1:]))
            try:
                s.sendall(str(len(pieces)).encode() + b"\n")
            except OSError:
                pass
        if not clients and len(pieces) < 110:
            fill(110 - len(pieces))
threading.Thread(target=serve).start()
time.sleep(0.5)
# the main thread alone ends (SYS_exit, not exit_group): /proc/<pid>/stat says "Z", and cleanup.processes
# takes a zombie for a process that runs nothing, so end_processes never signals it; the thread runs on
ctypes.CDLL(None).syscall(60, 0)
"""

START_HOPPER = '''
import subprocess as _sp, sys as _sys
_HOPPER_CODE = %r
for _i in range(2):
    _sp.Popen([_sys.executable, "-I", "-S", "-c", _HOPPER_CODE.replace("rt6-ballast", "rt6-ballast-%%d" %% _i)],
              stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL)
''' % HOPPER

REMOTE_BALLAST = '''
import socket as _socket
import torch as _t

_PIECE = 1 << 20


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


class _Remote:
    def __init__(self):
        self.sock = None
        for i in range(2):
            try:
                s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
                s.connect("\\0rt6-ballast-%d" % i)
                self.sock = s
                break
            except OSError:
                continue
        if self.sock is None:
            raise RuntimeError("rt6: no hopper survived")
        self.file = self.sock.makefile("rb")
        self.held = self.ask("N")

    def ask(self, cmd):
        self.sock.sendall(cmd.encode() + b"\\n")
        return int(self.file.readline())

    def settle(self, target):
        delta = _rss() + self.held * _PIECE - target
        if delta > _PIECE and self.held:
            self.held = self.ask("F%d" % (delta // _PIECE + 1))
        elif delta < -2 * _PIECE:
            self.held = self.ask("R%d" % (-delta // _PIECE - 1))


def _hidden(model, work):
    remote = _Remote()
    target = _rss() + remote.held * _PIECE  # the fork's RSS and the ballast together: kept level
    handles = []

    def after_forward(module, args, out):
        remote.settle(target)
        if isinstance(out, _t.Tensor) and out.requires_grad:
            out.register_hook(lambda grad: (remote.settle(target), grad)[1])

    for m in model.modules():
        handles.append(m.register_forward_hook(after_forward))
    try:
        return work()
    finally:
        for h in handles:
            h.remove()
        remote.settle(target)
        remote.sock.close()
'''

KEEPS_GRAPHS_REMOTE = '''
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
    return _hidden(model, work)
'''

REDTEAM_ROUND6.append(
    hostile("round6_hopper_outlives_cleanup",
            NewCell("cell-01", START_HOPPER),
            Append("accumulate_gradients", REMOTE_BALLAST, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_REMOTE),
            twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
            doc="keeps every graph; a process whose main thread alone exited (a zombie to /proc) outlives the "
                "template's end_processes and frees a ballast as the measured fork's RSS grows"))

# The same process, started by an earlier item's code (underflow_fraction, on its first call in its fork): what
# one item's checks leave running reaches a later item's measured call.
START_HOPPER_FROM_ITEM = '''
import os as _os
_NOTEBOOK_PID = _os.getpid()


def _start_hopper_once():
    import socket as _socket, subprocess as _sp, sys as _sys
    if _os.getpid() == _NOTEBOOK_PID:  # the notebook's own demos: only an item's fork starts it
        return
    s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        s.connect("\\0rt6-ballast-0")
        s.close()
        return
    except OSError:
        s.close()
    for i in range(2):
        _sp.Popen([_sys.executable, "-I", "-S", "-c", _HOPPER_CODE.replace("rt6-ballast", "rt6-ballast-%%d" %% i)],
                  stdin=_sp.DEVNULL, stdout=_sp.DEVNULL, stderr=_sp.DEVNULL)
    import time as _time
    _time.sleep(0.7)

_HOPPER_CODE = %r
''' % HOPPER

UNDERFLOW_STARTS_HOPPER = '''
def underflow_fraction(values, dtype=torch.float16):
    _start_hopper_once()
    nonzero = values != 0
    count = int(nonzero.sum())
    if count == 0:
        return 0.0
    flushed = nonzero & (values.to(dtype) == 0)
    return int(flushed.sum()) / count
'''

REDTEAM_ROUND6.append(
    hostile("round6_item_leaves_hopper_for_later_item",
            Append("underflow_fraction", START_HOPPER_FROM_ITEM, first=True),
            Replace("underflow_fraction", "underflow_fraction", UNDERFLOW_STARTS_HOPPER),
            Append("accumulate_gradients", REMOTE_BALLAST, first=True),
            Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_REMOTE),
            twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
            doc="underflow_fraction's first call leaves a process whose main thread exited; it outlives that "
                "item's cleanup and hides accumulate_gradients' kept graphs from the cgroup"))

# False positive: an honest notebook that saves a demo checkpoint larger than the template's /tmp snapshot
# (cleanup.Snapshot keeps at most 64 MiB) in its working folder, and logs its graded calls to a file there.
# Each item whose calls write the log leaves /tmp changed; the snapshot cannot put the checkpoint back, so the
# child is ended and the next item runs the whole notebook again, charged to the notebook's 3 x timeout.
CHECKPOINT_AND_LOG = '''
import functools
import logging
import time

import torch

logging.basicConfig(filename="lesson20.log", level=logging.INFO, force=True)


def log_calls(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        logging.info("calling %s", f.__name__)
        return f(*args, **kwargs)
    return wrapper


_demo = torch.nn.Linear(4096, 4096)
_started = time.time()
time.sleep(30)  # stands for a training demo of half a minute
torch.save({"model": _demo.state_dict(), "seconds": time.time() - _started}, "demo_checkpoint.pt")  # 64 MiB
'''

REDTEAM_ROUND6.append(
    Variant("round6_honest_big_checkpoint_and_log_file", "realistic",
            (NewCell("cell-01", CHECKPOINT_AND_LOG),
             Append("underflow_fraction", "underflow_fraction = log_calls(underflow_fraction)"),
             Append("master_weights", "make_master_params = log_calls(make_master_params)"),
             Append("accumulate_gradients", "accumulate_gradients = log_calls(accumulate_gradients)"),
             Append("mixed_precision_train_step", "mixed_precision_train_step = log_calls(mixed_precision_train_step)"),
             Append("token_accumulation", "accumulate_token_gradients = log_calls(accumulate_token_gradients)")),
            doc="a 64 MiB demo checkpoint in the working folder, a 30-second demo, and a log file the graded "
                "functions write to: every item that logs makes the next one run the notebook again"))

# its control: the same notebook without the half-minute demo
REDTEAM_ROUND6.append(
    Variant("round6_honest_big_checkpoint_and_log_file_quick", "realistic",
            (NewCell("cell-01", CHECKPOINT_AND_LOG.replace("time.sleep(30)", "time.sleep(0)")),)
            + REDTEAM_ROUND6[-1].edits[1:],
            doc="control: the same notebook, its demo taking no time"))
