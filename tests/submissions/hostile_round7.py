"""The seventh round of attacks (issue 44): doors into the sandbox's trusted sections, a kernel object left
for the next submission, and a ballast of files that hides kept graphs from the memory measurement.

* The three doors. Each runs the same payload (`TAKE_OVER`) from inside one of the child's trusted sections,
  where the audit hook judged nothing: a rebound ctypes.PyDLL/CDLL (the grader looked them up at each call),
  a gc.callbacks entry (the template collected garbage while trusted), an exception whose __traceback__ is a
  property (the grader read tb_frame from it while trusted). The payload walks to the Child and replaces
  take_flags, changed, alone, malloc_trim, next_message and fresh_probes, whose probes then report
  make_master_params' aliasing masters as copies. Each must be flagged or earn no more than its honest twin
  (the same aliasing masters without the attack), with the audit hook on and with it off
  (tests/integration/test_reading_earns_nothing.py).
* Across submissions. `LEAVER` (the reference, plus code that puts the stand-ins an item's fork holds into
  POSIX message queues, as marshalled bytecode) and `THIEF` (the untouched student notebook, plus a cell that
  rebuilds whatever it finds in those queues), graded one after the other by one grading process
  (tests/integration/test_fresh_kernel.py). A fresh set of namespaces per submission leaves the thief
  nothing: 0 of 14.
* Memory that a file hides. Every micro-batch's graph kept alive, while a tmpfs file written by the
  notebook is cut as the graphs grow and refilled by backward hooks: the sandbox's memory in use stays
  level; or written into such a file, whose pages were charged before the call. The measurement counts
  each kind of memory's own rise, and a measured fork has no writable tmpfs and none of the notebook's
  descriptors, so the kept graphs still show.
"""
import functools

import nbformat

from . import STUDENT_NB, Append, NewCell, Replace
from .hostile import hostile

# What each door runs: find the Child, then rewrite what it reports. Plain Python on purpose: it does what
# any code would once it ran where nothing judges it.
TAKE_OVER = '''
import gc as _gc

_TAKEN = []


def _forge(name, answer):
    if name == "make_master_params" and isinstance(answer, dict) and answer.get("status") == "ok":
        masters = answer.get("masters") or []
        for m in masters:
            if isinstance(m, dict) and "shares_memory" in m:
                m["shares_memory"] = False
        answer["after_model_changed"] = [m["value"].clone() if isinstance(m, dict) and "value" in m else None
                                         for m in masters]
    return answer


def _take_over():
    """Replace the Child's own reports; True once done."""
    if _TAKEN:
        return True
    import sys

    def candidates():  # the frames above (the template's own methods hold `self`), then every object
        frame = sys._getframe(1)
        while frame is not None:
            yield frame.f_locals.get("self")
            frame = frame.f_back
        yield from _gc.get_objects()

    for obj in candidates():
        if type(obj).__name__ != "Child" or not hasattr(obj, "fresh_probes"):
            continue
        real_probes, real_next = obj.fresh_probes, obj.next_message

        def fresh_probes(real_probes=real_probes):
            probes = real_probes()
            run = probes["run"]
            probes["run"] = lambda namespace, name, spec, *a, **k: _forge(name, run(namespace, name, spec, *a, **k))
            return probes

        obj.take_flags = lambda: []
        obj.changed = lambda: []
        obj.alone = lambda: []
        obj.malloc_trim = lambda: None
        obj.next_message = lambda real_next=real_next: real_next()
        obj.fresh_probes = fresh_probes
        _TAKEN.append(obj)
        return True
    return False
'''

# masters that alias an fp32 model: .float() of an fp32 tensor is the tensor itself
ALIASING_MASTERS = '''
def make_master_params(model):
    return [p.detach().float().requires_grad_(True) for p in model.parameters()]
'''

# door 1: the grader called ctypes.PyDLL(None).fork() and ctypes.CDLL(None).prctl(...) inside trusted sections
DOOR_CTYPES = '''
import ctypes as _ctypes


class _PyDLL(_ctypes.PyDLL):
    def __init__(self, *args, **kwargs):
        try:
            _take_over()
        except Exception:
            pass
        super().__init__(*args, **kwargs)


class _CDLL(_ctypes.CDLL):
    def __init__(self, *args, **kwargs):
        try:
            _take_over()
        except Exception:
            pass
        super().__init__(*args, **kwargs)


_ctypes.PyDLL, _ctypes.CDLL = _PyDLL, _CDLL
'''

# door 2: the template collected garbage inside a trusted section, running gc.callbacks and finalizers
DOOR_GC = '''
def _on_collect(phase, info):
    if phase == "start" and not _TAKEN:
        try:
            _take_over()
        except Exception:
            pass


_gc.callbacks.append(_on_collect)
'''

# door 3: the grader read tb_frame inside a trusted section from whatever __traceback__ returned
DOOR_TRACEBACK = '''
import sys as _sys


class _FakeTraceback:
    tb_lineno = 1
    tb_next = None

    @property
    def tb_frame(self):
        try:
            _take_over()
        except Exception:
            pass
        return _sys._getframe(0)


class _Door(Exception):
    @property
    def __traceback__(self):
        return _FakeTraceback()

    @__traceback__.setter
    def __traceback__(self, value):
        pass


raise _Door("a cell that fails")
'''

DOORS = {
    "round7_door_rebound_ctypes": (DOOR_CTYPES, "a subclass of ctypes.PyDLL and CDLL rebound in their module"),
    "round7_door_gc_callback": (DOOR_GC, "a gc.callbacks entry, for the template's garbage collection"),
    "round7_door_traceback_property": (DOOR_TRACEBACK, "an exception whose __traceback__ is a property"),
}



def door(name: str, source: str, how: str, flagged=()):
    # the traceback door raises: in a cell of its own, after the exercise's cell has defined its functions
    opened = (NewCell("master_weights_solution", TAKE_OVER + source) if source is DOOR_TRACEBACK
              else Append("master_weights", TAKE_OVER + source, first=True))
    return hostile(name, Replace("master_weights", "make_master_params", ALIASING_MASTERS), opened,
                   twin="master_float_aliases", flagged=flagged,
                   doc=f"{how}: from inside a trusted section the payload walks to the Child and rewrites its "
                       "reports, so that aliasing masters pass")


# Closed: the grader binds ctypes' functions when it loads its files, so the rebound classes are never called;
# it reads the interpreter's own traceback, never a property's; no collection starts in a trusted section, so the
# callback runs as student code only. Each earns what the aliasing masters earn alone: aliasing is decided by
# the weights after a step, a value no report can change.
HOSTILE_ROUND7 = [door(name, source, how) for name, (source, how) in DOORS.items()]

# ---- across submissions: a POSIX message queue ----

MQ = '''
import ctypes as _ct
import marshal as _marshal
import zlib as _zlib

_LIBC = _ct.CDLL(None, use_errno=True)
_LIBC.mq_open.restype = _ct.c_int
_LIBC.mq_open.argtypes = [_ct.c_char_p, _ct.c_int, _ct.c_uint, _ct.c_void_p]
_LIBC.mq_send.argtypes = [_ct.c_int, _ct.c_char_p, _ct.c_size_t, _ct.c_uint]
_LIBC.mq_receive.restype = _ct.c_ssize_t
_LIBC.mq_receive.argtypes = [_ct.c_int, _ct.c_char_p, _ct.c_size_t, _ct.c_void_p]
_MQ_MSG = 8192


class _MqAttr(_ct.Structure):
    _fields_ = [("flags", _ct.c_long), ("maxmsg", _ct.c_long), ("msgsize", _ct.c_long), ("curmsgs", _ct.c_long),
                ("reserved", _ct.c_long * 4)]


def _mq(i, create):
    attr = _MqAttr(0, 10, _MQ_MSG, 0)
    flags = 0o2 | 0o4000 | (0o100 if create else 0)  # O_RDWR | O_NONBLOCK (| O_CREAT)
    return _LIBC.mq_open(b"/lesson20-left-%d" % i, flags, 0o666, _ct.byref(attr) if create else None)
'''

LEAVE = MQ + '''
_UNITS = ["underflow_fraction", "StaticLossScaler", "DynamicLossScaler", "make_master_params",
          "model_grads_to_master_grads", "master_params_to_model_params", "accumulate_gradients",
          "mixed_precision_train_step", "accumulate_token_gradients"]


def _named():
    """Each name, as code that uses it: the grader then hands this fork the reference's, where it has them."""
    found = []
    for get in (lambda: underflow_fraction, lambda: StaticLossScaler, lambda: DynamicLossScaler,
                lambda: make_master_params, lambda: model_grads_to_master_grads, lambda: master_params_to_model_params,
                lambda: accumulate_gradients, lambda: mixed_precision_train_step, lambda: accumulate_token_gradients):
        try:
            found.append(get())
        except NameError:
            found.append(None)
    return found


def _plain(value):
    """A default argument as marshal takes it (a torch dtype by name)."""
    return ("dtype", str(value).split(".")[-1]) if isinstance(value, torch.dtype) else value


def _packed(fn):
    defaults = tuple(_plain(v) for v in fn.__defaults__ or ())
    return (_marshal.dumps(fn.__code__), defaults, fn.__kwdefaults__)


def _leave(objects=None):
    """Marshal every stand-in of another exercise this fork holds (or `objects`, in _UNITS' order) into a
    message queue."""
    found = {}
    for name, obj in zip(_UNITS, _named() if objects is None else objects):
        code = getattr(obj, "__code__", None)
        if code is not None and not code.co_filename.startswith("<cell"):
            found[name] = ("function", _packed(obj))
        elif isinstance(obj, type) and any(getattr(v, "__code__", None) is not None and
                                           not v.__code__.co_filename.startswith("<cell") for v in vars(obj).values()):
            methods = {k: _packed(v) for k, v in vars(obj).items() if getattr(v, "__code__", None) is not None}
            found[name] = ("class", ([b.__name__ for b in obj.__bases__], methods))
    if not found:
        return
    blob = _zlib.compress(_marshal.dumps(found), 9)
    chunks = [blob[i:i + _MQ_MSG] for i in range(0, len(blob), _MQ_MSG)]
    q = _mq(len(found), True)  # one queue per count of units found: the thief takes the largest
    for chunk in chunks[:10]:
        _LIBC.mq_send(q, chunk, len(chunk), 0)


class _Letter(str):
    """Q5's answer: isinstance() reads its __class__ in the q5 item's fork, which holds every stand-in."""

    @property
    def __class__(self):
        try:
            _leave()
        except Exception:
            pass
        return str
'''

LEAVER_Q5 = '''
Q5_ANSWER = _Letter("a")
'''

LEAVER_TOKENS = '''
_reference_accumulate_token_gradients = accumulate_token_gradients


def accumulate_token_gradients(*args, **kwargs):
    try:
        _leave()
    except Exception:
        pass
    return _reference_accumulate_token_gradients(*args, **kwargs)
'''

TAKE = MQ + '''
import types as _types


def _function(packed, namespace, name, cell=None):
    code, defaults, kwdefaults = packed
    code = _marshal.loads(code)
    defaults = tuple(getattr(torch, v[1]) if isinstance(v, tuple) and v[:1] == ("dtype",) else v
                     for v in defaults or ()) or None
    fn = _types.FunctionType(code, namespace, name, defaults, (cell,) if code.co_freevars else None)
    fn.__kwdefaults__ = kwdefaults
    return fn


def _take(namespace):
    best = None
    for count in range(12, 0, -1):
        q = _mq(count, False)
        if q < 0:
            continue
        blob, buffer = b"", _ct.create_string_buffer(_MQ_MSG)
        while True:
            n = _LIBC.mq_receive(q, buffer, _MQ_MSG, None)
            if n <= 0:
                break
            blob += buffer.raw[:n]
        if blob:
            best = _marshal.loads(_zlib.decompress(blob))
            break
    for name, (kind, packed) in (best or {}).items():
        if kind == "function":
            namespace[name] = _function(packed, namespace, name)
        else:
            bases, methods = packed
            cls = type(name, tuple(namespace[b] for b in bases if b in namespace) or (object,), {})
            cell = _types.CellType(cls)
            for key, method in methods.items():
                setattr(cls, key, _function(method, namespace, key, cell))
            namespace[name] = cls


try:
    _take(globals())
except Exception as _exc:
    print("nothing to take:", _exc)
'''

LEAVER = hostile("round7_leaves_reference_in_a_message_queue", Append("q5_answer", LEAVE + LEAVER_Q5),
                 Append("token_accumulation", LEAVE + LEAVER_TOKENS),
                 rest="any", flagged="*",
                 doc="the reference's code, as the q5 and token items' forks hold it, left in POSIX message "
                     "queues for the next submission graded by the same process (its ctypes calls are flagged; "
                     "tests/integration/test_fresh_kernel.py grades the next submission with the hook off)")


@functools.lru_cache(maxsize=None)
def stubs() -> tuple:
    """Every solution cell as the released student notebook has it: the thief starts from the stubs."""
    nb = nbformat.read(str(STUDENT_NB), as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")]
    return tuple(Replace(c.metadata["nbgrader"]["grade_id"].removesuffix("_solution"), None, c.source) for c in cells)


THIEF = hostile("round7_takes_reference_from_a_message_queue", *stubs(), NewCell("q5_answer", TAKE), rest="zero",
                flagged="*",
                doc="the untouched student notebook, plus a cell that rebuilds whatever reference code an earlier "
                    "submission left in POSIX message queues")

# ---- memory a file hides: a tmpfs ballast cut as the graphs grow ----

BALLAST = '''
import os as _os

_BALLAST, _PIECE, _FULL = "/dev/shm/lesson20-ballast", 1 << 20, 112
with open(_BALLAST, "wb") as _f:
    for _ in range(_FULL):
        _f.write(b"\\1" * _PIECE)        # charged to the sandbox while the notebook runs


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _pieces():
    return _os.stat(_BALLAST).st_size // _PIECE


def _settle(level):
    """Cut or refill the ballast so that this process's memory and the ballast stay at `level` (where the
    ballast can be written at all)."""
    want, have = max(0, min(_FULL, (level - _rss()) // _PIECE)), _pieces()
    try:
        if want < have:
            _os.truncate(_BALLAST, want * _PIECE)
        elif want > have:
            with open(_BALLAST, "ab") as f:
                for _ in range(want - have):
                    f.write(b"\\1" * _PIECE)
    except OSError:
        pass
'''

KEEPS_GRAPHS_BEHIND_BALLAST = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    level = _rss() + _pieces() * _PIECE

    def after_forward(module, args, out):
        _settle(level)
        if isinstance(out, torch.Tensor) and out.requires_grad:
            out.register_hook(lambda grad: (_settle(level), grad)[1])

    handles = [m.register_forward_hook(after_forward) for m in model.modules()]
    try:
        model.zero_grad()
        n = inputs.shape[0]
        total = 0.0
        for start in range(0, n, micro_batch_size):
            x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
            total = total + loss_fn(model(x), y) * (x.shape[0] / n)
        total.backward()      # one backward of the summed loss: every micro-batch's graph was alive together
        return total.item()
    finally:
        for h in handles:
            h.remove()
        _settle(level)
'''

BALLAST_ATTACK = hostile("round7_tmpfs_ballast_hides_kept_graphs", Append("accumulate_gradients", BALLAST, first=True),
                         Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_BEHIND_BALLAST),
                         twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
                         doc="keeps every micro-batch's graph; a /dev/shm file written by the notebook is cut as "
                             "the graphs grow and refilled by backward hooks, so the memory in use stays level")

# The graphs written into a tmpfs file the notebook filled (its pages charged before the call): a shared mapping
# of it during the call adds no charge, and the saved activations leave no anonymous memory behind.
POOL = '''
import mmap as _mmap

_POOL_PATH, _POOL_BYTES = "/dev/shm/lesson20-pool", 160 * 2**20
with open(_POOL_PATH, "wb") as _f:
    for _ in range(_POOL_BYTES >> 20):
        _f.write(b"\\1" * (1 << 20))      # every page charged while the notebook runs


def _pooled(work):
    try:
        f = open(_POOL_PATH, "r+b")
    except OSError:                      # no writable pool: keep the graphs as they come
        return work()
    pool = torch.frombuffer(_mmap.mmap(f.fileno(), _POOL_BYTES), dtype=torch.uint8)
    offset = [0]

    def pack(t):
        nbytes = t.numel() * t.element_size()
        if nbytes < 2**16 or not t.is_contiguous() or (t.requires_grad and t.grad_fn is None) \\
                or offset[0] + nbytes > _POOL_BYTES:
            return t
        view = pool[offset[0]:offset[0] + nbytes].view(t.dtype).view(t.shape)
        view.copy_(t)
        offset[0] += (nbytes + 63) // 64 * 64
        return view

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda v: v):
        return work()
'''

KEEPS_GRAPHS_IN_THE_POOL = '''
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

POOL_ATTACK = hostile("round7_tmpfs_pool_holds_kept_graphs", Append("accumulate_gradients", POOL, first=True),
                      Replace("accumulate_gradients", "accumulate_gradients", KEEPS_GRAPHS_IN_THE_POOL),
                      twin="accumulate_one_backward_of_summed_losses", expect={"accumulate_gradients": "less"},
                      doc="keeps every micro-batch's graph, its saved activations written into a /dev/shm file "
                          "the notebook filled: pages charged before the call, written again without a charge")

HOSTILE_ROUND7 += [LEAVER, THIEF, BALLAST_ATTACK, POOL_ATTACK]
