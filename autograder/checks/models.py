"""The models, losses, optimizers and scaler subclass that the probes hand to the student's code and the
checks build the same way from a plain spec, in every process: the same spec gives the same model.

Like harness.py, this file imports nothing but torch and the standard library: in the sandbox it is executed
into the probes' namespace after plain_data.py (sandbox/isolation.py, PROBE_FILES), whose names it takes from
there; imported as a module, it imports them.
"""
import contextlib

import torch
import torch.nn as nn
import torch.nn.functional as F

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from .plain_data import TENSOR_BASE, attr, describe, dtype_name, plain_tensor

LOSSES = {
    "cross_entropy": F.cross_entropy,
    "mse": F.mse_loss,
    # gradients of this one are ~2^-30, far below fp16's smallest subnormal
    "tiny_cross_entropy": lambda output, target: F.cross_entropy(output, target) * 2.0 ** -24,
}

DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32,
          "float64": torch.float64}


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


def build_model(spec: dict, sizes: list = None, at_most: int = None, device: torch.device = None) -> nn.Module:
    """A small model from a plain spec: {"arch", "seed", "dtype", ...}, identical in every process.
    sizes, at_most: what its first layer records, and the most examples it takes at once (`recording`).
    device: where it goes (the CPU unless given: a probe's is its Context's)."""
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
    return model.to(device=torch.device("cpu") if device is None else device, dtype=DTYPES[spec.get("dtype", "float32")])


def recorded_model(spec: dict, at_most: int = None, device: torch.device = None):
    """(model, sizes): a model whose first layer records its calls' batch sizes (`recording`)."""
    sizes = []
    return build_model(spec, sizes, at_most, device), sizes


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


def make_optimizer(params, spec: dict):
    """torch's SGD, Adam or AdamW with the spec's lr, and its momentum or weight_decay where it names one."""
    optimizer = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adamw": torch.optim.AdamW}[spec["name"]]
    return optimizer(params, lr=spec["lr"], **{k: spec[k] for k in ("momentum", "weight_decay") if k in spec})


def recorded_loss(loss_fn, calls: list):
    """loss_fn, recording each call's (dtype of the output it was given, the loss as a float) in `calls`."""
    def recorded(output, target):
        loss = loss_fn(output, target)
        if isinstance(output, TENSOR_BASE) and isinstance(loss, TENSOR_BASE) and attr(loss, "numel")() == 1:
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
