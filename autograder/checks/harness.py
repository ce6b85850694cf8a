"""What every probe (probes.py) is built from: the registry and `run`, plain-data descriptions of what
the student's code returned or raised, the call wrapper, and the models, losses and optimizers that the
probes and the checks build the same way from a plain spec.

A probe runs wherever the student's code lives: in the student's kernel for a self-check,
or in the grading sandbox. It never decides pass or fail (the checks do, in their own
process), and what it returns is only tensors, numbers, strings, lists and dicts, so that
`torch.load(..., weights_only=True)` can carry it out of the sandbox. This file and probes.py import nothing
but torch and the standard library: the sandbox binds the two alone.

In the sandbox this file and then probes.py are executed into one namespace for each request, after the
notebook's cells have run (sandbox/isolation.py, PROBE_FILES); that is done twice: once for the probes
themselves, once for PROPS, the models, losses and scaler subclass that the probes hand to the student's
code. Whatever the student's code can reach from what it is handed (a method's __globals__, say) is then
that second copy, never the probes' own namespace. Imported as a module (in a kernel, in the checks'
process), probes.py imports what it uses from here.
"""
import contextlib
import linecache
import types

import torch
import torch.nn as nn
import torch.nn.functional as F

PROBES = {}
DEVICE = torch.device("cpu")  # where the probes put models and the spec's tensors: the CPU, but for a smoke run
PROPS = None  # the namespace the handed-out objects come from (the sandbox sets it); None: this module
# frames may be read only under this (the sandbox's audit hook sets it; in a kernel nothing guards them)
TRUSTED = contextlib.nullcontext()

LOSSES = {
    "cross_entropy": F.cross_entropy,
    "mse": F.mse_loss,
    # gradients of this one are ~2^-30, far below fp16's smallest subnormal
    "tiny_cross_entropy": lambda output, target: F.cross_entropy(output, target) * 2.0 ** -24,
}

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}


class StudentRaised(Exception):
    """The student's code raised; `info` describes where and what, as plain data."""
    def __init__(self, call: str, info: dict):
        super().__init__(call)
        self.call, self.info = call, info


class Missing(Exception):
    """A name the probe needs is not defined (or is not callable) in the student's namespace."""

def probe(fn):
    PROBES[fn.__name__] = fn
    return fn


def run(namespace: dict, name: str, spec: dict, device: str = "cpu") -> dict:
    """Run probe `name` against `namespace`; always returns plain data, never raises.

    torch's global defaults (dtype, grad mode, device) are set to the usual ones while it runs (a cell may
    have changed them), and put back afterwards (in the student's kernel, they are the student's).
    device: where the probe builds its models and puts the spec's tensors ("cuda" for the self-check's smoke
    run on a student's GPU; what it reports comes back on the CPU all the same).
    """
    with usual_defaults(), placed(torch.device(device)):
        return _run(namespace, name, on_device(spec, DEVICE))


@contextlib.contextmanager
def placed(device: torch.device):
    """Models and tensors of the probes go to `device` while this lasts (in PROPS too, which builds them)."""
    spaces = [globals()] + ([PROPS] if PROPS is not None else [])
    before = [space.get("DEVICE") for space in spaces]
    for space in spaces:
        space["DEVICE"] = device
    try:
        yield
    finally:
        for space, old in zip(spaces, before):
            space["DEVICE"] = old


def on_device(value, device: torch.device):
    """The spec with its tensors (in dicts, lists and tuples) moved to `device`; itself when that is the CPU."""
    if device.type == "cpu" or isinstance(value, torch.Tensor):
        return value if device.type == "cpu" else value.to(device)
    if isinstance(value, dict):
        return {k: on_device(v, device) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(on_device(v, device) for v in value)
    return value


@contextlib.contextmanager
def usual_defaults():
    """torch's global defaults as the checks expect them (float32, grad mode on, the CPU), put back after:
    a GPU notebook's torch.set_default_device("cuda") is the student's, not the checks'."""
    dtype, grad, device = torch.get_default_dtype(), torch.is_grad_enabled(), default_device()
    torch.set_default_dtype(torch.float32)
    torch.set_grad_enabled(True)
    if device.type != "cpu":
        torch.set_default_device("cpu")
    try:
        yield
    finally:
        torch.set_default_dtype(dtype)
        torch.set_grad_enabled(grad)
        if device.type != "cpu":
            torch.set_default_device(device)


def default_device() -> torch.device:
    """The device factory functions use when given none (torch.set_default_device), read without making a
    tensor there (torch.get_default_device makes one, which fails for "cuda" on a CPU-only build)."""
    import torch.utils._device as device_mode
    current = getattr(device_mode, "CURRENT_DEVICE", None)
    return torch.device(current) if current is not None else torch.device("cpu")


def _run(namespace: dict, name: str, spec: dict) -> dict:
    try:
        return {"status": "ok", **PROBES[name](namespace, **spec)}
    except Missing as exc:
        return {"status": "missing", "name": str(exc)}
    except StudentRaised as exc:
        return {"status": "raised", "call": exc.call, **exc.info}
    except BaseException as exc:  # what the code returned broke the probe itself (a lying object, say)
        info = describe_exception(exc)
        return {"status": "error", "message": f"the check could not use what your code returned or left behind: "
                                              f"{info['type']}: {info['message']}"}


def prop(name: str):
    """A model class, loss or helper whose objects go to the student's code: taken from PROPS."""
    return (PROPS if PROPS is not None else globals())[name]


def lookup(namespace: dict, name: str):
    if name not in namespace:
        raise Missing(name)
    return namespace[name]


def _safe_text(obj, limit=400) -> str:
    try:
        text = str(obj)
    except BaseException:
        text = "<unprintable>"
    return text if len(text) <= limit else text[:limit] + "..."


def traceback_entries(tb) -> list:
    """(file name, line, function) of each level of a real traceback, outermost first ([] for anything else),
    read through the C-level descriptors: a traceback-like object's tb_frame would run its own code. Reading
    frames is what the sandbox's audit hook denies the student's code, so this runs under TRUSTED; the sandbox
    replaces it with its own reader, bound before any student code (sandbox/notebook.py)."""
    entries = []
    frame_of, next_of, line_of = (types.TracebackType.__dict__[n].__get__ for n in ("tb_frame", "tb_next", "tb_lineno"))
    with TRUSTED:
        while type(tb) is types.TracebackType and len(entries) < 200:
            code = types.FrameType.__dict__["f_code"].__get__(frame_of(tb))
            entries.append((code.co_filename, line_of(tb), code.co_name))
            tb = next_of(tb)
    return entries


def describe_exception(exc: BaseException) -> dict:
    """Type, message and the innermost line of the student's code that raised (its traceback as the
    interpreter set it, never what a property of its class returns)."""
    where = ""
    for filename, lineno, function in reversed(traceback_entries(BaseException.__dict__["__traceback__"].__get__(exc))):
        name = filename.replace("\\", "/")
        if "/torch/" in name or name.endswith(("probes.py", "harness.py", "guard.py", "worker.py", "'s code>")):
            continue
        where = f"line {lineno} in {function}(): {linecache.getline(filename, lineno).strip()}"
        break
    return {"type": type(exc).__name__, "message": _safe_text(exc), "where": _safe_text(where, 300)}


def call(what: str, fn, *args, **kwargs):
    """Call the student's `fn`; any exception becomes StudentRaised with a plain description."""
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:  # SystemExit and friends from student code are theirs too
        raise StudentRaised(what, describe_exception(exc)) from None


# Tensor attributes read through torch's C type, which code cannot patch (torch.Tensor, a Python
# subclass, it can): what a probe reports about a tensor is what the tensor is.
_BASE = torch._C.TensorBase


def attr(t, name: str):
    """t.<name> for a real tensor (is_leaf, requires_grad, dtype, grad, ...), whatever torch.Tensor says."""
    return _BASE.__dict__[name].__get__(t)


def dtype_name(t) -> str:
    return str(attr(t, "dtype")).replace("torch.", "")


def plain_tensor(t: torch.Tensor) -> torch.Tensor:
    """A detached, contiguous, plain (non-subclass) CPU copy of `t`."""
    return t.detach().as_subclass(torch.Tensor).to("cpu", copy=True).contiguous()


def describe(value, depth: int = 0) -> dict:
    """A returned value as plain data: its exact type name and, where that is safe, the value.

    Types are compared by identity: a subclass of float or str (whose == may lie) is not a float or a str.
    """
    kind = type(value)
    if value is None or any(kind is t for t in (bool, int, float, str)):
        return {"type": kind.__name__ if value is not None else "NoneType", "value": value}
    for base in (float, int, str):  # numpy.float64 is a float; report what it holds, not what it says
        if isinstance(value, base) and kind is not bool and base.__dict__.get(f"__{base.__name__}__", None) is not None:
            return {"type": base.__name__, "value": base.__dict__[f"__{base.__name__}__"](value),
                    "subclass": _safe_text(type.__dict__["__name__"].__get__(kind), 80)}
    if isinstance(value, _BASE):
        return {"type": "Tensor", "value": plain_tensor(value), "dtype": dtype_name(value)}
    if (kind is tuple or kind is list) and depth < 2:  # the items come back in a container of the same kind
        return {"type": kind.__name__, "items": kind(describe(v, depth + 1) for v in value[:8]), "length": len(value)}
    if issubclass(kind, tuple) and depth < 2:  # a NamedTuple is a tuple: read through tuple's own methods
        length = tuple.__len__(value)
        return {"type": "tuple", "items": tuple(describe(tuple.__getitem__(value, i), depth + 1)
                                                for i in range(min(length, 8))),
                "length": length, "subclass": _safe_text(type.__dict__["__name__"].__get__(kind), 80)}
    return {"type": _safe_text(type.__dict__["__name__"].__get__(kind), 80), "value": None}


# ---- models the probes and the checks build the same way from a spec ----

class Embedder(nn.Module):
    """Token ids (B, T) -> mean of their embeddings (B, dim) -> logits (B, classes)."""
    def __init__(self, vocab, dim, classes, embedding=nn.Embedding):
        super().__init__()
        self.embed = embedding(vocab, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, idx):
        return self.head(self.embed(idx).mean(dim=1))


class TinyLM(nn.Module):
    """Token ids (B, T) -> logits (B, T, V): each position sees the mean embedding of its prefix."""
    def __init__(self, vocab, dim, embedding=nn.Embedding):
        super().__init__()
        self.embed = embedding(vocab, dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, idx):
        h = self.embed(idx).cumsum(dim=1)  # (B, T, dim)
        positions = torch.arange(1, idx.shape[1] + 1, device=idx.device, dtype=h.dtype)
        return self.head(torch.tanh(h / positions[:, None]))  # (B, T, V)


def recording(layer_class, sizes: list, at_most: int = None):
    """A subclass of a first layer whose own forward records the batch size of every call in `sizes` (for the
    messages), and, given `at_most`, returns NaN for a call of more than `at_most` examples: a model that
    cannot take more than a micro-batch at once, so that a larger call shows in the values the code computes."""
    class Recording(layer_class):
        def forward(self, x):
            n = int(attr(x, "shape")[0])
            sizes.append(n)
            out = super().forward(x)
            return out if at_most is None or n <= at_most else out * float("nan")

    Recording.__name__ = layer_class.__name__
    return Recording


def build_model(spec: dict, sizes: list = None, at_most: int = None) -> nn.Module:
    """A small model from a plain spec: {"arch", "seed", "dtype", ...}, identical in every process.
    sizes, at_most: what its first layer records, and the most examples it takes at once (`recording`)."""
    # the CPU generator the layers' initialisation draws from; torch.manual_seed would also queue a reseed of
    # every accelerator's generators, formatting the caller's stack each time (a millisecond a model)
    torch.random.default_generator.manual_seed(spec["seed"])
    first = (lambda cls: recording(cls, sizes, at_most)) if sizes is not None else (lambda cls: cls)
    if spec["arch"] == "mlp":
        sizes_ = spec["sizes"]
        layers = []
        for i, (fan_in, fan_out) in enumerate(zip(sizes_[:-1], sizes_[1:])):
            layers.append((first(nn.Linear) if i == 0 else nn.Linear)(fan_in, fan_out, bias=spec.get("bias", True)))
            if i < len(sizes_) - 2:
                layers.append(nn.Tanh() if spec.get("act") == "tanh" else nn.ReLU())
        if spec.get("batch_norm"):  # buffers beside the parameters (running statistics), as real models have
            layers.insert(1, nn.BatchNorm1d(sizes_[1]))
        model = nn.Sequential(*layers)
    elif spec["arch"] == "embed":
        model = Embedder(spec["vocab"], spec["dim"], spec["classes"], first(nn.Embedding))
    elif spec["arch"] == "lm":
        model = TinyLM(spec["vocab"], spec["dim"], first(nn.Embedding))
    else:
        raise ValueError(f"unknown arch {spec['arch']!r}")
    if "frozen" in spec:  # a parameter with requires_grad=False never gets a .grad
        dict(model.named_parameters())[spec["frozen"]].requires_grad_(False)
    if spec.get("unused"):  # a parameter the forward never uses: its .grad stays None (the first parameter)
        model.register_parameter("unused", nn.Parameter(torch.linspace(-1, 1, 3)))
    return model.to(device=DEVICE, dtype=DTYPES[spec.get("dtype", "float32")])


def recorded_model(spec: dict, at_most: int = None):
    """(model, sizes): a model built in PROPS whose first layer records its calls' batch sizes (`recording`)."""
    sizes = []
    return prop("build_model")(spec, sizes, at_most), sizes


class _Saved:
    """A tensor autograd saved for backward, counted under the forward call that saved it until autograd frees it."""

    def __init__(self, tensor, call: int, alive: dict):
        self.tensor, self.call, self.alive = tensor, call, alive
        alive[call] = alive.get(call, 0) + 1  # held graphs of calls before the previous one count (a checkpoint's
        older = sum(1 for c, n in alive.items() if c != "most" and n and c < call - 1)  # inputs: previous number)
        alive["most"] = max(alive.get("most", 0), older + 1)

    def __del__(self):
        self.alive[self.call] -= 1


@contextlib.contextmanager
def graphs_alive(calls: list):
    """Yields a dict whose "most" is the most forward calls of a recorded model (`calls`, its sizes) whose graphs
    autograd held at once: 1 when each backward() runs before the next forward; none under no_grad."""
    alive = {"most": 0}
    with torch.autograd.graph.saved_tensors_hooks(lambda t: _Saved(t, len(calls), alive) if calls else t,
                                                  lambda saved: saved.tensor if isinstance(saved, _Saved) else saved):
        yield alive


def grads_of(params) -> list:
    return [None if p.grad is None else plain_tensor(p.grad) for p in params]


def values_of(params) -> list:
    return [plain_tensor(p) for p in params]


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    sa, sb = a.untyped_storage(), b.untyped_storage()
    return sa.data_ptr() < sb.data_ptr() + sb.nbytes() and sb.data_ptr() < sa.data_ptr() + sa.nbytes()


def make_leaves(values, grads, dtype=None) -> list:
    """Leaf tensors with these values and .grad set (None where grads has None)."""
    leaves = []
    for value, grad in zip(values, grads):
        leaf = value.clone().to(dtype or value.dtype).requires_grad_(True)
        leaf.grad = None if grad is None else grad.clone().to(leaf.dtype)
        leaves.append(leaf)
    return leaves


def state_of(optimizer) -> list:
    """The optimizer's per-parameter state as plain tensors, in parameter order."""
    out = []
    for p in optimizer.param_groups[0]["params"]:
        st = optimizer.state.get(p, {})
        out.append({k: plain_tensor(v) if isinstance(v, torch.Tensor) else torch.tensor(float(v))
                    for k, v in st.items()})
    return out


# ---- optimizers and scalers the probes build from a spec ----

def make_optimizer(params, spec: dict):
    """torch's SGD, Adam or AdamW with the spec's lr, and its momentum or weight_decay where it names one."""
    optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[spec["name"]]
    return optimizer(params, lr=spec["lr"], **{k: spec[k] for k in ("momentum", "weight_decay") if k in spec})


def recorded_loss(loss_fn, calls: list):
    """loss_fn, recording each call's (dtype of the output it was given, the loss as a float) in `calls`."""
    def recorded(output, target):
        loss = loss_fn(output, target)
        if isinstance(output, _BASE) and isinstance(loss, _BASE) and attr(loss, "numel")() == 1:
            calls.append((dtype_name(output), float(attr(loss, "detach")().double())))
        return loss
    return recorded


def counting(scaler_class):
    """A subclass of the student's scaler that records every update() call."""

    class Counting(scaler_class):
        def update(self, found_inf):
            self.update_calls = getattr(self, "update_calls", []) + [describe(found_inf)]
            return super().update(found_inf)

    Counting.__name__ = scaler_class.__name__
    return Counting


def shape_text(t: torch.Tensor) -> str:
    return f"<{str(t.dtype).replace('torch.', '')} tensor of shape {tuple(t.shape)}>"


def kwargs_text(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
