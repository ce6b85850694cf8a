"""Correct submissions written differently from the reference: every one must keep full marks."""
from . import Append, NewCell, Replace, Variant


def alt(name, *edits, doc=""):
    return Variant(name, "alternative", tuple(edits), doc=doc)


ALTERNATIVES = [
    alt("alt_underflow_masked_mean", Replace("underflow_fraction", "underflow_fraction", '''
        def underflow_fraction(values, dtype=torch.float16):
            kept = values[values != 0]  # NaN != 0 is True, so NaN and inf stay in
            if kept.numel() == 0:
                return 0.0
            return (kept.to(dtype) == 0).float().mean().item()
        '''), doc="boolean indexing and .mean().item()"),
    alt("alt_underflow_count_nonzero", Replace("underflow_fraction", "underflow_fraction", '''
        def underflow_fraction(values: torch.Tensor, dtype: torch.dtype = torch.float16) -> float:
            flat = values.flatten()
            nonzero = torch.count_nonzero(flat).item()
            if not nonzero:
                return 0.0
            cast = flat.to(dtype)
            lost = torch.logical_and(flat != 0, cast == 0)
            return float(torch.count_nonzero(lost).item()) / float(nonzero)
        '''), doc="count_nonzero on a flattened copy, float division of two ints"),
    alt("alt_underflow_numpy_counts", Replace("underflow_fraction", "underflow_fraction", '''
        import numpy as np


        def underflow_fraction(values, dtype=torch.float16):
            nonzero = (values != 0).cpu().numpy()
            lost = (values.to(dtype) == 0).cpu().numpy() & nonzero
            total = np.count_nonzero(nonzero)
            return np.count_nonzero(lost) / total if total else 0.0  # a numpy.float64, which is a float
        '''), doc="counts with numpy: returns a numpy.float64"),
    alt("alt_static_no_grad_division", Replace("static_loss_scaler", None, '''
        import math


        class StaticLossScaler:
            """Static loss scaling, with the overflow test written out."""

            def __init__(self, scale=1024.0):
                self.scale = float(scale)

            def scale_loss(self, loss):
                return self.scale * loss

            def unscale_(self, params):
                overflow = False
                with torch.no_grad():
                    for p in params:
                        g = p.grad
                        if g is None:
                            continue
                        g /= self.scale
                        if torch.isnan(g).any() or torch.isinf(g).any():
                            overflow = True
                return overflow
        '''), doc="torch.no_grad() and /=, isnan + isinf, a module import in the cell"),
    alt("alt_static_reciprocal", Replace("static_loss_scaler", "StaticLossScaler.unscale_", '''
        def unscale_(self, params):
            inv = 1.0 / self.scale
            bad = []
            for p in list(params):  # read the generator once, into a list
                if p.grad is not None:
                    p.grad.mul_(inv)
                    bad.append(bool((~torch.isfinite(p.grad)).any()))
            return any(bad)
        '''), doc="multiplies by the reciprocal; materialises the generator first"),
    alt("alt_static_torch_amp_kernel", Replace("static_loss_scaler", "StaticLossScaler.unscale_", '''
        def unscale_(self, params):
            """torch.amp's own fused kernel: multiplies by 1/scale and flags inf/NaN, in place."""
            grads = [p.grad for p in params if p.grad is not None]
            if not grads:
                return False
            found_inf = torch.zeros(1, device=grads[0].device)
            inv_scale = torch.full((1,), 1.0 / self.scale, device=grads[0].device)
            torch._amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv_scale)
            return bool(found_inf.item())
        '''), doc="torch._amp_foreach_non_finite_check_and_unscale_, as GradScaler does"),
    alt("alt_dynamic_torch_kernel", Replace("dynamic_loss_scaler", "DynamicLossScaler", '''
        class DynamicLossScaler(StaticLossScaler):
            """The update rule is torch.amp's own kernel, on float32 tensors."""

            def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                super().__init__(init_scale)
                self._rule = (growth_factor, backoff_factor, growth_interval)
                self._tracker = torch.zeros(1, dtype=torch.int32)

            def update(self, found_inf):
                scale = torch.full((1,), self.scale)
                torch._amp_update_scale_(scale, self._tracker, torch.full((1,), float(found_inf)), *self._rule)
                self.scale = scale.item()
        '''), doc="torch._amp_update_scale_ with a float32 scale and an int32 tracker"),
    alt("alt_dynamic_modulo", Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
        def update(self, found_inf):
            if found_inf:
                self.scale *= self.backoff_factor
                self.clean_steps = 0
            else:
                self.clean_steps += 1
                if self.clean_steps % self.growth_interval == 0:  # no reset needed: the count keeps going
                    self.scale *= self.growth_factor
        '''), doc="grows on multiples of growth_interval, resetting only on overflow"),
    alt("alt_dynamic_composition", Replace("dynamic_loss_scaler", None, '''
        class DynamicLossScaler:
            """Wraps a StaticLossScaler instead of inheriting from it."""

            def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                self._static = StaticLossScaler(init_scale)
                self._growth = (growth_factor, growth_interval)
                self._backoff = backoff_factor
                self._good_steps = 0

            @property
            def scale(self):
                return self._static.scale

            @scale.setter
            def scale(self, value):
                self._static.scale = float(value)

            def scale_loss(self, loss):
                return self._static.scale_loss(loss)

            def unscale_(self, params):
                return self._static.unscale_(params)

            def update(self, found_inf):
                factor, interval = self._growth
                if found_inf:
                    self.scale = self.scale * self._backoff
                    self._good_steps = 0
                else:
                    self._good_steps += 1
                    if self._good_steps >= interval:
                        self.scale = self.scale * factor
                        self._good_steps = 0
        '''), doc="composition and a scale property; >= with a reset is the same rule"),
    alt("alt_dynamic_countdown", Replace("dynamic_loss_scaler", "DynamicLossScaler", '''
        class DynamicLossScaler(StaticLossScaler):
            def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                super().__init__(scale=init_scale)
                self.growth_factor, self.backoff_factor = float(growth_factor), float(backoff_factor)
                self.growth_interval = int(growth_interval)
                self._until_growth = self.growth_interval

            def update(self, found_inf):
                if found_inf:
                    self.scale = self.scale * self.backoff_factor
                    self._until_growth = self.growth_interval
                    return None
                self._until_growth -= 1
                if self._until_growth == 0:
                    self.scale = self.scale * self.growth_factor
                    self._until_growth = self.growth_interval
        '''), doc="counts down to the next growth"),
    alt("alt_master_clone_and_data", Replace("master_weights", None, '''
        def make_master_params(model):
            masters = []
            for p in model.parameters():
                m = p.clone().detach().float()   # clone first: a real copy even for an fp32 model
                m.requires_grad = True
                masters.append(m)
            return masters


        def model_grads_to_master_grads(model_params, master_params):
            for p, m in zip(model_params, master_params):
                if p.grad is None:
                    m.grad = None
                else:
                    m.grad = p.grad.clone().float()  # clone first: a copy of its own even for an fp32 model


        def master_params_to_model_params(model_params, master_params):
            for p, m in zip(model_params, master_params):
                p.data.copy_(m.data)
        '''), doc="clone().detach().float(), p.grad.clone().float(), p.data.copy_(m.data)"),
    alt("alt_master_parameters", Replace("master_weights", None, '''
        import torch.nn as nn


        def make_master_params(model):
            return [nn.Parameter(p.detach().to(torch.float32).clone()) for p in model.parameters()]


        def model_grads_to_master_grads(model_params, master_params):
            for p, m in zip(list(model_params), master_params):
                m.grad = p.grad.detach().to(dtype=torch.float32, copy=True) if p.grad is not None else None


        @torch.no_grad()
        def master_params_to_model_params(model_params, master_params):
            for p, m in zip(model_params, master_params):
                p.copy_(m.to(p.dtype))
        '''), doc="masters as nn.Parameter, torch.no_grad() as a decorator"),
    alt("alt_master_apex_style", Replace("master_weights", None, '''
        @torch.no_grad()
        def make_master_params(model):
            return [torch.empty_like(p, dtype=torch.float32).copy_(p).requires_grad_() for p in model.parameters()]


        def model_grads_to_master_grads(model_params, master_params):
            """As apex.fp16_utils does: copy into an existing master grad when there is one."""
            for p, m in zip(model_params, master_params):
                if p.grad is None:
                    m.grad = None
                    continue
                if m.grad is None:
                    m.grad = torch.empty_like(m)
                m.grad.detach().copy_(p.grad)


        def master_params_to_model_params(model_params, master_params):
            for p, m in zip(model_params, master_params):
                p.detach().copy_(m)  # detach() shares p's storage, and autograd does not see the write
        '''), doc="empty_like + copy_ under no_grad, apex-style grads, p.detach().copy_()"),
    alt("alt_master_tensor_warns", Replace("master_weights", "make_master_params", '''
        def make_master_params(model):
            # torch.tensor(tensor) warns (UserWarning on stderr) but makes a real copy
            return [torch.tensor(p, dtype=torch.float32, device=p.device, requires_grad=True)
                    for p in model.parameters()]
        '''), doc="torch.tensor(p, ...) copies, with a UserWarning on stderr"),
    alt("alt_accumulate_split", Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            for p in model.parameters():
                p.grad = None
            n = len(inputs)
            total = 0.0
            for x, y in zip(inputs.split(micro_batch_size), targets.split(micro_batch_size)):
                loss = loss_fn(model(x), y)
                (loss * len(x) / n).backward()
                total += loss.item() * len(x)
            return total / n
        '''), doc="Tensor.split, p.grad = None, sum of loss * size then one division"),
    alt("alt_accumulate_divide_at_end", Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            """Sum size-weighted losses' gradients, then divide once by the batch size."""
            model.zero_grad(set_to_none=True)
            n = inputs.shape[0]
            loss_sum = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                loss = loss_fn(model(x), y) * x.shape[0]
                loss.backward()
                loss_sum += loss.item()
            with torch.no_grad():
                for p in model.parameters():
                    if p.grad is not None:
                        p.grad /= n
            return loss_sum / n
        '''), doc="backward on loss * micro-batch size, one division of the gradients at the end"),
    alt("alt_accumulate_chunk", Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad()
            n = len(inputs)
            chunks = -(-n // micro_batch_size)  # ceil: chunk() then gives pieces of at most micro_batch_size
            total = 0.0
            for x, y in zip(inputs.chunk(chunks), targets.chunk(chunks)):
                loss = loss_fn(model(x), y) * (len(x) / n)
                loss.backward()
                total += loss.item()
            return total
        '''), doc="torch.chunk into ceil(n / micro_batch_size) pieces"),
    alt("alt_accumulate_indices_zero", Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            for p in model.parameters():
                if p.grad is not None:
                    p.grad.zero_()
            n = inputs.shape[0]
            chunks = math.ceil(n / micro_batch_size)
            weighted = []
            for i in range(chunks):
                idx = torch.arange(i * micro_batch_size, min((i + 1) * micro_batch_size, n))
                x, y = inputs[idx], targets[idx]
                loss = loss_fn(model(x), y) * (len(idx) / n)
                loss.backward()
                weighted.append(loss.detach())
            return float(sum(weighted))
        '''), doc="zero_() on existing grads, index tensors, float() of a tensor sum"),
    alt("alt_step_manual_clip", Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
        def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                                       micro_batch_size, max_grad_norm=None):
            params = list(model.parameters())
            optimizer.zero_grad()            # the masters' grads: replaced below anyway
            model.zero_grad()
            n = inputs.shape[0]
            loss_sum = 0.0
            dtype = next(model.parameters()).dtype
            for start in range(0, n, micro_batch_size):
                stop = min(start + micro_batch_size, n)
                x, y = inputs[start:stop], targets[start:stop]
                if torch.is_floating_point(x):
                    x = x.to(dtype)
                loss = loss_fn(model(x).float(), y)
                weight = (stop - start) / n
                (loss * scaler.scale * weight).backward()
                loss_sum += float(loss) * weight
            model_grads_to_master_grads(params, master_params)
            overflow = scaler.unscale_(master_params)
            stepped = not overflow
            if stepped:
                if max_grad_norm is not None:
                    grads = [m.grad for m in master_params if m.grad is not None]
                    norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads))
                    coef = max_grad_norm / (float(norm) + 1e-6)
                    if coef < 1:
                        for g in grads:
                            g.mul_(coef)
                optimizer.step()
                master_params_to_model_params(params, master_params)
            scaler.update(overflow)
            return loss_sum, stepped
        '''), doc="clips by hand, scales with scaler.scale directly, optimizer.zero_grad()"),
    alt("alt_step_checks_model_grads", Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
        def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                                       micro_batch_size, max_grad_norm=None):
            model_params = list(model.parameters())
            for p in model_params:
                p.grad = None
            n = inputs.shape[0]
            total = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                if x.dtype.is_floating_point:
                    x = x.half() if model_params[0].dtype == torch.float16 else x.to(model_params[0].dtype)
                loss = loss_fn(model(x).float(), y)
                scaled = scaler.scale_loss(loss) * (len(x) / n)
                scaled.backward()
                total += scaled.item() / scaler.scale
            # overflow shows in the fp16 gradients already
            found_inf = any(not torch.isfinite(p.grad).all() for p in model_params if p.grad is not None)
            model_grads_to_master_grads(model_params, master_params)
            scaler.unscale_(master_params)
            if not found_inf:
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                optimizer.step()
            master_params_to_model_params(model_params, master_params)  # a no-op after a skipped step
            optimizer.zero_grad(set_to_none=True)
            scaler.update(found_inf)
            return total, not found_inf
        '''), doc="overflow found on the fp16 grads, copy-back on every call, zero_grad after the step"),
    alt("alt_step_reuses_accumulate", Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
        def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                                       micro_batch_size, max_grad_norm=None):
            """Reuses accumulate_gradients with a loss that is computed in fp32 and scaled."""
            model_params = list(model.parameters())
            if inputs.is_floating_point():
                inputs = inputs.to(model_params[0].dtype)
            scale = scaler.scale
            scaled_total = accumulate_gradients(model, lambda out, y: scaler.scale_loss(loss_fn(out.float(), y)),
                                                inputs, targets, micro_batch_size)
            model_grads_to_master_grads(model_params, master_params)
            found_inf = scaler.unscale_(master_params)
            if not found_inf:
                if max_grad_norm:
                    torch.nn.utils.clip_grad_norm_(master_params, max_norm=max_grad_norm)
                optimizer.step()
                master_params_to_model_params(model_params, master_params)
            scaler.update(found_inf)
            return scaled_total / scale, not found_inf
        '''), doc="calls the student's own accumulate_gradients with a scaled fp32 loss"),
    alt("alt_helpers_and_noise", Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad(set_to_none=True)
            total = 0.0
            for x, y, share in micro_batches(inputs, targets, micro_batch_size):
                loss = loss_fn(model(x), y)
                (loss * share).backward()
                total += loss.item() * share
            print("accumulated", total)                           # debugging output
            print("a warning-like line", file=sys.stderr)
            warnings.warn("still experimenting here")
            return total
        '''), NewCell("accumulate_gradients", '''
        import sys
        import warnings


        def micro_batches(inputs, targets, size):
            """(x, y, share of the batch) for each micro-batch: a helper in a cell of its own."""
            n = inputs.shape[0]
            for start in range(0, n, size):
                x = inputs[start:start + size]
                yield x, targets[start:start + size], x.shape[0] / n
        '''), Append("underflow_fraction", '''
        print(underflow_fraction(torch.tensor([1e-9, 1.0, 0.0])))   # trying it out in the cell
        '''), doc="a helper in a separate cell defined after use, prints, stderr and warnings"),
    alt("alt_course_imports_and_magics", Append("underflow_fraction", '''
        %%time
        from autograder import lesson   # the course's helpers: in the student's kernel, not in the sandbox
        import numpy as np
        ''', first=True), doc="a cell magic and an import of the course package above the exercise"),
    alt("alt_changes_torch_defaults", Append("q5_answer", '''
        torch.set_default_dtype(torch.float64)  # for the student's own experiments further down
        '''), doc="changes torch's default dtype in a solution cell"),
    alt("alt_q5_uppercase", Replace("q5_answer", None, 'Q5_ANSWER = "B"  # mixed precision and accumulation change memory, not the model'),
        doc="an upper-case letter with a comment"),
    alt("alt_q5_parenthesised", Replace("q5_answer", None, "Q5_ANSWER = ' (b) '"),
        doc="the letter in parentheses, with spaces"),
]

# ---- issue 8: Exercise 7 written differently ----
ALTERNATIVES += [
    alt("alt_token_mean_times_share", Replace("token_accumulation", "accumulate_token_gradients", '''
        def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
            mask = targets != ignore_index
            total = int(mask.sum())
            if not total:
                raise ValueError(f"no counted tokens: every target equals ignore_index={ignore_index}")
            for p in model.parameters():
                p.grad = None
            loss_value = 0.0
            for start in range(0, len(inputs), micro_batch_size):
                y = targets[start:start + micro_batch_size]
                n_i = int((y != ignore_index).sum())
                if n_i == 0:
                    continue  # a micro-batch of padding only: its mean would be NaN, its share is 0
                logits = model(inputs[start:start + micro_batch_size])
                mean = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), ignore_index=ignore_index)
                (mean * (n_i / total)).backward()
                loss_value += mean.item() * n_i / total
            return loss_value
        '''), doc="each micro-batch's token mean times its share of the tokens; skips micro-batches of padding"),
    alt("alt_token_masked_per_token_losses", Replace("token_accumulation", "accumulate_token_gradients", '''
        def accumulate_token_gradients(model, inputs, targets, micro_batch_size, ignore_index=-100):
            total = (targets != ignore_index).sum().item()
            if total == 0:
                raise ValueError("the batch has no target token that counts")
            model.zero_grad()
            summed = 0.0
            for start in range(0, inputs.size(0), micro_batch_size):
                y = targets[start:start + micro_batch_size]
                logits = model(inputs[start:start + micro_batch_size]).transpose(1, 2)  # (b, V, T)
                keep = y != ignore_index
                per_token = F.cross_entropy(logits, y.masked_fill(~keep, 0), reduction="none")  # (b, T)
                part = (per_token * keep).sum()
                (part / total).backward()
                summed += float(part)
            return summed / total
        '''), doc="per-token losses with reduction='none', masked by hand, logits as (b, V, T)"),
]
