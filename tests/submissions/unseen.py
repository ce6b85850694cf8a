"""A held-out set of submissions to Lesson 20, written without seeing the corpus or the checks.

Two kinds, graded once to judge the grader on mistakes nobody tuned the checks to:

* "buggy": a mistake real students make, in one exercise (`item`); it must lose points there and only
  there. `cause` (or one of `synonyms`) is what a good first failure message would name; `core` marks a
  mistake that misses the exercise's whole point (the item should keep at most half its points).
* "realistic": a correct solution written differently from the reference, in a messy notebook
  (scratch cells, outputs, CRLF, no cell ids, moved and copied cells, magics): full marks.

Not part of the CI suite (they are not in `_all_variants()`). Grade them with

    python -m tests.submissions.unseen [--out FILE]
"""
import argparse
import concurrent.futures as futures
import json
import multiprocessing
import sys
import textwrap
import time

from . import (CopyCell, DropCellIds, ExecutionCounts, LineEndings, MoveCell, NewCell, Outputs, Replace,
               TabIndent, Variant, full_marks)

JOBS = 2


def mistake(name, item, cause, doc, *edits, synonyms=(), core=False):
    return Variant(name, "buggy", tuple(edits), item=item, doc=doc, cause=cause, synonyms=tuple(synonyms),
                   core=core)


def messy(name, doc, *edits):
    return Variant(name, "realistic", tuple(edits), doc=doc)


def printed(cell, text, count):
    """What a cell that printed `text` keeps stored."""
    return Outputs(cell, ({"output_type": "stream", "name": "stdout", "text": text},), count)


# ---- Exercise 1: underflow_fraction ----

UF = "underflow_fraction"
UNDERFLOW = [
    mistake("unseen_uf_divides_by_numel", UF, "nonzero",
            "divides by every entry, zeros included, instead of by the nonzero ones",
            Replace(UF, "underflow_fraction", '''
                def underflow_fraction(values, dtype=torch.float16):
                    flushed = (values != 0) & (values.to(dtype) == 0)
                    if values.numel() == 0:
                        return 0.0
                    return flushed.sum().item() / values.numel()
            '''), synonyms=("zero", "denominator"), core=True),
    mistake("unseen_uf_tiny_threshold", UF, "round",
            "counts every value below the dtype's smallest normal number as flushed, so subnormals that survive "
            "the cast are counted",
            Replace(UF, "underflow_fraction", '''
                def underflow_fraction(values, dtype=torch.float16):
                    # anything smaller than the smallest number the dtype can hold is lost
                    smallest = torch.finfo(dtype).tiny
                    nonzero = values[values != 0]
                    if len(nonzero) == 0:
                        return 0.0
                    lost = (nonzero.abs() < smallest).sum().item()
                    return lost / len(nonzero)
            '''), synonyms=("subnormal", "cast", "2^-24", "rounding"), core=True),
    mistake("unseen_uf_returns_tensor", UF, "float",
            "returns a 0-d tensor instead of a Python float",
            Replace(UF, "underflow_fraction", '''
                def underflow_fraction(values, dtype=torch.float16):
                    nonzero = values != 0
                    if not nonzero.any():
                        return 0.0
                    return ((values.to(dtype) == 0) & nonzero).sum() / nonzero.sum()
            '''), synonyms=("tensor", "python")),
    mistake("unseen_uf_nan_not_counted", UF, "nan",
            "tests abs(v) > 0 for 'nonzero', which is False for NaN, so NaN leaves the denominator",
            Replace(UF, "underflow_fraction", '''
                def underflow_fraction(values, dtype=torch.float16):
                    mask = values.abs() > 0
                    n = int(mask.sum())
                    if n == 0:
                        return 0.0
                    cast = values.to(dtype)
                    return float(((cast == 0) & mask).sum()) / n
            '''), synonyms=("inf", "nonzero")),
    mistake("unseen_uf_always_half", UF, "dtype",
            "casts with .half() whatever dtype is asked for",
            Replace(UF, "underflow_fraction", '''
                def underflow_fraction(values, dtype=torch.float16):
                    nz = values != 0
                    total = nz.sum().item()
                    if total == 0:
                        return 0.0
                    return (nz & (values.half() == 0)).sum().item() / total
            '''), synonyms=("bfloat16", "bf16")),
]

# ---- Exercise 2: StaticLossScaler ----

SLS = "static_loss_scaler"
STATIC = [
    mistake("unseen_sls_scale_loss_item", SLS, "graph",
            "scale_loss multiplies loss.item(): a float cut off from the autograd graph",
            Replace(SLS, "StaticLossScaler.scale_loss", '''
                def scale_loss(self, loss):
                    return loss.item() * self.scale
            '''), synonyms=("backward", "attached", "grad_fn", "tensor"), core=True),
    mistake("unseen_sls_unscale_rebinds", SLS, "in place",
            "unscale_ rebinds p.grad to a new tensor instead of dividing it in place",
            Replace(SLS, "StaticLossScaler.unscale_", '''
                def unscale_(self, params):
                    overflow = False
                    for p in params:
                        if p.grad is not None:
                            p.grad = p.grad / self.scale
                            if not torch.isfinite(p.grad).all():
                                overflow = True
                    return overflow
            '''), synonyms=("in-place", "same tensor", "div_")),
    mistake("unseen_sls_generator_twice", SLS, "generator",
            "unscale_ walks params twice (divide, then look for inf): a generator is empty the second time",
            Replace(SLS, "StaticLossScaler.unscale_", '''
                def unscale_(self, params):
                    for p in params:
                        if p.grad is not None:
                            p.grad.div_(self.scale)
                    return any(not torch.isfinite(p.grad).all() for p in params if p.grad is not None)
            '''), synonyms=("once", "one-shot", "twice")),
    mistake("unseen_sls_isinf_only", SLS, "nan",
            "looks for inf only, so a NaN gradient is not reported as an overflow",
            Replace(SLS, "StaticLossScaler.unscale_", '''
                def unscale_(self, params):
                    found = False
                    for p in params:
                        if p.grad is None:
                            continue
                        p.grad /= self.scale
                        if torch.isinf(p.grad).any():
                            found = True
                    return found
            '''), synonyms=("overflow",)),
    mistake("unseen_sls_class_attribute", SLS, "share",
            "stores the scale on the class, so every scaler has the scale of the one made last",
            Replace(SLS, "StaticLossScaler.__init__", '''
                def __init__(self, scale: float = 1024.0):
                    StaticLossScaler.scale = float(scale)
            '''), synonyms=("instance", "class attribute", "another scaler", "other scaler")),
]

# ---- Exercise 3: DynamicLossScaler ----

DLS = "dynamic_loss_scaler"
DYNAMIC = [
    mistake("unseen_dls_divides_by_backoff", DLS, "backoff",
            "divides by backoff_factor on overflow (0.5: the scale doubles instead of halving)",
            Replace(DLS, "DynamicLossScaler.update", '''
                def update(self, found_inf):
                    if found_inf:
                        self.scale = self.scale / self.backoff_factor  # back off
                        self.clean_steps = 0
                    else:
                        self.clean_steps += 1
                        if self.clean_steps == self.growth_interval:
                            self.scale = self.scale * self.growth_factor
                            self.clean_steps = 0
            '''), synonyms=("overflow", "back off", "backoff_factor"), core=True),
    mistake("unseen_dls_count_survives_overflow", DLS, "restart",
            "an overflow backs off but does not restart the count of clean steps",
            Replace(DLS, "DynamicLossScaler.update", '''
                def update(self, found_inf):
                    if found_inf:
                        self.scale *= self.backoff_factor
                        return
                    self.clean_steps += 1
                    if self.clean_steps >= self.growth_interval:
                        self.scale *= self.growth_factor
                        self.clean_steps = 0
            '''), synonyms=("reset", "in a row", "count", "clean")),
    mistake("unseen_dls_grows_one_late", DLS, "growth_interval",
            "grows only once the count exceeds growth_interval: one clean step too late",
            Replace(DLS, "DynamicLossScaler.update", '''
                def update(self, found_inf):
                    if found_inf:
                        self.scale *= self.backoff_factor
                        self.clean_steps = 0
                    elif self.clean_steps >= self.growth_interval:
                        self.scale *= self.growth_factor
                        self.clean_steps = 0
                    else:
                        self.clean_steps += 1
            '''), synonyms=("grow", "interval", "clean steps", "too late")),
    mistake("unseen_dls_minimum_scale", DLS, "minimum",
            "clamps the scale at 1.0 when backing off; the exercise has no minimum scale",
            Replace(DLS, "DynamicLossScaler.update", '''
                def update(self, found_inf):
                    if found_inf:
                        self.scale = max(1.0, self.scale * self.backoff_factor)  # never below 1
                        self.clean_steps = 0
                        return
                    self.clean_steps += 1
                    if self.clean_steps == self.growth_interval:
                        self.scale *= self.growth_factor
                        self.clean_steps = 0
            '''), synonyms=("min", "clamp", "below 1", "floor")),
    mistake("unseen_dls_mutable_default_history", DLS, "share",
            "keeps the run of clean steps in a list given as a mutable default: every scaler shares it",
            Replace(DLS, "DynamicLossScaler", '''
                class DynamicLossScaler(StaticLossScaler):
                    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                                 backoff_factor: float = 0.5, growth_interval: int = 2000, history=[]):
                        super().__init__(init_scale)
                        self.growth_factor = growth_factor
                        self.backoff_factor = backoff_factor
                        self.growth_interval = growth_interval
                        self.history = history  # clean steps since the last change

                    def update(self, found_inf: bool) -> None:
                        if found_inf:
                            self.scale *= self.backoff_factor
                            self.history.clear()
                            return
                        self.history.append(True)
                        if len(self.history) == self.growth_interval:
                            self.scale *= self.growth_factor
                            self.history.clear()
            '''), synonyms=("instance", "another scaler", "independent", "other scaler")),
    mistake("unseen_dls_no_super_init", DLS, "attribute",
            "does not call the parent __init__ and keeps its scale as current_scale: scale is missing",
            Replace(DLS, "DynamicLossScaler", '''
                class DynamicLossScaler(StaticLossScaler):
                    def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                        self.current_scale = float(init_scale)
                        self.growth_factor = growth_factor
                        self.backoff_factor = backoff_factor
                        self.growth_interval = growth_interval
                        self.good_steps = 0

                    def update(self, found_inf):
                        if found_inf:
                            self.current_scale *= self.backoff_factor
                            self.good_steps = 0
                        else:
                            self.good_steps += 1
                            if self.good_steps == self.growth_interval:
                                self.current_scale *= self.growth_factor
                                self.good_steps = 0
            '''), synonyms=("scale", "super", "AttributeError"), core=True),
]

# ---- Exercise 4: master weights ----

MW = "master_weights"
MASTER = [
    mistake("unseen_mw_float_aliases_fp32", MW, "share",
            "detach().float(): for a model already in fp32, .float() returns the same tensor, so the master is "
            "the parameter's own memory",
            Replace(MW, "make_master_params", '''
                def make_master_params(model):
                    masters = []
                    for p in model.parameters():
                        m = p.detach().float()
                        m.requires_grad = True
                        masters.append(m)
                    return masters
            '''), synonyms=("memory", "copy", "clone", "own"), core=True),
    mistake("unseen_mw_copy_back_sets_data", MW, "dtype",
            "copy back assigns p.data = master.data: the model turns fp32 and shares the master's memory",
            Replace(MW, "master_params_to_model_params", '''
                def master_params_to_model_params(model_params, master_params):
                    for p, m in zip(model_params, master_params):
                        p.data = m.data
            '''), synonyms=("fp16", "float16", "half", "share", "memory"), core=True),
    mistake("unseen_mw_copy_back_list_entries", MW, "in place",
            "copy back replaces the entries of the list it was given; the model itself never changes",
            Replace(MW, "master_params_to_model_params", '''
                def master_params_to_model_params(model_params, master_params):
                    for i in range(len(master_params)):
                        model_params[i] = master_params[i].detach().half()
            '''), synonyms=("existing", "copy_", "unchanged", "generator", "not changed"), core=True),
    mistake("unseen_mw_copy_back_tracked", MW, "no_grad",
            "copy back calls p.copy_ without torch.no_grad(): autograd refuses an in-place write to a leaf",
            Replace(MW, "master_params_to_model_params", '''
                def master_params_to_model_params(model_params, master_params):
                    for p, m in zip(model_params, master_params):
                        p.copy_(m.detach())
            '''), synonyms=("autograd", "leaf", "untracked", "in-place"), core=True),
    mistake("unseen_mw_copy_back_freezes_model", MW, "requires_grad",
            "copy back turns requires_grad off on the model's parameters to be allowed to write into them",
            Replace(MW, "master_params_to_model_params", '''
                def master_params_to_model_params(model_params, master_params):
                    for p, m in zip(model_params, master_params):
                        p.requires_grad_(False)  # otherwise copy_ complains about a leaf
                        p.copy_(m)
            '''), synonyms=("requires grad", "frozen", "trainable")),
    mistake("unseen_mw_grads_float_share", MW, "share",
            "master grad = p.grad.float(): the same tensor as the model's grad when the model is fp32",
            Replace(MW, "model_grads_to_master_grads", '''
                def model_grads_to_master_grads(model_params, master_params):
                    for p, m in zip(model_params, master_params):
                        if p.grad is not None:
                            m.grad = p.grad.float()
                        else:
                            m.grad = None
            '''), synonyms=("memory", "copy", "clone")),
    mistake("unseen_mw_grads_none_to_zeros", MW, "none",
            "a missing model gradient becomes a zero master gradient instead of None",
            Replace(MW, "model_grads_to_master_grads", '''
                def model_grads_to_master_grads(model_params, master_params):
                    for p, m in zip(model_params, master_params):
                        g = p.grad if p.grad is not None else torch.zeros_like(p)
                        m.grad = g.detach().to(torch.float32, copy=True)
            '''), synonyms=("zero", "missing")),
]

# ---- Exercise 5: accumulate_gradients ----

AG = "accumulate_gradients"
ACCUMULATE = [
    mistake("unseen_ag_divides_by_count", AG, "share",
            "weights each micro-batch by 1/k (k micro-batches), wrong when the last one is smaller",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    model.zero_grad()
                    n_micro = math.ceil(len(inputs) / micro_batch_size)
                    total = 0.0
                    for i in range(n_micro):
                        xb = inputs[i * micro_batch_size:(i + 1) * micro_batch_size]
                        yb = targets[i * micro_batch_size:(i + 1) * micro_batch_size]
                        loss = loss_fn(model(xb), yb) / n_micro
                        loss.backward()
                        total += loss.item()
                    return total
            '''), synonyms=("weight", "last micro-batch", "smaller", "1/k"), core=True),
    mistake("unseen_ag_keeps_stale_grads", AG, "stale",
            "never clears the gradients already there, so they are added to",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    n = len(inputs)
                    total = 0.0
                    for s in range(0, n, micro_batch_size):
                        out = model(inputs[s:s + micro_batch_size])
                        y = targets[s:s + micro_batch_size]
                        w = len(y) / n
                        loss = loss_fn(out, y)
                        (w * loss).backward()
                        total += w * loss.item()
                    return total
            '''), synonyms=("before the call", "zero_grad", "discard", "leftover", "already")),
    mistake("unseen_ag_zero_grad_each_micro_batch", AG, "zero",
            "zeroes the gradients inside the loop, so only the last micro-batch's gradient is left",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    N = inputs.shape[0]
                    total = 0.0
                    for start in range(0, N, micro_batch_size):
                        model.zero_grad()
                        x = inputs[start:start + micro_batch_size]
                        y = targets[start:start + micro_batch_size]
                        loss = loss_fn(model(x), y) * (x.shape[0] / N)
                        loss.backward()
                        total += loss.item()
                    return total
            '''), synonyms=("last micro-batch", "accumulat", "only")),
    mistake("unseen_ag_forward_whole_batch", AG, "micro_batch_size",
            "runs the model on the whole batch once and splits only the loss",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    model.zero_grad(set_to_none=True)
                    outputs = model(inputs)
                    n = len(inputs)
                    total = 0.0
                    for s in range(0, n, micro_batch_size):
                        part = loss_fn(outputs[s:s + micro_batch_size], targets[s:s + micro_batch_size])
                        part = part * min(micro_batch_size, n - s) / n
                        part.backward(retain_graph=True)
                        total += part.item()
                    return total
            '''), synonyms=("at a time", "at most", "examples", "memory"), core=True),
    mistake("unseen_ag_one_backward", AG, "graph",
            "adds the weighted losses up and calls backward() once: every micro-batch's graph stays alive",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    model.zero_grad(set_to_none=True)
                    n = len(inputs)
                    total_loss = 0
                    for s in range(0, n, micro_batch_size):
                        x, y = inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size]
                        total_loss = total_loss + loss_fn(model(x), y) * len(x) / n
                    total_loss.backward()
                    return total_loss.item()
            '''), synonyms=("memory", "alive", "backward"), core=True),
    mistake("unseen_ag_drops_remainder", AG, "last",
            "loops over len(inputs) // micro_batch_size full micro-batches: the remainder is dropped",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    model.zero_grad()
                    steps = len(inputs) // micro_batch_size
                    running = 0.0
                    for i in range(steps):
                        x = inputs[i * micro_batch_size:(i + 1) * micro_batch_size]
                        y = targets[i * micro_batch_size:(i + 1) * micro_batch_size]
                        loss = loss_fn(model(x), y)
                        (loss / steps).backward()
                        running += loss.item() / steps
                    return running
            '''), synonyms=("smaller", "remainder", "every example", "leftover"), core=True),
    mistake("unseen_ag_returns_tensor", AG, "float",
            "returns the accumulated loss as a tensor",
            Replace(AG, "accumulate_gradients", '''
                def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                    model.zero_grad(set_to_none=True)
                    n = inputs.shape[0]
                    total = torch.zeros(())
                    for s in range(0, n, micro_batch_size):
                        x, y = inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size]
                        loss = loss_fn(model(x), y) * (x.shape[0] / n)
                        loss.backward()
                        total += loss.detach().cpu()
                    return total
            '''), synonyms=("tensor", "python")),
]

# ---- Exercise 6: mixed_precision_train_step ----

MP = "mixed_precision_train_step"


def step_with(*parts: str) -> Replace:
    """Exercise 6's function whose body is these parts, one after the other."""
    head = ("def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,\n"
            "                               micro_batch_size, max_grad_norm=None):\n")
    body = "\n".join(textwrap.indent(textwrap.dedent(part).strip("\n"), "    ") for part in parts)
    return Replace(MP, "mixed_precision_train_step", head + body)


ACCUMULATE_SCALED = '''
    params = list(model.parameters())
    dtype = params[0].dtype
    model.zero_grad(set_to_none=True)
    n = inputs.shape[0]
    total = 0.0
    for s in range(0, n, micro_batch_size):
        x, y = inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size]
        if x.is_floating_point():
            x = x.to(dtype)
        share = x.shape[0] / n
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total += loss.item() * share
'''
TRAIN = [
    mistake("unseen_mp_steps_on_overflow", MP, "overflow",
            "steps the optimizer and copies back even when unscale_ found inf",
            step_with(ACCUMULATE_SCALED, '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                optimizer.step()
                master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("skip", "inf", "nan"), core=True),
    mistake("unseen_mp_clips_before_unscale", MP, "unscale",
            "clips the master gradients while they are still scaled",
            step_with(ACCUMULATE_SCALED, '''
                model_grads_to_master_grads(params, master_params)
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("clip", "scaled", "norm")),
    mistake("unseen_mp_unscales_in_fp16", MP, "fp32",
            "unscales the fp16 model gradients, where small ones underflow, then copies them to the masters",
            step_with(ACCUMULATE_SCALED, '''
                found_inf = scaler.unscale_(params)
                model_grads_to_master_grads(params, master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("underflow", "master", "fp16", "tiny"), core=True),
    mistake("unseen_mp_never_scales_loss", MP, "scale",
            "backpropagates the unscaled loss, then divides the gradients by the scale anyway",
            step_with('''
                params = list(model.parameters())
                model.zero_grad(set_to_none=True)
                n = inputs.shape[0]
                total = 0.0
                for s in range(0, n, micro_batch_size):
                    x, y = inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size]
                    if x.is_floating_point():
                        x = x.half()
                    loss = loss_fn(model(x).float(), y) * (len(x) / n)
                    loss.backward()
                    total += loss.item()
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("scaled", "scale_loss", "loss scaling"), core=True),
    mistake("unseen_mp_update_twice_on_overflow", MP, "update",
            "on overflow calls scaler.update(True) in the skip branch and again at the end: backs off twice",
            step_with(ACCUMULATE_SCALED, '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if found_inf:
                    scaler.update(True)  # back off
                else:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("once", "twice", "back off", "backoff")),
    mistake("unseen_mp_resyncs_masters", MP, "master",
            "refreshes the fp32 masters from the fp16 model at the start of each step: small updates are lost",
            step_with('''
                with torch.no_grad():
                    for m, p in zip(master_params, model.parameters()):
                        m.copy_(p.float())  # keep the masters in sync with the model
            ''', ACCUMULATE_SCALED, '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("overwrit", "fp32", "small update", "add up"), core=True),
    mistake("unseen_mp_casts_token_ids", MP, "integer",
            "casts every input to the model's dtype, token ids included",
            step_with(ACCUMULATE_SCALED.replace("        if x.is_floating_point():\n            x = x.to(dtype)",
                                                "        x = x.to(dtype)"), '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("token", "int", "long", "embedding", "index")),
    mistake("unseen_mp_keeps_stale_grads", MP, "stale",
            "never clears the model's gradients, so those from before the call leak into the step",
            step_with(ACCUMULATE_SCALED.replace("    model.zero_grad(set_to_none=True)\n", ""), '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("before the call", "leftover", "zero_grad", "left over")),
    mistake("unseen_mp_weights_by_count", MP, "share",
            "divides each micro-batch's loss by the number of micro-batches",
            step_with('''
                params = list(model.parameters())
                model.zero_grad(set_to_none=True)
                chunks = list(zip(inputs.split(micro_batch_size), targets.split(micro_batch_size)))
                total = 0.0
                for x, y in chunks:
                    if x.is_floating_point():
                        x = x.to(params[0].dtype)
                    loss = loss_fn(model(x).float(), y) / len(chunks)
                    scaler.scale_loss(loss).backward()
                    total += loss.item()
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("weight", "last micro-batch", "smaller"), core=True),
    mistake("unseen_mp_loss_in_fp16", MP, "fp32",
            "computes (and scales) the loss in fp16, where loss * scale overflows",
            step_with(ACCUMULATE_SCALED.replace("loss_fn(model(x).float(), y)", "loss_fn(model(x), y)"), '''
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("float()", "overflow", "float32")),
    mistake("unseen_mp_zero_grad_before_copy", MP, "order",
            "clears the gradients after the micro-batch loop (before copying them to the masters): the step "
            "has no gradient",
            step_with(ACCUMULATE_SCALED, '''
                model.zero_grad()  # clean up before the optimizer step
                model_grads_to_master_grads(params, master_params)
                found_inf = scaler.unscale_(master_params)
                if not found_inf:
                    if max_grad_norm is not None:
                        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                    optimizer.step()
                    master_params_to_model_params(params, master_params)
                scaler.update(found_inf)
                return total, not found_inf
            '''), synonyms=("zero_grad", "gradient", "none", "did not move", "unchanged"), core=True),
]

# ---- Exercise 7: accumulate_token_gradients ----

TA = "token_accumulation"


def token_fn(body: str) -> Replace:
    head = ("def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):\n")
    return Replace(TA, "accumulate_token_gradients", head + textwrap.indent(textwrap.dedent(body).strip("\n"), "    "))


TOKENS = [
    mistake("unseen_ta_mean_over_k", TA, "token",
            "each micro-batch's own token mean divided by the number of micro-batches (the 2024 Trainer bug)",
            token_fn('''
                if (targets != ignore_index).sum() == 0:
                    raise ValueError("no counted tokens")
                model.zero_grad(set_to_none=True)
                k = math.ceil(len(inputs) / micro_batch_size)
                total = 0.0
                for s in range(0, len(inputs), micro_batch_size):
                    logits = model(inputs[s:s + micro_batch_size])
                    loss = F.cross_entropy(logits.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                           ignore_index=ignore_index)
                    (loss / k).backward()
                    total += loss.item() / k
                return total
            '''), synonyms=("counted", "share", "weight", "1/k"), core=True),
    mistake("unseen_ta_weights_by_sequences", TA, "token",
            "weights each micro-batch's token mean by its share of the sequences",
            token_fn('''
                n_counted = int((targets != ignore_index).sum())
                if n_counted == 0:
                    raise ValueError("no target token counts")
                model.zero_grad(set_to_none=True)
                B = inputs.shape[0]
                total = 0.0
                for s in range(0, B, micro_batch_size):
                    x, y = inputs[s:s + micro_batch_size], targets[s:s + micro_batch_size]
                    if (y != ignore_index).sum() == 0:
                        continue
                    loss = F.cross_entropy(model(x).flatten(0, 1), y.flatten(), ignore_index=ignore_index)
                    w = x.shape[0] / B
                    (loss * w).backward()
                    total += loss.item() * w
                return total
            '''), synonyms=("counted", "sequence", "share", "example"), core=True),
    mistake("unseen_ta_default_ignore_index", TA, "ignore_index",
            "counts with ignore_index but calls cross_entropy without it, so only -100 is ever ignored",
            token_fn('''
                N = (targets != ignore_index).sum().item()
                if N == 0:
                    raise ValueError("every target is ignore_index: nothing to average")
                model.zero_grad(set_to_none=True)
                total = 0.0
                for s in range(0, inputs.shape[0], micro_batch_size):
                    out = model(inputs[s:s + micro_batch_size])
                    loss_sum = F.cross_entropy(out.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                               reduction="sum")
                    (loss_sum / N).backward()
                    total += loss_sum.item()
                return total / N
            '''), synonyms=("ignored", "padding", "counted")),
    mistake("unseen_ta_no_value_error", TA, "valueerror",
            "returns 0.0 for a batch without counted tokens instead of raising ValueError",
            token_fn('''
                counted = int((targets != ignore_index).sum())
                model.zero_grad(set_to_none=True)
                total = 0.0
                for s in range(0, inputs.shape[0], micro_batch_size):
                    logits = model(inputs[s:s + micro_batch_size])
                    loss_sum = F.cross_entropy(logits.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                               ignore_index=ignore_index, reduction="sum")
                    (loss_sum / max(counted, 1)).backward()
                    total += loss_sum.item()
                return total / max(counted, 1)
            '''), synonyms=("raise", "no counted", "without any counted", "error")),
    mistake("unseen_ta_counts_padding", TA, "counted",
            "divides the summed token losses by every target position, padding included",
            token_fn('''
                if (targets != ignore_index).sum() == 0:
                    raise ValueError("no counted token in this batch")
                model.zero_grad(set_to_none=True)
                N = targets.numel()
                total = 0.0
                for s in range(0, inputs.shape[0], micro_batch_size):
                    logits = model(inputs[s:s + micro_batch_size])
                    loss_sum = F.cross_entropy(logits.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                               ignore_index=ignore_index, reduction="sum")
                    (loss_sum / N).backward()
                    total += loss_sum.item()
                return total / N
            '''), synonyms=("ignore_index", "padding", "token"), core=True),
    mistake("unseen_ta_one_backward", TA, "graph",
            "collects the micro-batches' token-loss sums and calls backward() once at the end",
            token_fn('''
                N = int((targets != ignore_index).sum())
                if N == 0:
                    raise ValueError("no counted tokens")
                model.zero_grad(set_to_none=True)
                sums = []
                for s in range(0, inputs.shape[0], micro_batch_size):
                    logits = model(inputs[s:s + micro_batch_size])
                    sums.append(F.cross_entropy(logits.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                                ignore_index=ignore_index, reduction="sum"))
                loss = torch.stack(sums).sum() / N
                loss.backward()
                return loss.item()
            '''), synonyms=("memory", "alive", "backward"), core=True),
    mistake("unseen_ta_global_running_loss", TA, "loss",
            "keeps the summed loss in a module global that is never reset, so the second call returns too much",
            Replace(TA, None, '''
                running_loss = 0.0


                def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
                    global running_loss
                    counted = int((targets != ignore_index).sum())
                    if counted == 0:
                        raise ValueError("no counted target token")
                    model.zero_grad(set_to_none=True)
                    for s in range(0, inputs.shape[0], micro_batch_size):
                        logits = model(inputs[s:s + micro_batch_size])
                        loss_sum = F.cross_entropy(logits.flatten(0, 1), targets[s:s + micro_batch_size].flatten(),
                                                   ignore_index=ignore_index, reduction="sum")
                        (loss_sum / counted).backward()
                        running_loss += loss_sum.item()
                    return running_loss / counted
            '''), synonyms=("mean", "return", "previous call", "second call")),
]

MISTAKES = [*UNDERFLOW, *STATIC, *DYNAMIC, *MASTER, *ACCUMULATE, *TRAIN, *TOKENS]

# ---- messy but correct notebooks ----

REALISTIC = [
    messy("unseen_ok_uf_masked_crlf",
          "underflow_fraction on the selected nonzero entries, pasted from a Windows editor, with a %time scratch "
          "cell and stored outputs",
          Replace(UF, "underflow_fraction", '''
              def underflow_fraction(values, dtype=torch.float16):
                  nz = values[values != 0]   # NaN != 0 too
                  if nz.numel() == 0:
                      return 0.0
                  gone = (nz.to(dtype) == 0).sum().item()
                  return gone / nz.numel()
          '''),
          NewCell("underflow_fraction", '''
              %time underflow_fraction(torch.randn(10**6) * 1e-7)
              print(underflow_fraction(torch.tensor([1e-8, 1.0, 0.0, float("nan")])))
          '''),
          LineEndings(("underflow_fraction_solution",)),
          printed("underflow_fraction", "underflow_fraction: all checks passed\n", 7)),
    messy("unseen_ok_uf_count_nonzero_decorated",
          "underflow_fraction with @torch.no_grad() and torch.count_nonzero; Q5 in single quotes with a comment; "
          "cells run out of order, no cell ids",
          Replace(UF, "underflow_fraction", '''
              @torch.no_grad()
              def underflow_fraction(values: torch.Tensor, dtype: torch.dtype = torch.float16) -> float:
                  total = torch.count_nonzero(values).item()
                  if total == 0:
                      return 0.0
                  flushed = torch.count_nonzero(values.ne(0) & values.to(dtype).eq(0)).item()
                  return flushed / total
          '''),
          Replace("q5_answer", None, '''
              # I went back and forth between b and c
              Q5_ANSWER = 'b'
          '''),
          ExecutionCounts(seed=3), DropCellIds()),
    messy("unseen_ok_sls_foreach_no_ids",
          "StaticLossScaler that collects the gradients in one pass and divides them with torch._foreach_div_; "
          "an nbformat 4.4 notebook without cell ids",
          Replace(SLS, None, '''
              class StaticLossScaler:
                  """scale the loss up, the grads back down"""

                  def __init__(self, scale=1024.0):
                      self.scale = float(scale)

                  def scale_loss(self, loss):
                      return self.scale * loss

                  def unscale_(self, params):
                      grads = [p.grad for p in params if p.grad is not None]  # one pass over a generator
                      if not grads:
                          return False
                      torch._foreach_div_(grads, self.scale)
                      return not all(bool(torch.isfinite(g).all()) for g in grads)
          '''),
          NewCell("static_loss_scaler", '''
              s = StaticLossScaler()
              w = torch.ones(3, requires_grad=True)
              s.scale_loss((w * 2).sum()).backward()
              print(w.grad, s.unscale_([w]), w.grad)
          '''),
          DropCellIds()),
    messy("unseen_ok_dls_tracker_magics",
          "DynamicLossScaler with its own counter name and >= test, a %%time scratch cell, autoreload and "
          "matplotlib magics after the imports",
          Replace(DLS, None, '''
              class DynamicLossScaler(StaticLossScaler):
                  def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                      super().__init__(scale=init_scale)
                      self.growth_factor = float(growth_factor)
                      self.backoff_factor = float(backoff_factor)
                      self.growth_interval = int(growth_interval)
                      self._growth_tracker = 0  # same name as in torch's GradScaler

                  def update(self, found_inf):
                      if bool(found_inf):
                          self.scale = self.scale * self.backoff_factor
                          self._growth_tracker = 0
                      else:
                          self._growth_tracker += 1
                          if self._growth_tracker >= self.growth_interval:
                              self.scale = self.scale * self.growth_factor
                              self._growth_tracker = 0
          '''),
          NewCell("cell-01", '''
              %load_ext autoreload
              %autoreload 2
              %matplotlib inline
          '''),
          NewCell("dynamic_loss_scaler", '''
              %%time
              s = DynamicLossScaler(init_scale=8.0, growth_interval=3)
              for inf in [False, False, False, True, False]:
                  s.update(inf)
                  print(s.scale)
          ''')),
    messy("unseen_ok_mw_data_apex",
          "master weights as Apex writes them: nn.Parameter masters, master.grad.data.copy_ reusing the master's "
          "gradient buffer, .data.copy_ back; a scratch cell moved below the check",
          Replace(MW, None, '''
              def make_master_params(model):
                  return [nn.Parameter(p.data.clone().float()) for p in model.parameters()]


              def model_grads_to_master_grads(model_params, master_params):
                  for model_p, master in zip(model_params, master_params):
                      if model_p.grad is None:
                          master.grad = None
                          continue
                      if master.grad is None:
                          master.grad = torch.empty_like(master)
                      master.grad.data.copy_(model_p.grad.data)


              def master_params_to_model_params(model_params, master_params):
                  for model_p, master in zip(model_params, master_params):
                      model_p.data.copy_(master.data)
          '''),
          NewCell("cell-27", '''
              m = nn.Linear(3, 2).half()
              ms = make_master_params(m)
              print([t.dtype for t in ms], [t.is_leaf for t in ms])
          '''),
          MoveCell("master_weights_solution", "cell-27")),
    messy("unseen_ok_mw_map_no_grad",
          "master weights with map and a lambda, a helper, and @torch.no_grad() on the copy back; CRLF",
          Replace(MW, None, '''
              def _fp32_copy(t):
                  return t.detach().clone().to(torch.float32)


              def make_master_params(model):
                  return list(map(lambda p: _fp32_copy(p).requires_grad_(), model.parameters()))


              def model_grads_to_master_grads(model_params, master_params):
                  for p, m in zip(model_params, master_params):
                      m.grad = _fp32_copy(p.grad) if p.grad is not None else None


              @torch.no_grad()
              def master_params_to_model_params(model_params, master_params):
                  for p, m in zip(model_params, master_params):
                      p.copy_(m.to(p.dtype))
          '''),
          LineEndings(("master_weights_solution", "master_weights"))),
    messy("unseen_ok_ag_while_helper",
          "accumulate_gradients over a generator of (start, stop) from a helper defined in a cell of its own, "
          "with a %time line",
          NewCell("cell-33", '''
              def micro_batches(n, size):
                  """(start, stop) of each micro-batch of at most `size` examples out of n"""
                  start = 0
                  while start < n:
                      yield start, min(start + size, n)
                      start += size
          '''),
          Replace(AG, "accumulate_gradients", '''
              def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                  model.zero_grad(set_to_none=True)
                  n = len(inputs)
                  mean_loss = 0.0
                  for a, b in micro_batches(n, micro_batch_size):
                      loss = loss_fn(model(inputs[a:b]), targets[a:b])
                      weight = (b - a) / n
                      (weight * loss).backward()
                      mean_loss += weight * loss.item()
                  return mean_loss
          '''),
          NewCell("accumulate_gradients", '''
              %time accumulate_gradients(lesson.make_mlp((64, 10), seed=0), F.cross_entropy, torch.randn(50, 64), torch.randint(0, 10, (50,)), 7)
          ''')),
    messy("unseen_ok_ag_split_grad_none",
          "accumulate_gradients with torch.split, p.grad = None and a float64 running sum; cells run out of order",
          Replace(AG, "accumulate_gradients", '''
              def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
                  for p in model.parameters():
                      p.grad = None
                  N = inputs.shape[0]
                  running = torch.zeros((), dtype=torch.float64)
                  for xb, yb in zip(torch.split(inputs, micro_batch_size), torch.split(targets, micro_batch_size)):
                      loss = loss_fn(model(xb), yb)
                      loss.mul(xb.shape[0] / N).backward()
                      running += loss.detach().double().cpu() * xb.shape[0]
                  return (running / N).item()
          '''),
          ExecutionCounts(seed=11)),
    messy("unseen_ok_mp_while_no_grad",
          "the training step with a while loop, a loss helper in a cell above, its own no_grad copies (not the "
          "Exercise 4 functions) and an early return on overflow; a scratch cell with outputs",
          NewCell("cell-41", '''
              def fp32_loss(model, loss_fn, x, y):
                  """the loss in fp32, whatever the model computes in"""
                  return loss_fn(model(x).float(), y)
          '''),
          Replace(MP, "mixed_precision_train_step", '''
              def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                                             micro_batch_size, max_grad_norm=None):
                  weights = [p for p in model.parameters()]
                  half = weights[0].dtype
                  for w in weights:
                      w.grad = None
                  n = len(inputs)
                  losses = []
                  i = 0
                  while i < n:
                      xb = inputs[i:i + micro_batch_size]
                      yb = targets[i:i + micro_batch_size]
                      i += micro_batch_size
                      if torch.is_floating_point(xb):
                          xb = xb.to(half)
                      loss = fp32_loss(model, loss_fn, xb, yb)
                      frac = len(xb) / n
                      scaler.scale_loss(loss).mul(frac).backward()
                      losses.append(loss.item() * frac)
                  with torch.no_grad():
                      for w, m in zip(weights, master_params):
                          m.grad = None if w.grad is None else w.grad.float().clone()
                  overflow = scaler.unscale_(master_params)
                  if overflow:
                      scaler.update(True)
                      return sum(losses), False
                  if max_grad_norm is not None:
                      nn.utils.clip_grad_norm_(master_params, max_norm=max_grad_norm)
                  optimizer.step()
                  with torch.no_grad():
                      for w, m in zip(weights, master_params):
                          w.copy_(m)
                  scaler.update(False)
                  return sum(losses), True
          '''),
          NewCell("mixed_precision_train_step", '''
              net = lesson.make_mlp((64, 10), seed=0).half()
              masters = make_master_params(net)
              opt = torch.optim.SGD(masters, lr=0.1)
              sc = DynamicLossScaler(init_scale=2.0**10)
              print(mixed_precision_train_step(net, masters, opt, sc, F.cross_entropy, torch.randn(9, 64),
                                               torch.randint(0, 10, (9,)), 4))
          '''),
          printed("mixed_precision_train_step", "mixed_precision_train_step: all checks passed\n", 31)),
    messy("unseen_ok_mp_split_tabs",
          "the training step over zip(inputs.split, targets.split), indented with tabs",
          Replace(MP, "mixed_precision_train_step", '''
              def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                                             micro_batch_size, max_grad_norm=None):
                  model.zero_grad()
                  params = list(model.parameters())
                  n = inputs.size(0)
                  total = 0.0
                  for x, y in zip(inputs.split(micro_batch_size), targets.split(micro_batch_size)):
                      if x.dtype.is_floating_point:
                          x = x.to(dtype=params[0].dtype)
                      loss = loss_fn(model(x).float(), y)
                      weight = x.size(0) / n
                      scaler.scale_loss(weight * loss).backward()
                      total += weight * float(loss)
                  model_grads_to_master_grads(params, master_params)
                  ok = not scaler.unscale_(master_params)
                  if ok:
                      if max_grad_norm is not None:
                          torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                      optimizer.step()
                      master_params_to_model_params(params, master_params)
                  scaler.update(not ok)
                  return total, ok
          '''),
          TabIndent(("mixed_precision_train_step_solution",))),
    messy("unseen_ok_ta_reduction_none_crlf",
          "token accumulation with reduction='none' summed by hand over torch.split chunks, a debug print left "
          "in; CRLF, no cell ids",
          Replace(TA, "accumulate_token_gradients", '''
              def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
                  mask = targets != ignore_index
                  N = int(mask.sum())
                  if not N:
                      raise ValueError(f"no counted tokens: every target equals ignore_index={ignore_index}")
                  print(f"{N} counted tokens")
                  model.zero_grad(set_to_none=True)
                  total = 0.0
                  for xs, ys in zip(torch.split(inputs, micro_batch_size), torch.split(targets, micro_batch_size)):
                      logits = model(xs)
                      per_token = F.cross_entropy(logits.flatten(0, 1), ys.flatten(), ignore_index=ignore_index,
                                                  reduction="none")
                      summed = per_token.sum()  # ignored positions are 0
                      (summed / N).backward()
                      total += summed.item()
                  return total / N
          '''),
          LineEndings(("token_accumulation_solution", "token_accumulation")), DropCellIds()),
    messy("unseen_ok_ta_helper_class",
          "token accumulation through a small helper class (not inheriting anything) that counts once and yields "
          "the micro-batches; tabs",
          Replace(TA, None, '''
              class _TokenBatch:
                  """counts the tokens once, then walks the micro-batches"""

                  def __init__(self, inputs, targets, ignore_index):
                      self.inputs, self.targets, self.ignore_index = inputs, targets, ignore_index
                      self.n_tokens = (targets != ignore_index).sum().item()

                  def chunks(self, size):
                      for start in range(0, len(self.inputs), size):
                          yield self.inputs[start:start + size], self.targets[start:start + size]


              def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
                  batch = _TokenBatch(inputs, targets, ignore_index)
                  if batch.n_tokens == 0:
                      raise ValueError("accumulate_token_gradients: no target token is counted (all are ignore_index)")
                  for p in model.parameters():
                      p.grad = None
                  summed = 0.0
                  for x, y in batch.chunks(micro_batch_size):
                      logits = model(x)
                      s = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=ignore_index,
                                          reduction="sum")
                      s.div(batch.n_tokens).backward()
                      summed += s.item()
                  return summed / batch.n_tokens
          '''),
          TabIndent(("token_accumulation_solution",))),
    messy("unseen_ok_copies_and_old_attempt",
          "an older, wrong underflow_fraction left in a copied cell above the right one, a check cell run twice "
          "(copied), shell and help lines, cells run out of order",
          CopyCell(UF + "_solution", above=True, source='''
              def underflow_fraction(values, dtype=torch.float16):
                  # first try: wrong denominator, fixed below
                  return ((values.to(dtype) == 0).sum() / values.numel()).item()
          '''),
          CopyCell(SLS),
          NewCell("cell-01", '''
              !pip list 2>/dev/null | grep -i torch
              torch.Tensor.copy_?
          '''),
          ExecutionCounts(seed=5)),
]

UNSEEN = [*MISTAKES, *REALISTIC]
UNSEEN_BY_NAME = {v.name: v for v in UNSEEN}
assert len(UNSEEN_BY_NAME) == len(UNSEEN), "two unseen variants share a name"


# ---- grading them once ----

def grade_unseen(name: str) -> dict:
    """In a grading process: grade one held-out variant as tests/corpus.py's grade_variant does."""
    from tests.submissions import failed_messages, grade_variant_notebook

    result, seconds = grade_variant_notebook(UNSEEN_BY_NAME[name])
    return {"name": name, "status": result.status, "reason": result.reason,
            "scores": {i: r.score for i, r in result.items.items()}, "messages": failed_messages(result),
            "review": {i: list(f) for i, f in (result.review or {}).items() if f},
            "seconds": round(seconds, 1)}


def names_cause(variant: Variant, message: str) -> bool:
    text = message.lower()
    return any(word.lower() in text for word in (variant.cause, *variant.synonyms) if word)


def verdict(variant: Variant, graded: dict, full: dict) -> dict:
    """How the grader did on one variant: plain data for the table and the figures."""
    scores = graded["scores"]
    other = sorted(i for i, points in full.items() if i != variant.item and scores.get(i, 0.0) < points)
    row = {"name": variant.name, "kind": variant.kind, "item": variant.item, "status": graded["status"],
           "seconds": graded["seconds"], "other_items_lost": other}
    if variant.kind == "realistic":
        row["full_marks"] = graded["status"] == "graded" and all(scores.get(i) == p for i, p in full.items())
        row["lost"] = {i: scores.get(i) for i, p in full.items() if scores.get(i) != p}
        row["first_message"] = next((m for i in row["lost"] for _, m in graded["messages"].get(i, [])[:1]), "")
        return row
    got, points = scores.get(variant.item, 0.0), full[variant.item]
    failed = graded["messages"].get(variant.item, [])
    first = failed[0][1] if failed else ""
    row.update(score=got, points=points, caught=got < points, core=variant.core,
               core_held=(not variant.core) or got <= points / 2, cause=variant.cause,
               cause_named=bool(first) and names_cause(variant, first), first_check=failed[0][0] if failed else "",
               first_message=first)
    return row


def summary(rows: list, seconds: float) -> list:
    mistakes = [r for r in rows if r["kind"] == "buggy"]
    correct = [r for r in rows if r["kind"] == "realistic"]
    core = [r for r in mistakes if r["core"]]
    cross = [r for r in mistakes if r["other_items_lost"]]
    return [
        f"correct notebooks at full marks: {sum(r['full_marks'] for r in correct)}/{len(correct)}",
        f"mistakes caught (lost points on their item): {sum(r['caught'] for r in mistakes)}/{len(mistakes)}",
        f"core mistakes at most half: {sum(r['core_held'] for r in core)}/{len(core)}",
        f"cross-item losses: {len(cross)}" + "".join(f"\n  {r['name']}: {', '.join(r['other_items_lost'])}"
                                                    for r in cross),
        f"first failing message names the cause: {sum(r['cause_named'] for r in mistakes)}/{len(mistakes)}",
        f"seconds: {seconds:.0f} ({JOBS} grading processes)",
    ]


def table(rows: list) -> list:
    lines = [f"{'variant':42} {'item':27} {'score':>9} {'core':>4} {'cause':>6}  first failing check: message"]
    for r in rows:
        if r["kind"] == "realistic":
            mark = "full" if r["full_marks"] else "LOST " + ", ".join(f"{i}={s}" for i, s in r["lost"].items())
            lines.append(f"{r['name']:42} {'(correct)':27} {mark:>9}  {r['first_message'][:150]!r}")
            continue
        score = f"{r['score']:g}/{r['points']:g}"
        core = ("yes" if r["core_held"] else "KEPT") if r["core"] else ""
        cause = f"{r['cause']}:" + ("y" if r["cause_named"] else "n")
        cross = f" [ALSO LOST {', '.join(r['other_items_lost'])}]" if r["other_items_lost"] else ""
        lines.append(f"{r['name']:42} {r['item']:27} {score:>9} {core:>4} {cause:>6}{cross}  "
                     f"{r['first_check']}: {r['first_message'][:150]!r}")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Grade the held-out variants once and print how the grader did.")
    parser.add_argument("--out", help="also write the rows and figures as JSON here")
    args = parser.parse_args(argv)
    full = full_marks()
    context = multiprocessing.get_context("spawn")
    started = time.monotonic()
    graded = {}
    with futures.ProcessPoolExecutor(max_workers=JOBS, mp_context=context) as pool:
        running = {pool.submit(grade_unseen, v.name): v.name for v in UNSEEN}
        for done in futures.as_completed(running):
            name = running[done]
            try:
                graded[name] = done.result()
            except Exception as exc:  # a grader crash is a finding too: report it, grade the rest
                graded[name] = {"name": name, "status": "crashed", "reason": repr(exc), "scores": {},
                                "messages": {}, "review": {}, "seconds": 0.0}
            print(f"graded {name} ({graded[name]['seconds']} s)", file=sys.stderr, flush=True)
    seconds = time.monotonic() - started
    rows = [verdict(v, graded[v.name], full) for v in UNSEEN]
    figures = summary(rows, seconds)
    print("\n".join(table(rows)))
    print()
    print("\n".join(figures))
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"rows": rows, "figures": figures, "graded": graded}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
