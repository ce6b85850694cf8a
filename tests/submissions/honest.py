"""Honest habits in real code: correct submissions whose graded functions use ordinary Python and torch habits
that an audit hook might mistake for an attack. Every one must keep full marks and must not be set aside for
review (tests/integration/test_honest_habits.py).

The other false positives (hostile_redteam.py's `real(...)` cases) put the habit in a side cell, which runs
while the notebook runs, when the sandbox denies introspection without a flag. Here the habit is in the code
the grader's probes call: a namedtuple made inside accumulate_gradients, logging finding its caller, a
warning pointing at the line that called, a traceback printed in an except block, a decorator, a debugger
call on a path that never runs, torch.utils.checkpoint, torch.compile. What a student's code does in a kernel
it must be able to do under the grader's probes, when the library (not the student's code) is the one that
looks at frames, and the student's frame only sits one level up.

Each variant changes the reference solution (tests/submissions/__init__.py) as little as its habit needs, and
its doc says what the habit is.
"""
from . import Append, NewCell, Replace, Variant


def honest(name, *edits, doc="", limits=None):
    # kind "realistic": correct code, full marks on every item (see judge); graded, with the review flags, by
    # tests/integration/test_honest_habits.py (tests/integration/test_realistic.py leaves them to it)
    return Variant(name, "realistic", tuple(edits), doc=doc, limits=limits or {})


REFERENCE_ACCUMULATE_BODY = '''
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''


def accumulate(body: str, decorators: str = "") -> Replace:
    """accumulate_gradients with the reference's signature and `body` (indented by four spaces)."""
    return Replace("accumulate_gradients", "accumulate_gradients", decorators + '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
''' + body.lstrip("\n"))


LOGGER_CELL = '''
import logging

logger = logging.getLogger("lesson20")
handler = logging.StreamHandler()
handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(funcName)s:%(lineno)d %(message)s"))
logger.addHandler(handler)
logger.setLevel(logging.DEBUG)
logger.propagate = False
logger.info("logging set up")
'''

HONEST = [
    honest("honest_namedtuple_in_accumulate", Append("accumulate_gradients", "import collections", first=True),
           accumulate('''
    Micro = collections.namedtuple("Micro", ["x", "y", "share"])  # made on every call: a habit, not a cost
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    micros = [Micro(inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size],
                    inputs[s:s + micro_batch_size].shape[0] / batch_size)
              for s in range(0, batch_size, micro_batch_size)]
    total_loss = 0.0
    for m in micros:
        loss = loss_fn(model(m.x), m.y)
        (loss * m.share).backward()
        total_loss += loss.item() * m.share
    return total_loss
'''), doc="collections.namedtuple created inside accumulate_gradients (namedtuple reads its caller's frame "
          "for __module__)"),
    honest("honest_dataclass_in_function", Append("mixed_precision_train_step", "from dataclasses import dataclass",
                                                   first=True),
           Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    @dataclass
    class Tally:
        """What the micro-batches add up to."""
        loss: float = 0.0
        examples: int = 0

    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    tally = Tally()
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        tally.loss += loss.item() * share
        tally.examples += x.shape[0]
    assert tally.examples == batch_size, tally
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return tally.loss, not found_inf
'''), doc="a @dataclass defined inside mixed_precision_train_step, to tally the micro-batches"),
    honest("honest_inspect_signature", Append("accumulate_gradients", "import inspect", first=True),
           accumulate('''
    try:
        inspect.signature(loss_fn).bind(None, None)  # fail early, with a clear message, on a wrong loss_fn
    except ValueError:
        pass  # a builtin without a signature: nothing to check
    except TypeError as exc:
        raise TypeError(f"loss_fn must take (output, target): {exc}") from None
''' + REFERENCE_ACCUMULATE_BODY), doc="inspect.signature(loss_fn).bind(...) inside accumulate_gradients, to check the "
                                      "loss function's arguments before the loop"),
    honest("honest_logging", NewCell("cell-01", LOGGER_CELL),
           accumulate('''
    logger.info("accumulate_gradients: %d examples in micro-batches of %d", inputs.shape[0], micro_batch_size)
''' + REFERENCE_ACCUMULATE_BODY),
           Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
def update(self, found_inf: bool) -> None:
    if found_inf:
        logger.debug("overflow: scale %g -> %g", self.scale, self.scale * self.backoff_factor)
        self.scale *= self.backoff_factor
        self.clean_steps = 0
        return
    self.clean_steps += 1
    if self.clean_steps == self.growth_interval:
        logger.debug("%d clean steps: scale %g -> %g", self.clean_steps, self.scale, self.scale * self.growth_factor)
        self.scale *= self.growth_factor
        self.clean_steps = 0
'''), doc="logging configured in a cell (a StreamHandler whose format names the function and line), "
          "logger.info in accumulate_gradients and logger.debug in DynamicLossScaler.update"),
    honest("honest_warnings_warn", Append("accumulate_gradients", "import warnings", first=True),
           accumulate('''
    if inputs.shape[0] % micro_batch_size:
        warnings.warn(f"the last micro-batch has only {inputs.shape[0] % micro_batch_size} of {micro_batch_size} "
                      "examples; it is weighted by its share", stacklevel=2)
''' + REFERENCE_ACCUMULATE_BODY), doc="warnings.warn(..., stacklevel=2) inside accumulate_gradients when the last "
                                      "micro-batch is smaller (the warning names the caller's line)"),
    honest("honest_traceback_print_exc", Append("master_weights", "import traceback", first=True),
           Replace("master_weights", "make_master_params", '''
def make_master_params(model):
    try:
        from apex.fp16_utils import prep_param_lists  # NVIDIA's version, where it is installed
    except ImportError:
        traceback.print_exc()  # why is apex missing? (left in from setting up the machine)
        prep_param_lists = None
    if prep_param_lists is not None:
        return prep_param_lists(model)[1]
    return [p.detach().to(torch.float32, copy=True).requires_grad_(True) for p in model.parameters()]
'''), doc="traceback.print_exc() in an except block that runs on every call of make_master_params "
          "(an optional import of apex that fails)"),
    honest("honest_lru_cache_helper", Append("accumulate_gradients", '''
import functools


@functools.lru_cache(maxsize=None)
def micro_slices(n, size):
    """(start, stop) of each micro-batch, computed once per (n, size)."""
    return tuple((start, min(start + size, n)) for start in range(0, n, size))
''', first=True), accumulate('''
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start, stop in micro_slices(batch_size, micro_batch_size):
        x, y = inputs[start:stop], targets[start:stop]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''), doc="a functools.lru_cache helper (the micro-batch boundaries) called by accumulate_gradients"),
    honest("honest_typing_namedtuple", Append("mixed_precision_train_step", '''
from typing import NamedTuple


class StepResult(NamedTuple):
    """What one step returns: it unpacks as (loss, stepped)."""
    loss: float
    stepped: bool
''', first=True), Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total_loss += loss.item() * share
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return StepResult(total_loss, not found_inf)
'''), doc="a typing.NamedTuple class StepResult(loss, stepped), which mixed_precision_train_step returns"),
    honest("honest_checkpoint_forward", Append("accumulate_gradients", "from torch.utils.checkpoint import checkpoint",
                                                first=True),
           accumulate('''
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        out = checkpoint(model, x, use_reentrant=False)  # keep no activations: recompute them in backward
        loss = loss_fn(out, y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''), doc="torch.utils.checkpoint.checkpoint(model, x, use_reentrant=False) for each micro-batch's forward in "
          "accumulate_gradients (the same gradients: the forward is recomputed exactly)"),
    # In a kernel (python -m tests.submissions.in_jupyter) this gets full marks. In the sandbox it once could not
    # run (dynamo's rebindings and code objects were flagged); then inductor compiling C++ in every item's fork
    # took over 300 s. The sandbox now runs compiled functions as written (TORCHDYNAMO_DISABLE=1).
    honest("honest_torch_compile_helper", Append("underflow_fraction", '''
@torch.compile(dynamic=True)
def _counts(values, cast):
    """(nonzero entries, nonzero entries that became 0) as 0-d tensors: one fused kernel."""
    nonzero = values != 0
    return nonzero.sum(), (nonzero & (cast == 0)).sum()
''', first=True), Replace("underflow_fraction", "underflow_fraction", '''
def underflow_fraction(values, dtype=torch.float16):
    count, flushed = _counts(values, values.to(dtype))
    count = int(count)
    return 0.0 if count == 0 else int(flushed) / count
'''), doc="torch.compile(dynamic=True) of the counting helper that underflow_fraction calls (inductor on the "
          "CPU: it compiles C++ with the machine's compiler, as in a student's kernel)"),
    # In a kernel the workers run and this gets full marks. In the sandbox /dev/shm was once not writable, so the
    # worker queues' semaphores could not be made, and the half-built iterator's __del__ raised; its printed
    # traceback made the interpreter parse dataloader.py's line (a "compile" event under a library's file name,
    # with the student's frame innermost). /dev/shm is now a private tmpfs, and a library file's own text
    # compiled under its name claims nothing.
    honest("honest_dataloader_workers", NewCell("accumulate_gradients", '''
from torch.utils.data import DataLoader, TensorDataset


def batches_of(x, y, batch_size, workers=2):
    """The usual input pipeline: shuffled batches, loaded by worker processes."""
    return DataLoader(TensorDataset(x, y), batch_size=batch_size, shuffle=True, num_workers=workers,
                      generator=torch.Generator().manual_seed(0))


torch.manual_seed(0)
net = nn.Linear(4, 3)
for xb, yb in batches_of(torch.randn(64, 4), torch.randint(0, 3, (64,)), batch_size=16):
    print(f"batch of {len(xb)}: loss {accumulate_gradients(net, F.cross_entropy, xb, yb, 4):.4f}")
for xb, yb in DataLoader(TensorDataset(torch.randn(8, 4), torch.zeros(8, dtype=torch.long)), batch_size=4,
                         num_workers=2):
    print(xb.shape, yb.tolist())
'''), doc="a torch.utils.data.DataLoader with num_workers=2 (worker processes), in a helper and inline, iterated "
          "in a cell that feeds accumulate_gradients"),
    honest("honest_pdb_never_runs", accumulate('''
    if micro_batch_size < 1:
        import pdb
        pdb.set_trace()  # how did I get here? (never taken: the checks pass micro_batch_size >= 1)
''' + REFERENCE_ACCUMULATE_BODY), doc="pdb.set_trace() inside accumulate_gradients, on a path that never runs"),
    honest("honest_timeit_time_magics", Append("underflow_fraction", '''
%timeit underflow_fraction(torch.randn(10_000))
'''), NewCell("accumulate_gradients", '''
%%time
net = nn.Linear(16, 4)
print(accumulate_gradients(net, F.cross_entropy, torch.randn(256, 16), torch.randint(0, 4, (256,)), 32))
'''), Append("mixed_precision_train_step", '''
%time _ = [underflow_fraction(torch.randn(1000)) for _ in range(10)]
'''), doc="%timeit and %time at the end of solution cells, and a %%time cell that calls accumulate_gradients"),
    honest("honest_autoreload", NewCell("cell-01", '''
%load_ext autoreload
%autoreload 2
import autograder.lesson as lesson_module  # the course's helpers, reloaded when they change
'''), doc="%load_ext autoreload and %autoreload 2 in a cell of their own, then an import"),
    honest("honest_contextmanager_helper", Append("master_weights", '''
import contextlib


@contextlib.contextmanager
def untracked():
    """Writes inside this block are not recorded by autograd."""
    with torch.no_grad():
        yield
''', first=True), Replace("master_weights", "master_params_to_model_params", '''
def master_params_to_model_params(model_params, master_params) -> None:
    with untracked():
        for p, master in zip(model_params, master_params):
            p.copy_(master)
'''), Append("accumulate_gradients", '''
import contextlib
import time


@contextlib.contextmanager
def timed(times: list):
    started = time.perf_counter()
    try:
        yield
    finally:
        times.append(time.perf_counter() - started)
''', first=True), accumulate('''
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss, times = 0.0, []
    for start in range(0, batch_size, micro_batch_size):
        with timed(times):
            x = inputs[start:start + micro_batch_size]
            y = targets[start:start + micro_batch_size]
            share = x.shape[0] / batch_size
            loss = loss_fn(model(x), y)
            (loss * share).backward()
            total_loss += loss.item() * share
    return total_loss
'''), doc="contextlib.contextmanager helpers (a no_grad wrapper, a timer with try/finally) used by "
          "master_params_to_model_params and accumulate_gradients"),
    honest("honest_wraps_decorator", Append("accumulate_gradients", '''
import functools
import math


def finite_loss(fn):
    """Complain, without changing anything, when the function returns a loss that is not finite."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        result = fn(*args, **kwargs)
        loss = result[0] if isinstance(result, tuple) else result
        if not math.isfinite(loss):
            print(f"{fn.__name__}: the loss is {loss}")
        return result
    return wrapper
''', first=True), accumulate(REFERENCE_ACCUMULATE_BODY, decorators="@finite_loss"),
           Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
@finite_loss
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total_loss += loss.item() * share
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return total_loss, not found_inf
'''), doc="a functools.wraps decorator (a finite-loss check) on accumulate_gradients and on "
          "mixed_precision_train_step; the step's cell uses it from the accumulate cell above"),
    honest("honest_getsizeof", Append("master_weights", "import sys", first=True),
           Replace("master_weights", "make_master_params", '''
def make_master_params(model):
    masters = [p.detach().to(torch.float32, copy=True).requires_grad_(True) for p in model.parameters()]
    data = sum(m.element_size() * m.nelement() for m in masters)
    print(f"{len(masters)} masters: {data} bytes of data, {sys.getsizeof(masters)} bytes of list")
    return masters
'''), doc="sys.getsizeof inside make_master_params, printed beside the masters' data size"),
    honest("honest_deepcopy_model", Append("master_weights", "import copy", first=True),
           Replace("master_weights", "make_master_params", '''
def make_master_params(model):
    twin = copy.deepcopy(model).float()  # a copy of the whole model, in fp32; the model itself is untouched
    return [p.detach().requires_grad_(True) for p in twin.parameters()]
'''), doc="copy.deepcopy of the model inside make_master_params (an fp32 twin whose parameters are the masters)"),
    honest("honest_tqdm_in_loop", Append("token_accumulation", "from tqdm.auto import tqdm", first=True),
           Replace("token_accumulation", "accumulate_token_gradients", '''
def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
    counted = int((targets != ignore_index).sum())
    if counted == 0:
        raise ValueError("every target is ignore_index: no token to average over")
    model.zero_grad(set_to_none=True)
    total_loss = 0.0
    for start in tqdm(range(0, inputs.shape[0], micro_batch_size), desc="micro-batches", leave=False):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        logits = model(x)
        loss_sum = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index, reduction="sum")
        (loss_sum / counted).backward()
        total_loss += loss_sum.item()
    return total_loss / counted
'''), doc="a tqdm.auto progress bar around the micro-batch loop of accumulate_token_gradients"),
    honest("honest_print_fstring", Replace("static_loss_scaler", "StaticLossScaler.unscale_", '''
def unscale_(self, params) -> bool:
    found_inf = False
    for i, p in enumerate(params):
        if p.grad is None:
            print(f"param {i}: no grad")
            continue
        p.grad.div_(self.scale)
        finite = bool(torch.isfinite(p.grad).all())
        print(f"param {i}: {tuple(p.grad.shape)} {p.grad.dtype}, finite={finite}, scale={self.scale:g}")
        found_inf = found_inf or not finite
    return found_inf
'''), Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
def update(self, found_inf: bool) -> None:
    print(f"update({found_inf!r}): scale={self.scale:.1f}, clean_steps={self.clean_steps}")
    if found_inf:
        self.scale *= self.backoff_factor
        self.clean_steps = 0
        return
    self.clean_steps += 1
    if self.clean_steps == self.growth_interval:
        self.scale *= self.growth_factor
        self.clean_steps = 0
'''), doc="print(f\"...\") debugging left in StaticLossScaler.unscale_ and DynamicLossScaler.update"),
    honest("honest_perf_counter", Append("accumulate_gradients", "import time", first=True), accumulate('''
    started = time.perf_counter()
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    print(f"accumulate_gradients: {1000 * (time.perf_counter() - started):.2f} ms")
    return total_loss
'''), doc="time.perf_counter() timing of accumulate_gradients, printed at the end"),
    honest("honest_no_grad_decorator", Replace("master_weights", "master_params_to_model_params", '''
@torch.no_grad()
def master_params_to_model_params(model_params, master_params) -> None:
    for p, master in zip(model_params, master_params):
        p.copy_(master)
'''), Replace("master_weights", "model_grads_to_master_grads", '''
@torch.no_grad()
def model_grads_to_master_grads(model_params, master_params) -> None:
    for p, master in zip(model_params, master_params):
        master.grad = None if p.grad is None else p.grad.detach().to(torch.float32, copy=True)
'''), doc="@torch.no_grad() as a decorator on master_params_to_model_params and model_grads_to_master_grads"),
    honest("honest_enum", Append("dynamic_loss_scaler", '''
import enum


class Change(enum.Enum):
    BACK_OFF = "back off"
    GROW = "grow"
    KEEP = "keep"
''', first=True), Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
def update(self, found_inf: bool) -> None:
    if found_inf:
        change = Change.BACK_OFF
    else:
        self.clean_steps += 1
        change = Change.GROW if self.clean_steps == self.growth_interval else Change.KEEP
    if change is Change.BACK_OFF:
        self.scale *= self.backoff_factor
        self.clean_steps = 0
    elif change is Change.GROW:
        self.scale *= self.growth_factor
        self.clean_steps = 0
'''), doc="an enum.Enum of the scale's changes (back off, grow, keep), chosen and acted on in "
          "DynamicLossScaler.update"),
    honest("honest_abc_base", Replace("static_loss_scaler", None, '''
import abc


class LossScaler(abc.ABC):
    """What every loss scaler does; the subclasses say how."""

    @abc.abstractmethod
    def scale_loss(self, loss):
        ...

    @abc.abstractmethod
    def unscale_(self, params) -> bool:
        ...


class StaticLossScaler(LossScaler):
    def __init__(self, scale: float = 1024.0):
        self.scale = float(scale)

    def scale_loss(self, loss):
        return loss * self.scale

    def unscale_(self, params) -> bool:
        found_inf = False
        for p in params:
            if p.grad is None:
                continue
            p.grad.div_(self.scale)
            found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
        return found_inf
'''), doc="an abc.ABC base class LossScaler with abstract methods, which StaticLossScaler (and so "
          "DynamicLossScaler) subclasses"),
    honest("honest_slots", Replace("static_loss_scaler", None, '''
class StaticLossScaler:
    __slots__ = ("scale",)

    def __init__(self, scale: float = 1024.0):
        self.scale = float(scale)

    def scale_loss(self, loss):
        return loss * self.scale

    def unscale_(self, params) -> bool:
        found_inf = False
        for p in params:
            if p.grad is None:
                continue
            p.grad.div_(self.scale)
            found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
        return found_inf
'''), doc="__slots__ = ('scale',) on StaticLossScaler (DynamicLossScaler, without slots of its own, "
          "keeps a __dict__)"),
    honest("honest_itertools", Append("accumulate_gradients", "import itertools", first=True), accumulate('''
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    bounds = list(itertools.takewhile(lambda s: s < batch_size, itertools.count(0, micro_batch_size)))
    total_loss = 0.0
    for start, stop in itertools.pairwise(bounds + [batch_size]):
        x, y = inputs[start:stop], targets[start:stop]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''), doc="itertools.count, takewhile and pairwise for the micro-batch boundaries in accumulate_gradients"),
    honest("honest_seeds_in_function", NewCell("accumulate_gradients", '''
import random


def toy_problem(seed: int, n: int = 12):
    """The same small problem every time: seeds set inside the function."""
    random.seed(seed)
    torch.manual_seed(seed)
    micro = random.choice([2, 3, 4, 5])
    return nn.Linear(5, 3), torch.randn(n, 5), torch.randint(0, 3, (n,)), micro


for seed in range(3):
    net, xb, yb, micro = toy_problem(seed)
    net.zero_grad()
    F.cross_entropy(net(xb), yb).backward()
    full = [p.grad.clone() for p in net.parameters()]
    accumulate_gradients(net, F.cross_entropy, xb, yb, micro)
    assert all(torch.allclose(p.grad, g, atol=1e-6) for p, g in zip(net.parameters(), full)), seed
print("ok")
'''), doc="random.seed and torch.manual_seed inside a helper that builds a toy problem for the student's own "
          "test of accumulate_gradients"),
    honest("honest_numpy_interop", Append("underflow_fraction", "import numpy as np", first=True),
           Replace("underflow_fraction", "underflow_fraction", '''
def underflow_fraction(values, dtype=torch.float16):
    nonzero = (values != 0).cpu().numpy()
    flushed = nonzero & (values.to(dtype) == 0).cpu().numpy()
    count = int(np.count_nonzero(nonzero))
    return 0.0 if count == 0 else float(np.count_nonzero(flushed)) / count
'''), doc="numpy interop in underflow_fraction: boolean masks as numpy arrays, counted with np.count_nonzero"),
    honest("honest_math_isfinite", Append("mixed_precision_train_step", "import math", first=True),
           Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total_loss += loss.item() * share
    if not math.isfinite(total_loss):
        print(f"the loss is {total_loss}: this step will probably be skipped")
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return total_loss, not found_inf
'''), doc="math.isfinite on the step's loss inside mixed_precision_train_step, with a printed warning"),
    honest("honest_gc_collect", Append("token_accumulation", "import gc", first=True),
           Replace("token_accumulation", "accumulate_token_gradients", '''
def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
    counted = int((targets != ignore_index).sum())
    if counted == 0:
        raise ValueError("every target is ignore_index: no token to average over")
    model.zero_grad(set_to_none=True)
    total_loss = 0.0
    for start in range(0, inputs.shape[0], micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        logits = model(x)
        loss_sum = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index, reduction="sum")
        (loss_sum / counted).backward()
        total_loss += loss_sum.item()
        del logits, loss_sum
        gc.collect()  # free the micro-batch's activations before the next one (a habit from GPU work)
    return total_loss / counted
'''), doc="gc.collect() between micro-batches in accumulate_token_gradients, after del of the activations"),
    honest("honest_generator_seed_in_helper", Append("token_accumulation", '''
def shuffled_order(n: int, seed: int = 0) -> list:
    """A fixed shuffle of range(n): the same order on every call."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randperm(n, generator=generator).tolist()
''', first=True), Replace("token_accumulation", "accumulate_token_gradients", '''
def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
    counted = int((targets != ignore_index).sum())
    if counted == 0:
        raise ValueError("every target is ignore_index: no token to average over")
    model.zero_grad(set_to_none=True)
    order = shuffled_order(inputs.shape[0])  # micro-batches in a shuffled order: the sum is the same
    total_loss = 0.0
    for start in range(0, len(order), micro_batch_size):
        rows = order[start:start + micro_batch_size]
        x, y = inputs[rows], targets[rows]
        loss_sum = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=ignore_index, reduction="sum")
        (loss_sum / counted).backward()
        total_loss += loss_sum.item()
    return total_loss / counted
'''), doc="a torch.Generator().manual_seed(...) inside a helper of accumulate_token_gradients, to visit the "
          "micro-batches in a fixed shuffled order"),
]
