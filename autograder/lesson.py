"""Helpers the Lesson 20 notebook imports: the device, the digits data, small models,
memory accounting, what the GPU offers (bf16, TF32), and a guard that lets a demo wait for an
exercise to be written."""
import contextlib
import gc
import os

import torch
import torch.nn as nn

DEVICE_VARIABLE = "LESSON20_DEVICE"


def pick_device() -> torch.device:
    """CUDA when torch sees a GPU, else CPU; LESSON20_DEVICE=cpu, =cuda or =cuda:N forces one."""
    forced = os.environ.get(DEVICE_VARIABLE, "").strip().lower()
    if not forced:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    kind, _, index = forced.partition(":")
    if kind not in ("cpu", "cuda") or (index and not (kind == "cuda" and index.isdigit())):
        raise ValueError(f"{DEVICE_VARIABLE}={forced!r}: use 'cpu', 'cuda' or 'cuda:N' (a GPU's index), or leave it unset")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise RuntimeError(f"{DEVICE_VARIABLE}={forced}, but torch sees no CUDA GPU on this machine")
        if index and int(index) >= torch.cuda.device_count():
            raise RuntimeError(f"{DEVICE_VARIABLE}={forced}, but torch sees {torch.cuda.device_count()} GPU(s): "
                               f"the indices are 0 to {torch.cuda.device_count() - 1}")
    return torch.device(forced)


def bf16_on_cuda() -> str:
    """How the current CUDA GPU runs bf16: "native" (bf16 tensor cores: Ampere, compute capability 8, and
    later), "emulated" (it runs, without bf16 tensor cores: much slower than fp16 on matrix products) or "none"."""
    if not torch.cuda.is_available():
        return "none"
    try:
        native = torch.cuda.is_bf16_supported(including_emulation=False)
    except TypeError:  # an older torch without the argument: the compute capability is the native answer
        native = bool(torch.version.hip) or torch.cuda.get_device_capability()[0] >= 8
    if native:
        return "native"
    return "emulated" if _bf16_tensor_works() else "none"


def _bf16_tensor_works() -> bool:
    """Whether a bf16 tensor can be made on the current CUDA GPU (torch's own test of emulated bf16)."""
    try:
        torch.ones(1, dtype=torch.bfloat16, device="cuda")
    except Exception:  # what fails here is the GPU's or the build's business: any error means no bf16
        return False
    return True


@contextlib.contextmanager
def tf32_allowed():
    """fp32 matrix products and convolutions on tensor cores as TF32 (fp32's range, a 10-bit mantissa) inside
    the block, as nanoGPT allows them; the previous settings come back after it. CUDA only: a CPU ignores them."""
    matmul, cudnn = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = True
    try:
        yield
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = matmul, cudnn


def is_autograding() -> bool:
    """True while nbgrader executes the notebook: demos then run shorter, since nothing in them is graded."""
    return bool(os.environ.get("NBGRADER_EXECUTION"))


def demo_size(full: int, short: int) -> int:
    """A demo's size (its steps, rounds, examples or layer width): `short` under the autograder, else `full`."""
    return short if is_autograding() else full


def progress(iterable, **kwargs):
    """A tqdm progress bar that stays quiet under the autograder."""
    from tqdm.auto import tqdm
    return tqdm(iterable, disable=is_autograding(), **kwargs)


def load_digits(device="cpu", test_fraction: float = 0.2, seed: int = 0):
    """scikit-learn's 8x8 handwritten digits (they ship inside the package: no download).

    Returns x_train (N, 64) in [0, 1], y_train (N,), x_test, y_test, shuffled once with `seed`.
    """
    from sklearn.datasets import load_digits as sklearn_digits
    x, y = sklearn_digits(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32) / 16.0
    y = torch.tensor(y, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(seed))
    x, y = x[order], y[order]
    n_test = int(len(x) * test_fraction)
    return x[n_test:].to(device), y[n_test:].to(device), x[:n_test].to(device), y[:n_test].to(device)


def make_mlp(sizes=(64, 128, 128, 10), seed: int = 0, device="cpu", dtype=torch.float32) -> nn.Sequential:
    """Linear layers of the given sizes with ReLU between them, initialised from `seed`."""
    torch.manual_seed(seed)
    layers = []
    for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
        layers.append(nn.Linear(fan_in, fan_out))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(device=device, dtype=dtype)


@contextlib.contextmanager
def needs(*names: str):
    """Run a demo block that uses your code; if a piece is still a stub, say so instead of failing."""
    try:
        yield
    except NotImplementedError:
        print(f"Skipped: this demo uses {', '.join(names)}. "
              "Come back to it once that exercise is written.")


def tensor_bytes(tensors) -> int:
    """Bytes held by these tensors, counting each storage once (None entries are skipped)."""
    seen, total = set(), 0
    for t in tensors:
        if t is None:
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() in seen:
            continue
        seen.add(storage.data_ptr())
        total += storage.nbytes()
    return total


def optimizer_state_bytes(optimizer: torch.optim.Optimizer) -> int:
    """Bytes of every tensor in the optimizer's state (momentum, Adam moments, step counters)."""
    return tensor_bytes(v for state in optimizer.state.values() for v in state.values()
                        if isinstance(v, torch.Tensor))


class PeakMemory:
    """The CUDA allocator's peak during a `with` block, above what was allocated when the block began.

    The baseline is taken after gc.collect() (objects kept only by reference cycles would count otherwise),
    torch.cuda.synchronize() and torch.cuda.reset_peak_memory_stats(), from torch.cuda.memory_allocated().
    After the block `increase` is max_memory_allocated() minus that baseline, in bytes, so tensors that were
    on the GPU before (the data, earlier demos' models) do not count. On a CPU, which has no allocator to
    ask, `baseline` and `increase` stay None and nothing is collected.
    """

    def __init__(self, device):
        self.device = torch.device(device)
        self.baseline = self.increase = None

    def __enter__(self):
        if self.device.type == "cuda":
            gc.collect()
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.baseline = torch.cuda.memory_allocated(self.device)
        return self

    def __exit__(self, *exc):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the peak of work still queued counts too
            self.increase = torch.cuda.max_memory_allocated(self.device) - self.baseline
        return False


class ActivationMeter:
    """Counts the bytes autograd saves for backward, per forward pass of `model`.

    A forward pre-hook starts a new window, so `peak_bytes` is the largest window: with
    gradient accumulation that is one micro-batch, since each backward frees its graph
    before the next forward. Parameters are not counted here (they are weights, not activations).
    After the `with` block the meter holds only `peak_bytes`: no hook, and no reference to the model.
    """

    def __init__(self, model: nn.Module):
        self.model = model
        self.peak_bytes = 0
        self._window = 0
        self._seen = set()
        self._params = set()

    def _new_window(self, module, args):
        self._window, self._seen = 0, set()
        # read the parameters now: a model converted with .half() has new storages
        self._params = {p.untyped_storage().data_ptr() for p in self.model.parameters()}

    def _pack(self, t):
        # a micro-batch is a view into the whole batch: count the view's own bytes, not its storage
        key = (t.data_ptr(), t.numel() * t.element_size())
        if t.untyped_storage().data_ptr() not in self._params and key not in self._seen:
            self._seen.add(key)
            self._window += key[1]
            self.peak_bytes = max(self.peak_bytes, self._window)
        return t

    def __enter__(self):
        self._hook = self.model.register_forward_pre_hook(self._new_window)
        self._saved = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._saved.__enter__()
        return self

    def __exit__(self, *exc):
        self._saved.__exit__(*exc)
        self._hook.remove()
        # the hooks object holds self._pack, a bound method of this meter: a cycle that would keep the
        # meter, and through it the model, alive until the garbage collector runs; only peak_bytes stays
        self._saved = self._hook = self.model = None
        self._params, self._seen = set(), set()
        return False


def capture_activation_grads(model: nn.Module, inputs, targets, loss_fn) -> torch.Tensor:
    """Run one forward and backward pass and return every gradient that flows into a
    Linear layer's output, flattened into one fp32 tensor (the paper's Figure 3 data)."""
    outputs = []

    def keep(module, args, out):
        out.retain_grad()
        outputs.append(out)

    hooks = [m.register_forward_hook(keep) for m in model.modules() if isinstance(m, nn.Linear)]
    try:
        model.zero_grad(set_to_none=True)
        loss_fn(model(inputs), targets).backward()
    finally:
        for h in hooks:
            h.remove()
    return torch.cat([out.grad.detach().float().flatten() for out in outputs]).cpu()
