"""Visible checks for mixed_precision_train_step, against a float64 SGD step."""
import math

import pytest
import torch

from autograder.exercises.mixed_precision_train_step.diagnose import (MODEL, SCALE, SGD, loss_scale_seen, one_step,
                                                                   repeated_calls, returned_pair, start_and_gradient,
                                                                   total_update_error, which_loss)
from autograder.checks.compare import as_multiple, has_nan, max_abs_diff, moved_by
from autograder.checks.inputs import classification_batch, token_batch
from autograder.checks.messages import kept_graphs
from autograder.checks.read import CheckFailure, kind, number, shown
from autograder.exercises import exercise_name

SCALER_EXERCISE = exercise_name("dynamic_loss_scaler")  # "Exercise 3", from the lesson order

BF16_MODEL = {**MODEL, "dtype": "bfloat16"}


def sgd_error(step, start, grads):
    """How far the masters' update is from -lr * (float64 full-batch gradient), relative to its size."""
    worst = 0.0
    for m, s, g in zip(step["masters"], start, grads):
        want = -SGD["lr"] * g
        moved = moved_by(m, s)
        worst = max(worst, max_abs_diff(moved, want) / (float(want.abs().max()) + 1e-12))
    return worst


def update_multiple(step, start, grads, scale) -> str:
    """What the update shows when it is a multiple of the right one: of 1/scale (divided by the scale twice, or
    never multiplied by it, as the model's gradients tell), of scale (never divided); otherwise the usual hint."""
    multiple = as_multiple([moved_by(m, s) for m, s in zip(step["masters"], start)], [-SGD["lr"] * g for g in grads])
    if multiple is not None:
        factor, u, w = multiple
        if float((u - factor * w).norm()) <= 0.05 * float(w.norm()) * abs(factor):
            seen = loss_scale_seen(step, grads)
            if math.isclose(factor, 1 / scale, rel_tol=0.05) and seen is not None and math.isclose(seen, 1.0,
                                                                                                rel_tol=0.05):
                return (f"The update is 1/{scale:g} of the right one, and after backward() the model's fp16 "
                        "gradients equal the true gradient: the loss was never multiplied by the scale, and the "
                        "master grads were divided by it. Hint: scaler.scale_loss(loss * share).backward().")
            if math.isclose(factor, 1 / scale, rel_tol=0.05) and seen is not None:
                return (f"The update is 1/{scale:g} of the right one: the gradients were divided by the scale "
                        f"twice. Hint: unscale the master grads once (one scaler.unscale_ call per step).")
            if math.isclose(factor, scale, rel_tol=0.05):
                return (f"The update is {scale:g} times the right one: the gradients were never divided by the "
                        "scale. Hint: scaler.unscale_(master_params) before optimizer.step().")
    return ("Hint: unscale the master grads (divide by the scale) before optimizer.step(), and weight each "
            "micro-batch's loss by its share of the batch.")


@pytest.mark.behaviour("clean_step")
def test_one_clean_step(student, expected):
    """A clean step updates the fp32 masters by -lr * gradient and returns (loss, True)"""
    out, step, start, (grads, want_loss) = one_step(student, expected, scaler={"growth_interval": 1})
    loss, stepped = returned_pair(step)
    assert loss is not None, (
        f"mixed_precision_train_step returned {shown(step['returned'])}; it should return a tuple "
        "(whole-batch mean loss as a float, whether the optimizer stepped).")
    err = sgd_error(step, start, grads)
    assert number(stepped) == 1.0, (
        f"On a step with no overflow (scale 2^16, small gradients) the step should return stepped=True, "
        f"got {shown(stepped)}.")
    assert err < 0.05, (
        f"After one SGD step (lr=0.5, batch of 12, micro_batch_size=4), the masters moved by an update that is "
        f"{err:.0%} off -lr * gradient. " + update_multiple(step, start, grads, SCALE))
    right = number(loss) is not None and math.isclose(number(loss), want_loss, rel_tol=1e-2)
    assert kind(loss) == "float" and right, which_loss(step, want_loss) or (
        f"The returned loss is {shown(loss)}; the whole-batch mean loss is about {want_loss:.4f}. "
        + ("Return it as a Python float (loss.item())." if right else "Hint: return the whole batch's mean loss, "
           "unscaled: the sum of each micro-batch's loss times its share of the batch."))
    for i, (p, m) in enumerate(zip(step["model"], step["masters"])):
        assert max_abs_diff(p, m, round_to=torch.float16) == 0, (
            f"After the step, model parameter {i} is not its master rounded to fp16: copy the masters back "
            "into the model after optimizer.step().")
    assert out["model_dtypes"] == ["float16"] * len(out["model_dtypes"]) and all(
        p.dtype == torch.float16 for p in step["model"]), (
        f"The model's parameters changed dtype to {out['model_dtypes']}; the working copy stays float16.")
    calls = [number(c) for c in step["update_calls"]]  # as the probe saw them: for the message
    assert calls == [0.0] and number(step["scale"]) == 2.0 ** 17, (
        f"With growth_interval=1, one clean step's scaler.update(False) doubles the scale from 2^16 to 2^17, but "
        f"after the step it is {shown(step['scale'])}. "
        + (f"scaler.update was called with {[shown(c) for c in step['update_calls']]}; it must be called exactly "
           "once per step, with found_inf (False here)." if calls != [0.0] else
           "scaler.update(False) was called once, as it should: your DynamicLossScaler's update does not grow "
           f"the scale after growth_interval clean updates ({SCALER_EXERCISE}'s checks say more)."))


@pytest.mark.behaviour("overflow_skips")
def test_overflow_skips_the_step(student, expected):
    """On overflow the step is skipped: masters and model unchanged, scale backed off, returns stepped=False"""
    out, step, start, _ = one_step(student, expected, scaler={"init_scale": 2.0 ** 40})
    loss, stepped = returned_pair(step)
    grads = [g for g in step.get("model_grads", []) if g is not None]
    never_scaled = (bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads)
                    and any(bool(g.any()) for g in grads))
    assert stepped is not None and number(stepped) == 0.0, (
        "With init_scale=2^40 the scaled fp16 gradients overflow, so the step must be skipped and "
        f"return stepped=False, but it returned {shown(step['returned'])}. "
        + ("The model's fp16 gradients after backward() are all finite, which a loss multiplied by 2^40 cannot "
           "give: the loss was not multiplied by scaler.scale before backward() (scaler.scale_loss(loss))."
           if never_scaled else "These fp16 gradients hold NaN and no inf (inf - inf in the backward pass): a "
           "check with torch.isinf alone misses them. Hint: use unscale_'s found_inf, which must be True when "
           "any gradient is not finite (not torch.isfinite(g).all() catches inf, -inf and NaN)."))
    moved = max(max_abs_diff(m, s) for m, s in zip(step["masters"], start))
    assert moved == 0, (
        f"On an overflow step the masters changed by up to {moved:.3g}; skip optimizer.step() when found_inf.")
    model_moved = max(max_abs_diff(p, s.half()) for p, s in zip(step["model"], start))
    assert model_moved == 0, "On an overflow step the model's weights changed; leave them alone."
    assert math.isclose(float(step["scale"].get("value") or 0), 2.0 ** 39), (
        f"After an overflow the scale should back off from 2^40 to 2^39, but it is {shown(step['scale'])}. "
        "Hint: call scaler.update(found_inf) once at the end of every step, skipped or not.")


@pytest.mark.behaviour("overflow_skips")
def test_an_inf_gradient_skips_the_step(student, expected):
    """A gradient that holds inf and no NaN skips the step too: masters unchanged, stepped=False, scale halved"""
    inputs, targets = classification_batch(12, 6, 4, seed=12)
    inputs[5, 2] = 3.0e4  # one huge input: some fp16 gradients overflow to inf, none is NaN
    start = expected("fp32_masters", MODEL)
    step = student.run("mixed_precision_train_step", model=MODEL, masters=start, batches=[(inputs, targets)],
                       loss="cross_entropy", micro_batch_size=4, optimizer=SGD)["steps"][0]
    _, stepped = returned_pair(step)
    moved = max(max_abs_diff(m, s) for m, s in zip(step["masters"], start))
    assert stepped is not None and number(stepped) == 0.0 and moved == 0, (
        "With one input of 3e4 in the batch, some scaled fp16 gradients overflow to inf (none is NaN), so the "
        f"step must be skipped, but it returned {shown(step['returned'])} and the masters moved by up to "
        f"{moved:.3g}. A check with torch.isnan alone misses inf. Hint: found_inf must be True when any gradient "
        "is not finite (not torch.isfinite(g).all() catches inf, -inf and NaN); use unscale_'s.")


@pytest.mark.behaviour("masters_keep_updates")
def test_a_bf16_model_is_stepped_in_its_own_dtype(student, expected):
    """On a bf16 model the step moves the fp32 masters and leaves the model their bf16 rounding, still bf16"""
    out, step, start, (grads, _) = one_step(student, expected, model=BF16_MODEL)
    err = sgd_error(step, start, grads)
    assert err < 0.05, (
        f"On a bf16 model, one SGD step (lr=0.5, batch of 12, micro_batch_size=4) moved the masters by an update "
        f"{err:.0%} off -lr * gradient. Hint: nothing in the step may assume fp16: cast float inputs to the "
        "model's own dtype (model_params[0].dtype), never with .half().")
    assert out["model_dtypes"] == ["bfloat16"] * len(out["model_dtypes"]) and all(
        max_abs_diff(p, m, round_to=torch.bfloat16) == 0 for p, m in zip(step["model"], step["masters"])), (
        f"After a step on a bf16 model its parameters are {out['model_dtypes']} and not each its master rounded to "
        "bf16: copy the masters back in the model's own dtype (p.copy_(master) keeps it).")


@pytest.mark.behaviour("micro_batches")
def test_one_graph_alive_at_a_time(student, expected):
    """Keeps one micro-batch's graph alive at a time: each is freed by its backward() before the next forward"""
    out, *_ = one_step(student, expected)
    assert out["graphs_alive"] <= 1, kept_graphs(
        "mixed_precision_train_step(batch of 12, micro_batch_size=4)", out["graphs_alive"], 3)


@pytest.mark.behaviour("micro_batches")
def test_micro_batches_are_respected(student, expected):
    """With an uneven last micro-batch the step still follows the full-batch gradient, 4 examples at a time"""
    out, step, start, (grads, _) = one_step(student, expected, batch=10, micro=4, at_most=4)
    assert not has_nan(step["model_grads"]) and out["batches_seen"] and max(out["batches_seen"]) <= 4, (
        f"With micro_batch_size=4 the model was called on batches of {out['batches_seen']}: the graded model's "
        "first layer returns NaN for a call of more than 4 examples, so the step saw an overflow. Hint: slice "
        "inputs[start:start + micro_batch_size].")
    err = sgd_error(step, start, grads)
    assert err < 0.05, (
        f"With a batch of 10 split 4 + 4 + 2, the update is {err:.0%} off the full-batch SGD step. "
        "Hint: weight each micro-batch's loss by its size / 10, not by 1 / number of micro-batches.")


@pytest.mark.behaviour("clip_after_unscale")
def test_clipping_uses_the_unscaled_norm(student, expected):
    """With max_grad_norm, the update is clipped to max_grad_norm measured on the true (unscaled) gradient"""
    inputs, targets = classification_batch(12, 6, 4, seed=12)
    max_norm = 0.05
    start, (grads, _) = start_and_gradient(expected, inputs, targets)
    out = student.run("mixed_precision_train_step", model=MODEL, masters=start,
                      batches=[(inputs, targets)], loss="cross_entropy", micro_batch_size=4, optimizer=SGD,
                      max_grad_norm=max_norm)
    norm = math.sqrt(sum(float(g.pow(2).sum()) for g in grads))
    clip = min(1.0, max_norm / norm)  # clip_grad_norm_'s factor, on the float64 gradient
    updates = [moved_by(m, s) for m, s in zip(out["steps"][0]["masters"], start)]
    assert len(updates) == len(start) and all(u is not None for u in updates), (
        f"mixed_precision_train_step(SGD, max_grad_norm={max_norm}): after the step the masters are not "
        f"{len(start)} tensors of the parameters' shapes {[tuple(s.shape) for s in start]}. Hint: update the "
        "masters in place (optimizer.step()); never replace them.")
    moved = math.sqrt(sum(float(u.pow(2).sum()) for u in updates))
    want = SGD["lr"] * clip * norm
    err = max(max_abs_diff(u, -SGD["lr"] * clip * g) for u, g in zip(updates, grads))
    hint = ("Hint: clip after scaler.unscale_. A scaled gradient's norm is S times too large, so clipping it first "
            "acts as a threshold of max_grad_norm / S and cuts far too hard." if moved < want / 2 else
            "Hint: clip the total norm of all the master gradients together (torch.nn.utils.clip_grad_norm_), "
            "after unscaling, so the step keeps the gradient's direction.")
    assert err <= 0.05 * SGD["lr"] * clip * max(float(g.abs().max()) for g in grads), (
        f"mixed_precision_train_step(SGD lr={SGD['lr']}, scale 2^16, max_grad_norm={max_norm}): the gradient's norm "
        f"is {norm:.3g}, so the clipped update should have norm lr * {max_norm} = {want:.3g}; the masters moved by "
        f"{moved:.3g}. {hint}")


@pytest.mark.behaviour("masters_keep_updates")
def test_masters_add_up_updates_too_small_for_fp16(student, expected):
    """Four calls whose updates are too small for fp16 to show: the fp32 masters add all four up"""
    inputs, targets = classification_batch(12, 6, 4, seed=21)
    out, start, want = repeated_calls(student, expected, 4, 1e-4, inputs, targets)
    last = out["steps"][-1]
    err, factor = total_update_error(last, start, want)
    if factor is not None and math.isclose(factor, 0.25, rel_tol=0.2):
        why = ("That is about one call's update, not four: the masters lost the earlier calls' updates, which "
               "the fp16 model is too coarse to hold. Hint: the masters are the true weights; never copy the fp16 "
               "model into them during a step (at its start, say): copy only masters -> model, after "
               "optimizer.step().")
    elif factor is not None and factor > 1.5:
        why = (f"That is {factor:.2g} times the four updates: each call added the earlier calls' gradients again. "
               "Hint: zero the model's gradients at the start of every call (model.zero_grad(set_to_none=True)).")
    else:
        why = ("Each update here (lr=1e-4) is smaller than fp16 can show, so only the fp32 masters can keep it. "
               "Hint: unscale the fp32 master grads and let optimizer.step() update the masters in place.")
    assert err < 0.1, (
        f"After 4 calls of SGD (lr=1e-4) on the same batch, the masters should have moved by about 4 times one "
        f"update (-lr * gradient each call), but their total update is {err:.0%} off that. {why}")
    for i, (p, m) in enumerate(zip(last["model"], last["masters"])):
        assert max_abs_diff(p, m, round_to=torch.float16) == 0, (
            f"After 4 calls, model parameter {i} is not its master rounded to fp16: the fp16 model must follow "
            "the masters. Copy the masters back into the model after every optimizer.step().")


@pytest.mark.behaviour("loss_scaling")
def test_tiny_gradients_survive_loss_scaling(student, expected):
    """Gradients of about 2^-27, which fp16 flushes to zero, survive: the loss is scaled before backward()"""
    inputs, targets = classification_batch(12, 6, 4, seed=22)
    start = expected("fp32_masters", MODEL)
    grads, _ = expected("full_batch_grads", MODEL, "tiny_cross_entropy", inputs, targets)
    lr = 2.0 ** 20
    out = student.run("mixed_precision_train_step", model=MODEL, masters=start, batches=[(inputs, targets)],
                      loss="tiny_cross_entropy", micro_batch_size=4, optimizer={"name": "sgd", "lr": lr})
    err, factor = total_update_error(out["steps"][0], start, [-lr * g for g in grads])
    lost = factor is not None and abs(factor) < 0.5
    assert err < 0.1, (
        "mixed_precision_train_step with a loss multiplied by 2^-24 (its gradients are about 2^-27, below fp16's "
        f"smallest value 2^-24) and SGD lr=2^20: the masters' update is {err:.0%} off -lr * gradient. "
        + ("Most of the gradient was lost: it " if lost else "The gradient ")
        + "flushes to zero in fp16 unless the loss is multiplied by scaler.scale before backward() "
        "(scaler.scale_loss(loss).backward()), and again if you unscale the fp16 gradients: copy them to the fp32 "
        "masters first, then scaler.unscale_(master_params).")


@pytest.mark.behaviour("stale_grads")
def test_gradients_do_not_carry_over_between_calls(student, expected):
    """Two calls in a row: the second uses its own gradient, not the first call's added to it"""
    inputs, targets = classification_batch(12, 6, 4, seed=23)
    out, start, want = repeated_calls(student, expected, 2, 1e-3, inputs, targets)
    err, factor = total_update_error(out["steps"][-1], start, want)
    stale = factor is not None and math.isclose(factor, 1.5, rel_tol=0.1)
    why = ("That is 1.5 times the two updates: the second call added its gradient to the first call's, which was "
           "still in the model's .grad. Hint: backward() adds into .grad, so zero the model's gradients at the start "
           "of every call (model.zero_grad(set_to_none=True))." if stale else
           "It is not the 1.5 times the two updates that a gradient left over from the first call would give, so "
           "the cause lies elsewhere in the step: the item's other failing checks say where.")
    assert err < 0.05, (
        f"After 2 calls of SGD (lr=1e-3) on the same batch, the masters should have moved by about twice one "
        f"update, but their total update is {err:.0%} off that. {why}")


TOKEN_MODEL = {"arch": "embed", "vocab": 20, "dim": 8, "classes": 4, "seed": 4, "dtype": "float16"}


@pytest.mark.behaviour("integer_inputs")
def test_token_ids_stay_integers(student, expected):
    """An embedding model fed token ids: only floating inputs are cast to the model's dtype"""
    inputs, targets = token_batch(10, 3, TOKEN_MODEL["vocab"], TOKEN_MODEL["classes"], seed=24)
    start = expected("fp32_masters", TOKEN_MODEL)
    grads, _ = expected("full_batch_grads", TOKEN_MODEL, "cross_entropy", inputs, targets)
    hint = ("Token ids are integers (an nn.Embedding's indices): cast the inputs to the model's dtype only if "
            "inputs.is_floating_point().")
    try:
        out = student.run("mixed_precision_train_step", model=TOKEN_MODEL, masters=start,
                          batches=[(inputs, targets)], loss="cross_entropy", micro_batch_size=4, optimizer=SGD)
    except CheckFailure as failure:
        if failure.reason:
            raise
        raise CheckFailure(f"{failure} {hint}") from None
    err, _ = total_update_error(out["steps"][0], start, [-SGD["lr"] * g for g in grads])
    assert err < 0.05, (
        f"mixed_precision_train_step on an embedding model fed a batch of 10 token-id sequences (int64): the "
        f"masters' update is {err:.0%} off -lr * gradient. {hint}")
