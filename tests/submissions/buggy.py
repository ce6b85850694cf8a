"""Buggy submissions: the mistakes students commonly make, one per variant.

Each breaks `item`. Items listed in `also` call the broken code (DynamicLossScaler inherits
from StaticLossScaler; mixed_precision_train_step uses the scaler and the master-weight
helpers), so they may lose points too; every other item must keep full marks.
"""
from . import Replace, Variant

STATIC_USERS = ("dynamic_loss_scaler", "mixed_precision_train_step")
STEP = ("mixed_precision_train_step",)


def bug(name, item, *edits, also=(), doc="", cause="", synonyms=(), misses=()):
    """cause: a lower-case word that a good first failure message for this mistake contains (or one of `synonyms`).
    misses: (a behaviour of `item` the mistake misses, how), for one that misses a central behaviour (or a
    behaviour whose visible check must fail all the same)."""
    return Variant(name, "buggy", tuple(edits), item=item, also=tuple(also), doc=doc, cause=cause,
                   synonyms=tuple(synonyms), misses=tuple(misses))


def underflow(name, body, doc, **cause):
    return bug(name, "underflow_fraction", Replace("underflow_fraction", "underflow_fraction", body), doc=doc, **cause)


def static(name, method, body, doc, also=STATIC_USERS, **cause):
    return bug(name, "static_loss_scaler", Replace("static_loss_scaler", f"StaticLossScaler.{method}", body),
               also=also, doc=doc, **cause)


def dynamic(name, method, body, doc, **cause):
    return bug(name, "dynamic_loss_scaler", Replace("dynamic_loss_scaler", f"DynamicLossScaler.{method}", body),
               also=STEP, doc=doc, **cause)


def master(name, function, body, doc, also=STEP, **cause):
    return bug(name, "master_weights", Replace("master_weights", function, body), also=also, doc=doc, **cause)


def accumulate(name, body, doc, **cause):
    return bug(name, "accumulate_gradients", Replace("accumulate_gradients", "accumulate_gradients", body), doc=doc,
               **cause)


def step(name, body, doc, **cause):
    return bug(name, "mixed_precision_train_step",
               Replace("mixed_precision_train_step", "mixed_precision_train_step", body), doc=doc, **cause)


UNDERFLOW = [
    underflow("underflow_threshold", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            flushed = nonzero & (values.abs() < 2.0**-24)
            return int(flushed.sum()) / count
        ''', "compares with fp16's smallest subnormal instead of casting: wrong at the rounding edge and for bf16",
           cause="cast", synonyms=("threshold",),
        misses=("counts_flushed_nonzero", "compares with a threshold instead of casting")),
    underflow("underflow_ignores_dtype", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            return int((nonzero & (values.half() == 0)).sum()) / count
        ''', "always casts to float16, whatever dtype says", cause="dtype"),
    underflow("underflow_zeros_in_denominator", '''
        def underflow_fraction(values, dtype=torch.float16):
            if values.numel() == 0:
                return 0.0
            flushed = (values != 0) & (values.to(dtype) == 0)
            return int(flushed.sum()) / values.numel()
        ''', "divides by every entry, zeros included", cause="zeros", synonyms=("nonzero",)),
    underflow("underflow_returns_tensor", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = nonzero.sum()
            if count == 0:
                return 0.0
            return (nonzero & (values.to(dtype) == 0)).sum() / count
        ''', "returns a 0-d tensor instead of a Python float", cause="float"),
    underflow("underflow_abs_drops_nan", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values.abs() > 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            return int((nonzero & (values.to(dtype) == 0)).sum()) / count
        ''', "abs() > 0 is False for NaN, so NaN is not counted as nonzero", cause="nan"),
    underflow("underflow_counts_subnormals", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            lost = values.to(dtype).abs() < torch.finfo(dtype).tiny
            return int((nonzero & lost).sum()) / count
        ''', "counts values that become subnormal (below the smallest normal) as underflowing",
           cause="subnormal", synonyms=("smallest normal",)),
    underflow("underflow_forgets_return", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            fraction = int((nonzero & (values.to(dtype) == 0)).sum()) / max(count, 1)
        ''', "computes the fraction but never returns it", cause="none", synonyms=("return statement",)),
    underflow("underflow_counts_zeros_as_flushed", '''
        def underflow_fraction(values, dtype=torch.float16):
            count = int((values != 0).sum())
            if count == 0:
                return 0.0
            return int((values.to(dtype) == 0).sum()) / count
        ''', "counts the entries that were zero to begin with as underflowing",
           cause="zeros", synonyms=("already zero", "nonzero")),
    underflow("underflow_placeholder_constant", '''
        def underflow_fraction(values, dtype=torch.float16):
            return 0.5  # TODO
        ''', "a placeholder left in place of the answer",
           cause="placeholder", synonyms=("constant", "whatever the input")),
    underflow("underflow_int_zero_when_empty", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0
            return int((nonzero & (values.to(dtype) == 0)).sum()) / count
        ''', "returns the int 0, not the float 0.0, when nothing is nonzero", cause="float", synonyms=("int",)),
    underflow("underflow_no_empty_guard", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            return float((nonzero & (values.to(dtype) == 0)).sum() / nonzero.sum())
        ''', "0 / 0 gives NaN when nothing is nonzero", cause="guard", synonyms=("count of 0", "0 / 0")),
]

STATIC = [
    static("static_multiplies_grads", "unscale_", '''
        def unscale_(self, params):
            found_inf = False
            for p in params:
                if p.grad is None:
                    continue
                p.grad.mul_(self.scale)
                found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
            return found_inf
        ''', "multiplies the gradients by the scale instead of dividing", cause="divide", synonyms=("multipl",),
        misses=("unscale_divides", "unscale_ multiplies instead of dividing")),
    static("static_not_in_place", "unscale_", '''
        def unscale_(self, params):
            found_inf = False
            for p in params:
                if p.grad is None:
                    continue
                p.grad = p.grad / self.scale
                found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
            return found_inf
        ''', "replaces .grad with a new tensor instead of dividing in place", also=(), cause="in place"),
    static("static_generator_twice", "unscale_", '''
        def unscale_(self, params):
            for p in params:
                if p.grad is not None:
                    p.grad.div_(self.scale)
            return any(not bool(torch.isfinite(p.grad).all()) for p in params if p.grad is not None)
        ''', "loops over params twice: a generator is empty the second time, so overflow is never found",
           cause="generator"),
    static("static_inf_only", "unscale_", '''
        def unscale_(self, params):
            found_inf = False
            for p in params:
                if p.grad is None:
                    continue
                p.grad.div_(self.scale)
                found_inf = found_inf or bool(torch.isinf(p.grad).any())
            return found_inf
        ''', "looks for inf only: a NaN gradient is not reported", cause="nan",
        misses=("overflow", "a NaN gradient is not an overflow to it")),
    static("static_int_scale", "__init__", '''
        def __init__(self, scale=1024.0):
            self.scale = int(scale)
        ''', "stores the scale as an int", also=(), cause="float", synonyms=("int",)),
    static("static_returns_tensor", "unscale_", '''
        def unscale_(self, params):
            found_inf = torch.tensor(False)
            for p in params:
                if p.grad is None:
                    continue
                p.grad.div_(self.scale)
                found_inf = found_inf | ~torch.isfinite(p.grad).all()
            return found_inf
        ''', "returns a bool tensor instead of a Python bool", cause="bool", synonyms=("tensor",)),
    static("static_stops_at_first_overflow", "unscale_", '''
        def unscale_(self, params):
            for p in params:
                if p.grad is None:
                    continue
                p.grad.div_(self.scale)
                if not torch.isfinite(p.grad).all():
                    return True
            return False
        ''', "returns at the first non-finite gradient: the gradients after it are never unscaled", also=(),
           cause="first overflow", synonyms=("finish the loop",)),
    static("static_scale_loss_detached", "scale_loss", '''
        def scale_loss(self, loss):
            return loss.item() * self.scale
        ''', "scale_loss returns a float: backward() cannot run through it",
           cause="graph", synonyms=("backward", ".item()"),
        misses=("scale_loss", "the scaled loss is cut from the graph")),
    static("static_crashes_on_none", "unscale_", '''
        def unscale_(self, params):
            found_inf = False
            for p in params:
                p.grad.div_(self.scale)
                found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
            return found_inf
        ''', "does not skip parameters whose .grad is None", cause="none"),
]

DYNAMIC = [
    dynamic("dynamic_no_reset_on_overflow", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= self.backoff_factor
                return
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        ''', "an overflow does not restart the count of clean steps", cause="reset", synonyms=("restart",)),
    dynamic("dynamic_grows_one_late", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= self.backoff_factor
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps > self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        ''', "off by one: grows after growth_interval + 1 clean steps", cause="interval", synonyms=("off by one",)),
    dynamic("dynamic_min_scale", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale = max(self.scale * self.backoff_factor, 1.0)
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        ''', "clamps the scale at 1.0; GradScaler has no minimum", cause="minimum", synonyms=("clamp", "floor")),
    dynamic("dynamic_grows_every_step", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= self.backoff_factor
            else:
                self.scale *= self.growth_factor
        ''', "grows on every clean step, ignoring growth_interval", cause="interval"),
    dynamic("dynamic_no_reset_after_growth", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= self.backoff_factor
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps >= self.growth_interval:
                self.scale *= self.growth_factor
        ''', "does not reset the count after growing, so it grows on every step after the first growth",
           cause="reset", synonyms=("restart",)),
    dynamic("dynamic_ignores_init_scale", "__init__", '''
        def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
            super().__init__()
            self.growth_factor = growth_factor
            self.backoff_factor = backoff_factor
            self.growth_interval = growth_interval
            self.clean_steps = 0
        ''', "never passes init_scale on: the scale stays at StaticLossScaler's 1024", cause="init_scale"),
    dynamic("dynamic_counts_all_steps", "update", '''
        def update(self, found_inf):
            self.clean_steps += 1
            if found_inf:
                self.scale *= self.backoff_factor
            elif self.clean_steps % self.growth_interval == 0:
                self.scale *= self.growth_factor
        ''', "counts every update, overflows included, and grows on multiples of growth_interval",
           cause="reset", synonyms=("restart",)),
    dynamic("dynamic_hardcoded_factors", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= 0.5
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= 2.0
                self.clean_steps = 0
        ''', "uses 0.5 and 2.0 whatever backoff_factor and growth_factor were given", cause="factor"),
    dynamic("dynamic_backoff_divides", "update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale /= self.backoff_factor
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        ''', "divides by backoff_factor on overflow, so the scale grows instead of shrinking", cause="backoff",
        misses=("backoff", "an overflow grows the scale")),
    dynamic("dynamic_update_does_nothing", "update", '''
        def update(self, found_inf):
            return None
        ''', "update() is left unwritten: the scale never backs off and never grows",
           cause="never changes", synonyms=("never changed", "unwritten")),
]

MASTER = [
    master("master_float_aliases", "make_master_params", '''
        def make_master_params(model):
            return [p.detach().float().requires_grad_(True) for p in model.parameters()]
        ''', ".float() returns the parameter's own storage when the model is already fp32", also=(),
           cause="copy", synonyms=("clone", "shares memory"),
        misses=("separate_copies", "the masters are not separate fp32 copies")),
    master("master_no_requires_grad", "make_master_params", '''
        def make_master_params(model):
            return [p.detach().clone().float() for p in model.parameters()]
        ''', "masters without requires_grad=True", also=(), cause="requires_grad"),
    master("master_not_detached", "make_master_params", '''
        def make_master_params(model):
            return [p.clone().float() for p in model.parameters()]
        ''', "masters that are not leaves: they hang off the model's graph", also=(),
           cause="leaf", synonyms=("detach",)),
    master("master_skips_frozen", "make_master_params", '''
        def make_master_params(model):
            return [p.detach().clone().float().requires_grad_(True) for p in model.parameters() if p.requires_grad]
        ''', "leaves out parameters with requires_grad=False, so masters and parameters no longer line up",
           also=(), cause="frozen"),
    master("master_returns_generator", "make_master_params", '''
        def make_master_params(model):
            return (p.detach().clone().float().requires_grad_(True) for p in model.parameters())
        ''', "returns a generator, which the optimizer and the step cannot both read", also=(),
           cause="generator", synonyms=("list",)),
    master("master_grads_stale_when_none", "model_grads_to_master_grads", '''
        def model_grads_to_master_grads(model_params, master_params):
            for p, master in zip(model_params, master_params):
                if p.grad is not None:
                    master.grad = p.grad.detach().clone().float()
        ''', "leaves a stale master .grad where the model's .grad is None", cause="stale"),
    master("master_grads_zeros_when_none", "model_grads_to_master_grads", '''
        def model_grads_to_master_grads(model_params, master_params):
            for p, master in zip(model_params, master_params):
                master.grad = torch.zeros_like(master) if p.grad is None else p.grad.detach().float()
        ''', "zeros instead of None where the model has no gradient", cause="none"),
    master("master_grads_keep_fp16", "model_grads_to_master_grads", '''
        def model_grads_to_master_grads(model_params, master_params):
            for p, master in zip(model_params, master_params):
                master.grad = None if p.grad is None else p.grad.detach().clone()
        ''', "copies the fp16 gradient without converting it to fp32", cause="dtype", synonyms=("float32", "fp32")),
    master("master_copy_back_replaces_data", "master_params_to_model_params", '''
        def master_params_to_model_params(model_params, master_params):
            for p, master in zip(model_params, master_params):
                p.data = master.data
        ''', "replaces .data with the master's fp32 storage: the model changes dtype and aliases the master",
           cause="in place", synonyms=(".data", "shares memory")),
    master("master_copy_back_assumes_fp16", "master_params_to_model_params", '''
        def master_params_to_model_params(model_params, master_params):
            for p, master in zip(model_params, master_params):
                p.data = master.detach().half()
        ''', "casts to fp16 whatever the model's dtype: a bf16 model becomes fp16",
           cause="dtype", synonyms=("bfloat16", "bf16")),
    master("master_copy_back_rebinds", "master_params_to_model_params", '''
        def master_params_to_model_params(model_params, master_params):
            for p, master in zip(model_params, master_params):
                p = master.detach().to(p.dtype)
        ''', "rebinds the loop variable: the model never changes",
           cause="in place", synonyms=("never changes", "rebind"),
        misses=("copy_back", "the model is never updated from the masters")),
    master("master_copy_back_reversed", "master_params_to_model_params", '''
        def master_params_to_model_params(model_params, master_params):
            with torch.no_grad():
                for p, master in zip(model_params, master_params):
                    master.copy_(p)
        ''', "copies in the wrong direction: the model into the masters",
           cause="direction", synonyms=("changed the masters",)),
    master("master_copy_back_tracked", "master_params_to_model_params", '''
        def master_params_to_model_params(model_params, master_params):
            for p, master in zip(model_params, master_params):
                p.copy_(master)
        ''', "copies in place without torch.no_grad(): autograd refuses to write into a leaf",
           cause="no_grad", synonyms=("leaf",)),
]

ACCUMULATE = [
    accumulate("accumulate_divides_by_count", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad(set_to_none=True)
            starts = range(0, inputs.shape[0], micro_batch_size)
            total = 0.0
            for start in starts:
                loss = loss_fn(model(inputs[start:start + micro_batch_size]), targets[start:start + micro_batch_size])
                (loss / len(starts)).backward()
                total += loss.item() / len(starts)
            return total
        ''', "divides by the number of micro-batches: wrong when the last one is smaller",
           cause="share", synonyms=("size / batch size", "number of micro-batches"),
        misses=("full_batch_gradient", "1/k instead of each micro-batch's share")),
    accumulate("accumulate_keeps_stale_grads", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * (x.shape[0] / n)
                loss.backward()
                total += loss.item()
            return total
        ''', "never zeroes the gradients, so the ones left from before are added to",
           cause="stale", synonyms=("zero the gradients", "held 3.0")),
    accumulate("accumulate_zeroes_inside_loop", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                model.zero_grad()
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * (x.shape[0] / n)
                loss.backward()
                total += loss.item()
            return total
        ''', "zeroes the gradients before every micro-batch: only the last one survives",
           cause="zero", synonyms=("zero_grad",)),
    accumulate("accumulate_full_batch_forward", '''
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
        ''', "runs the model on the whole batch at once, then splits only the loss",
           cause="micro_batch_size", synonyms=("whole batch at once",),
        misses=("micro_batches", "accumulation that does not micro-batch")),
    accumulate("accumulate_returns_last_loss", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = inputs.shape[0]
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y)
                (loss * (x.shape[0] / n)).backward()
            return loss.item()
        ''', "returns the last micro-batch's loss instead of the whole batch's",
           cause="whole batch", synonyms=("whole-batch", "last micro-batch")),
    accumulate("accumulate_returns_tensor", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * (x.shape[0] / n)
                loss.backward()
                total = total + loss.detach()
            return total
        ''', "returns the loss as a tensor", cause="float"),
    accumulate("accumulate_unweighted_mean_loss", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = inputs.shape[0]
            losses = []
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y)
                (loss * (x.shape[0] / n)).backward()
                losses.append(loss.item())
            return sum(losses) / len(losses)
        ''', "gradients right, but returns the plain mean of the micro-batch losses",
           cause="share", synonyms=("weight",)),
    accumulate("accumulate_drops_last_partial", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n - micro_batch_size + 1, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * (x.shape[0] / n)
                loss.backward()
                total += loss.item()
            return total
        ''', "the loop stops before a last, smaller micro-batch", cause="last micro-batch", synonyms=("smaller",)),
    accumulate("accumulate_zeroes_after_loop", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * (x.shape[0] / n)
                loss.backward()
                total += loss.item()
            model.zero_grad()  # "clean up" -- after the loop, which throws the result away
            return total
        ''', "zeroes the gradients after the loop instead of before it", cause="zero", synonyms=("zero_grad",)),
    accumulate("accumulate_sums_losses", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            total = 0.0
            for start in range(0, inputs.shape[0], micro_batch_size):
                loss = loss_fn(model(inputs[start:start + micro_batch_size]), targets[start:start + micro_batch_size])
                loss.backward()
                total += loss.item()
            return total
        ''', "adds up the micro-batch means without weighting them", cause="share", synonyms=("weight",)),
]

# the reference step with one thing changed; {before} and the like are filled per variant
STEP_TEMPLATE = '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    {zero}
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        {cast}
        share = {share}
        loss = {loss}
        {backward}
        total_loss += {loss_item}
    {to_master}
    if {take_step}:
        {clip}
        optimizer.step()
        {copy_back}
    {update}
    return {returned}
'''

STEP_PARTS = dict(
    zero="model.zero_grad(set_to_none=True)",
    cast="if x.is_floating_point():\n            x = x.to(model_dtype)",
    share="x.shape[0] / batch_size",
    loss="loss_fn(model(x).float(), y)",
    backward="scaler.scale_loss(loss * share).backward()",
    loss_item="loss.item() * share",
    to_master="model_grads_to_master_grads(model_params, master_params)\n"
              "    found_inf = scaler.unscale_(master_params)",
    take_step="not found_inf",
    clip="if max_grad_norm is not None:\n            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)",
    copy_back="master_params_to_model_params(model_params, master_params)",
    update="scaler.update(found_inf)",
    returned="total_loss, not found_inf",
)


def step_variant(name, doc, cause="", synonyms=(), misses=(), **changes):
    return step(name, STEP_TEMPLATE.format(**{**STEP_PARTS, **changes}), doc, cause=cause, synonyms=synonyms,
                misses=misses)


TRAIN_STEP = [
    step_variant("step_no_loss_scaling", "never multiplies the loss by the scale (and so never unscales)",
                 backward="(loss * share).backward()",
                 to_master="model_grads_to_master_grads(model_params, master_params)\n"
                           "    found_inf = any(not bool(torch.isfinite(m.grad).all()) for m in master_params "
                           "if m.grad is not None)", cause="scaler.scale", synonyms=("scale_loss", "loss scaling"),
        misses=("loss_scaling", "the step never multiplies the loss by the scale")),
    step_variant("step_unscale_in_fp16", "unscales the fp16 model gradients, where small ones flush to zero",
                 to_master="found_inf = scaler.unscale_(model_params)\n"
                           "    model_grads_to_master_grads(model_params, master_params)",
                              cause="fp32", synonyms=("in fp16",)),
    step_variant("step_clip_before_unscale", "clips the still-scaled gradients",
                 to_master="model_grads_to_master_grads(model_params, master_params)\n"
                           "    if max_grad_norm is not None:\n"
                           "        torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)\n"
                           "    found_inf = scaler.unscale_(master_params)",
                 clip="pass", cause="after unscal", synonyms=("clip after", "before unscal")),
    step_variant("step_unscales_twice", "unscales the master gradients twice",
                 to_master="model_grads_to_master_grads(model_params, master_params)\n"
                           "    found_inf = scaler.unscale_(master_params)\n"
                           "    scaler.unscale_(master_params)", cause="twice", synonyms=("unscale",)),
    step_variant("step_steps_on_overflow", "steps even when the gradients overflowed", take_step="True",
       cause="overflow", synonyms=("skip",), misses=("overflow_skips", "the step updates on overflow")),
    step_variant("step_update_only_when_stepping", "calls scaler.update only after a step it took",
                 copy_back="master_params_to_model_params(model_params, master_params)\n"
                           "        scaler.update(found_inf)",
                 update="pass", cause="update", synonyms=("skipped or not",)),
    step_variant("step_clips_values", "clips each gradient value instead of the total norm",
                 clip="if max_grad_norm is not None:\n"
                      "            torch.nn.utils.clip_grad_value_(master_params, max_grad_norm)", cause="norm"),
    step_variant("step_no_update", "never calls scaler.update", update="pass", cause="update"),
    step_variant("step_update_twice", "calls scaler.update twice on a clean step",
                 copy_back="master_params_to_model_params(model_params, master_params)\n"
                           "        scaler.update(found_inf)", cause="once", synonyms=("twice",)),
    step_variant("step_no_copy_back", "never copies the masters back into the model", copy_back="pass", cause="copy",
        misses=("masters_keep_updates", "the fp16 model never gets the masters' values")),
    step_variant("step_casts_integer_inputs", "casts token ids to fp16 too", cast="x = x.to(model_dtype)",
       cause="token", synonyms=("integer", "is_floating_point", "indices")),
    step_variant("step_returns_scaled_loss", "returns the loss multiplied by the scale",
                 loss_item="loss.item() * share * scaler.scale", cause="unscaled", synonyms=("scaled loss",)),
    step_variant("step_returns_tensor_loss", "returns the loss as a tensor", loss_item="loss.detach() * share",
       cause="float"),
    step_variant("step_divides_by_count", "weights each micro-batch by 1 / number of micro-batches",
                 share="1 / len(range(0, batch_size, micro_batch_size))",
                    cause="share", synonyms=("size / ", "number of micro-batches")),
    step_variant("step_keeps_stale_model_grads", "never zeroes the model's gradients", zero="pass",
       cause="zero", synonyms=("stale",)),
    step_variant("step_returns_found_inf", "returns found_inf where it should return whether it stepped",
                 returned="total_loss, found_inf", cause="stepped"),
]

Q5 = [
    bug("q5_wrong_letter", "q5_answer", Replace("q5_answer", None, 'Q5_ANSWER = "c"'), doc="the wrong choice",
       cause="not the right answer", misses=("right_letter", "the wrong letter")),
    bug("q5_choice_index", "q5_answer", Replace("q5_answer", None, "Q5_ANSWER = 2"),
        doc="the index of the choice instead of its letter", cause="letter"),
]

BUGGY = UNDERFLOW + STATIC + DYNAMIC + MASTER + ACCUMULATE + TRAIN_STEP + Q5


# ---- issue 8: the aliasing the fp32 visible checks catch, and Exercise 7 ----

MASTER_FP32 = [
    master("master_grads_alias_fp32", "model_grads_to_master_grads", '''
        def model_grads_to_master_grads(model_params, master_params):
            for p, master in zip(model_params, master_params):
                master.grad = None if p.grad is None else p.grad.detach().float()
        ''', ".float() of an fp32 gradient is the gradient itself: the master's .grad aliases the model's",
           also=(), cause="shares memory", synonyms=("copy", "clone")),
]


def token(name, body, doc, **cause):
    return bug(name, "token_accumulation",
               Replace("token_accumulation", "accumulate_token_gradients", body), doc=doc, **cause)


# the reference with one thing changed
TOKEN_TEMPLATE = '''
def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
    counted = int((targets != ignore_index).sum())
    {empty}
    {zero}
    starts = range(0, inputs.shape[0], micro_batch_size)
    total_loss = 0.0
    for start in starts:
        x = inputs[start:start + micro_batch_size]
        y = targets[start:start + micro_batch_size]
        logits = model(x)
        {loss}
        {backward}
        {accumulate}
    return {returned}
'''

TOKEN_PARTS = dict(
    empty="if counted == 0:\n        raise ValueError('no target token counts')",
    zero="model.zero_grad(set_to_none=True)",
    loss="loss_sum = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index, "
         "reduction='sum')",
    backward="(loss_sum / counted).backward()",
    accumulate="total_loss += loss_sum.item()",
    returned="total_loss / counted",
)


def token_variant(name, doc, cause="", synonyms=(), misses=(), **changes):
    return token(name, TOKEN_TEMPLATE.format(**{**TOKEN_PARTS, **changes}), doc, cause=cause, synonyms=synonyms,
                 misses=misses)


TOKEN = [
    token_variant("token_mean_over_micro_batch_count",
                  "each micro-batch's own token mean divided by the number of micro-batches: the Hugging Face bug",
                  loss="loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index)",
                  backward="(loss / len(starts)).backward()",
                  accumulate="total_loss += loss.item() / len(starts)",
                  returned="total_loss", cause="counted tokens", synonyms=("number of micro-batches",)),
    token_variant("token_weighted_by_examples",
                  "each micro-batch's token mean weighted by its share of the sequences, not of the tokens",
                  loss="loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index)",
                  backward="(loss * x.shape[0] / inputs.shape[0]).backward()",
                  accumulate="total_loss += loss.item() * x.shape[0] / inputs.shape[0]",
                  returned="total_loss", cause="counted tokens", synonyms=("examples",),
        misses=("token_weighting", "weighted by sequences, not tokens")),
    token_variant("token_counts_padding", "divides by every target position, padding included",
                  backward="(loss_sum / targets.numel()).backward()",
                  returned="total_loss / targets.numel()", cause="padding", synonyms=("ignore_index",)),
    token_variant("token_ignores_ignore_index", "always ignores -100, whatever ignore_index says",
                  empty="if int((targets != -100).sum()) == 0:\n        raise ValueError('no target token counts')",
                  loss="loss_sum = F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction='sum')",
                     cause="ignore_index"),
    token_variant("token_empty_batch_returns_nan", "no ValueError on a batch without counted tokens",
                  empty="pass",
                  backward="(loss_sum / max(counted, 1)).backward()",
                  returned="total_loss / counted if counted else float('nan')", cause="valueerror"),
    token_variant("token_keeps_stale_grads", "never zeroes the gradients left from before the call", zero="pass",
       cause="stale", synonyms=("zero",), misses=("micro_batches", "gradients from before the call are kept")),
    token_variant("token_returns_tensor", "returns the loss as a tensor",
                  accumulate="total_loss = total_loss + loss_sum.detach()", cause="float"),
]

BUGGY = BUGGY + MASTER_FP32 + TOKEN

# Graphs kept alive: each micro-batch passes through the model alone, so batch sizes look right, but
# every micro-batch's graph lives until one backward() at the end, which saves no memory: what the
# sandbox's measured peak memory catches, whatever the code's shape.
KEEPS_GRAPHS = [
    accumulate("accumulate_one_backward_of_summed_losses", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                total = total + loss_fn(model(x), y) * (x.shape[0] / n)
            total.backward()
            return total.item()
        ''', "adds up the weighted micro-batch losses and calls backward() once: every graph stays alive",
           cause="graph", synonyms=("backward() once",),
        misses=("micro_batches", "every micro-batch's graph alive until one backward")),
    accumulate("accumulate_concatenates_outputs", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            outputs = [model(inputs[start:start + micro_batch_size])
                       for start in range(0, inputs.shape[0], micro_batch_size)]
            loss = loss_fn(torch.cat(outputs), targets)
            loss.backward()
            return loss.item()
        ''', "runs the micro-batches one by one but concatenates the outputs for one loss and one backward()",
           cause="graph", synonyms=("concatenat",),
        misses=("micro_batches", "the outputs concatenated for one loss and one backward")),
    step_variant("step_one_backward_for_all_micro_batches",
                 "adds up the micro-batches' scaled losses and calls backward() once: every graph stays alive",
                 zero="model.zero_grad(set_to_none=True)\n    scaled_losses = []",
                 backward="scaled_losses.append(scaler.scale_loss(loss * share))",
                 to_master="sum(scaled_losses).backward()\n    " + STEP_PARTS["to_master"],
                    cause="graph", synonyms=("backward() once",),
        misses=("micro_batches", "every micro-batch's graph alive until one backward")),
    token_variant("token_one_backward_for_all_micro_batches",
                  "adds up the micro-batches' token losses and calls backward() once: every graph stays alive",
                  zero="model.zero_grad(set_to_none=True)\n    kept = []",
                  backward="kept.append(loss_sum / counted)",
                  returned="(sum(kept).backward(), total_loss / counted)[1]",
                     cause="graph", synonyms=("backward() once",),
        misses=("micro_batches", "every micro-batch's graph alive until one backward")),
]

BUGGY = BUGGY + KEEPS_GRAPHS

# ---- issue 48: what a visible ✓ used to hide, and the contract's every corner ----

_STEP_OWN_CHECK = ("model_grads_to_master_grads(model_params, master_params)\n"
                   "    scaler.unscale_(master_params)\n"
                   "    found_inf = any(bool({test}) for m in master_params if m.grad is not None)")
ISSUE_48 = [
    static("static_nan_only", "unscale_", '''
        def unscale_(self, params):
            found_inf = False
            for p in params:
                if p.grad is None:
                    continue
                p.grad.div_(self.scale)
                found_inf = found_inf or bool(torch.isnan(p.grad).any())
            return found_inf
        ''', "looks for NaN only: an inf gradient is not reported", cause="inf",
        misses=("overflow", "an inf gradient is not an overflow to it")),
    step_variant("step_overflow_isinf_only", "its own overflow test looks for inf only: a NaN gradient steps",
                 to_master=_STEP_OWN_CHECK.format(test="torch.isinf(m.grad).any()"), cause="nan",
        misses=("overflow_skips", "a NaN gradient is not an overflow to it")),
    step_variant("step_overflow_isnan_only", "its own overflow test looks for NaN only: an inf gradient steps",
                 to_master=_STEP_OWN_CHECK.format(test="torch.isnan(m.grad).any()"), cause="inf",
        misses=("overflow_skips", "an inf gradient is not an overflow to it")),
    step_variant("step_casts_inputs_to_half", "casts float inputs with .half(): a bf16 model gets fp16 inputs",
                 cast="if x.is_floating_point():\n            x = x.half()", cause="bf16",
                 synonyms=("bfloat16", "dtype", ".half()"),
        misses=("masters_keep_updates", "a bf16 model is fed fp16 inputs")),
    step_variant("step_overflow_last_parameter_only", "tests only the last master gradient for overflow",
                 to_master="model_grads_to_master_grads(model_params, master_params)\n"
                           "    scaler.unscale_(master_params)\n"
                           "    found_inf = not bool(torch.isfinite(master_params[-1].grad).all())",
                 cause="every", synonyms=("one parameter", "all"),
        misses=("overflow_skips", "an overflow in the other parameters is missed")),
    step_variant("step_overflow_from_the_loss", "tests the scaled losses for overflow, not the gradients",
                 zero="model.zero_grad(set_to_none=True)\n    loss_overflowed = False",
                 backward="scaled = scaler.scale_loss(loss * share)\n"
                          "        loss_overflowed = loss_overflowed or not math.isfinite(scaled.item())\n"
                          "        scaled.backward()",
                 to_master="model_grads_to_master_grads(model_params, master_params)\n"
                           "    scaler.unscale_(master_params)\n"
                           "    found_inf = loss_overflowed",
                 cause="gradient", synonyms=("every", "all")),
    token_variant("token_zeroes_before_raising", "zeroes the gradients, then raises ValueError on an empty batch",
                  empty="model.zero_grad(set_to_none=True)\n    if counted == 0:\n"
                        "        raise ValueError('no target token counts')", zero="pass",
                  cause="before", synonyms=(".grad",)),
]

# wrong-cause messages the issue found: each variant's first message must name its own cause
ISSUE_48 += [
    underflow("underflow_round_trip", '''
        def underflow_fraction(values, dtype=torch.float16):
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            return int((nonzero & (values.to(dtype).to(values.dtype) != values)).sum()) / count
        ''', "counts every value the cast changes (a round trip), not only those it flushes to 0",
              cause="round trip", synonyms=("rounded",)),
    token_variant("token_mean_times_share_of_tokens", "each micro-batch's token mean times its share of the "
                  "tokens, with no care for a micro-batch without a counted token (its mean is 0/0)",
                  loss="n_i = int((y != ignore_index).sum())\n"
                       "        loss = F.cross_entropy(logits.flatten(0, 1), y.flatten(), ignore_index=ignore_index)",
                  backward="(loss * n_i / counted).backward()",
                  accumulate="total_loss += loss.item() * n_i / counted", returned="total_loss",
                  cause="0/0", synonyms=("no counted token",)),
]

BUGGY = BUGGY + ISSUE_48

# issue 48, the root cause first: mistakes of Exercise 6 with one cause each that breaks several behaviours; the
# report's first message (its diagnosis, runner.diagnose) must name that cause
ONE_CAUSE = [
    step_variant("step_loss_in_fp16", "computes the loss on the fp16 output (no .float())", loss="loss_fn(model(x), y)",
                 cause="computed in float16", synonyms=("loss in fp32",)),
    step_variant("step_loss_never_scaled", "never multiplies the loss by the scale, but unscales the master grads",
                 backward="(loss * share).backward()", cause="never multiplied by the scale"),
    step_variant("step_masters_from_model", "copies the fp16 model into the masters at the start of each call",
                 zero="model.zero_grad(set_to_none=True)\n"
                      "    for m, p in zip(master_params, model_params):\n        m.data.copy_(p.data)",
                 cause="overwritten from the fp16 model",
        misses=("masters_keep_updates", "the masters are rebuilt from the fp16 model")),
    step_variant("step_returns_last_loss", "returns the last micro-batch's loss", loss_item="0.0",
                 returned="loss.item(), not found_inf", cause="last micro-batch's loss"),
]
ONE_CAUSE_NAMES = tuple(v.name for v in ONE_CAUSE) + ("step_no_loss_scaling", "step_returns_scaled_loss")

BUGGY = BUGGY + ONE_CAUSE
