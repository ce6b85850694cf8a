"""Visible checks for Exercise 6: mixed_precision_train_step, against a float64 SGD step."""
import math

import pytest
import torch

from autograder.checks.expect import (as_multiple, classification_batch, expected, max_abs_diff, moved_by, number,
                                      shown)

MODEL = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3, "dtype": "float16"}
SGD = {"name": "sgd", "lr": 0.5}


def start_and_gradient(inputs, targets):
    """The fp32 masters a step starts from, and the float64 full-batch (gradients, mean loss) of the batch."""
    return expected("fp32_masters", MODEL), expected("full_batch_grads", MODEL, "cross_entropy", inputs, targets)


def one_step(student, batch=12, micro=4, scaler=None):
    inputs, targets = classification_batch(batch, 6, 4, seed=batch)
    start, full_batch = start_and_gradient(inputs, targets)
    out = student.run("mixed_precision_train_step", model=MODEL, masters=start,
                      batches=[(inputs, targets)], loss="cross_entropy", micro_batch_size=micro,
                      optimizer=SGD, scaler=scaler)
    return out, out["steps"][0], start, full_batch


def returned_pair(step):
    r = step["returned"]
    if r["type"] != "tuple" or r["length"] != 2:
        return None, None
    loss, stepped = r["items"]
    return loss, stepped


def sgd_error(step, start, grads):
    """How far the masters' update is from -lr * (float64 full-batch gradient), relative to its size."""
    worst = 0.0
    for m, s, g in zip(step["masters"], start, grads):
        want = -SGD["lr"] * g
        moved = moved_by(m, s)
        worst = max(worst, max_abs_diff(moved, want) / (float(want.abs().max()) + 1e-12))
    return worst


def update_multiple(step, start, grads, scale) -> str:
    """What the update shows when it is a multiple of the right one: of 1/scale (divided by the scale twice),
    of scale (never divided); otherwise the usual hint."""
    multiple = as_multiple([moved_by(m, s) for m, s in zip(step["masters"], start)], [-SGD["lr"] * g for g in grads])
    if multiple is not None:
        factor, u, w = multiple
        if float((u - factor * w).norm()) <= 0.05 * float(w.norm()) * abs(factor):
            if math.isclose(factor, 1 / scale, rel_tol=0.05):
                return (f"The update is 1/{scale:g} of the right one: the gradients were divided by the scale "
                        f"twice. Hint: unscale the master grads once (one scaler.unscale_ call per step).")
            if math.isclose(factor, scale, rel_tol=0.05):
                return (f"The update is {scale:g} times the right one: the gradients were never divided by the "
                        "scale. Hint: scaler.unscale_(master_params) before optimizer.step().")
    return ("Hint: unscale the master grads (divide by the scale) before optimizer.step(), and weight each "
            "micro-batch's loss by its share of the batch.")


@pytest.mark.behaviour("clean_step")
def test_one_clean_step(student):
    """A clean step updates the fp32 masters by -lr * gradient and returns (loss, True)"""
    out, step, start, (grads, want_loss) = one_step(student)
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
        f"{err:.0%} off -lr * gradient. " + update_multiple(step, start, grads, 2.0 ** 16))
    assert loss["type"] == "float" and math.isclose(loss["value"], want_loss, rel_tol=1e-2), (
        f"The returned loss is {shown(loss)}; the whole-batch mean loss is about {want_loss:.4f}. "
        "Return the unscaled loss as a Python float.")
    for i, (p, m) in enumerate(zip(step["model"], step["masters"])):
        assert max_abs_diff(p, m, round_to=torch.float16) == 0, (
            f"After the step, model parameter {i} is not its master rounded to fp16: copy the masters back "
            "into the model after optimizer.step().")
    assert out["model_dtypes"] == ["float16"] * len(out["model_dtypes"]), (
        f"The model's parameters changed dtype to {out['model_dtypes']}; the working copy stays float16.")
    assert [number(c) for c in step["update_calls"]] == [0.0], (
        f"scaler.update was called with {[shown(c) for c in step['update_calls']]}; it must be called exactly "
        "once per step, with found_inf (False here).")


@pytest.mark.behaviour("overflow_skips")
def test_overflow_skips_the_step(student):
    """On overflow the step is skipped: masters and model unchanged, scale backed off, returns stepped=False"""
    out, step, start, _ = one_step(student, scaler={"init_scale": 2.0 ** 40})
    loss, stepped = returned_pair(step)
    grads = [g for g in step.get("model_grads", []) if g is not None]
    never_scaled = (bool(grads) and all(bool(torch.isfinite(g).all()) for g in grads)
                    and any(bool(g.any()) for g in grads))
    assert stepped is not None and number(stepped) == 0.0, (
        "With init_scale=2^40 the scaled fp16 gradients overflow to inf, so the step must be skipped and "
        f"return stepped=False, but it returned {shown(step['returned'])}. "
        + ("The model's fp16 gradients after backward() are all finite, which a loss multiplied by 2^40 cannot "
           "give: the loss was not multiplied by scaler.scale before backward() (scaler.scale_loss(loss))."
           if never_scaled else "Hint: use unscale_'s found_inf."))
    moved = max(max_abs_diff(m, s) for m, s in zip(step["masters"], start))
    assert moved == 0, (
        f"On an overflow step the masters changed by up to {moved:.3g}; skip optimizer.step() when found_inf.")
    model_moved = max(max_abs_diff(p, s.half()) for p, s in zip(step["model"], start))
    assert model_moved == 0, "On an overflow step the model's weights changed; leave them alone."
    assert math.isclose(float(step["scale"].get("value") or 0), 2.0 ** 39), (
        f"After an overflow the scale should back off from 2^40 to 2^39, but it is {shown(step['scale'])}. "
        "Hint: call scaler.update(found_inf) once at the end of every step, skipped or not.")


@pytest.mark.behaviour("micro_batches")
def test_micro_batches_are_respected(student):
    """With an uneven last micro-batch the step still follows the full-batch gradient, 4 examples at a time"""
    out, step, start, (grads, _) = one_step(student, batch=10, micro=4)
    assert out["batches_seen"] and max(out["batches_seen"]) <= 4, (
        f"With micro_batch_size=4 the model was called on batches of {out['batches_seen']}.")
    err = sgd_error(step, start, grads)
    assert err < 0.05, (
        f"With a batch of 10 split 4 + 4 + 2, the update is {err:.0%} off the full-batch SGD step. "
        "Hint: weight each micro-batch's loss by its size / 10, not by 1 / number of micro-batches.")


@pytest.mark.behaviour("clip_after_unscale")
def test_clipping_uses_the_unscaled_norm(student):
    """With max_grad_norm, the update is clipped to max_grad_norm measured on the true (unscaled) gradient"""
    inputs, targets = classification_batch(12, 6, 4, seed=12)
    max_norm = 0.05
    start, (grads, _) = start_and_gradient(inputs, targets)
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
