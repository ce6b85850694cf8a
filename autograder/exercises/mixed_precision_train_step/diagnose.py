"""The training step's diagnosis: the few scenarios of mixed_precision_train_step that tell its common causes apart (the
loss's dtype, whether the loss was scaled, where the masters came from, which loss is returned), and the one cause
they confirm, in the student's terms. The runner leads the item's report with it when several behaviours fail
(runner.diagnose); the visible checks use the same scenarios, so that a hint names a cause only when it shows.

Runs in the checking process, like the checks: the student's code runs only through `student.run`, and the oracles'
values come from `expected` (the checks' fixture of that name, which the runner hands to `diagnose`).
"""
import math

from ...checks.compare import as_multiple, max_abs_diff, moved_by
from ...checks.inputs import classification_batch
from ...checks.read import kind, number

MODEL = {"arch": "mlp", "sizes": [6, 8, 4], "seed": 3, "dtype": "float16"}
SGD = {"name": "sgd", "lr": 0.5}
SCALE = 2.0 ** 16  # DynamicLossScaler's init_scale, the scale of every scenario here


def start_and_gradient(expected, inputs, targets, model=MODEL):
    """The fp32 masters a step starts from, and the float64 full-batch (gradients, mean loss) of the batch."""
    return expected("fp32_masters", model), expected("full_batch_grads", model, "cross_entropy", inputs, targets)


def one_step(student, expected, batch=12, micro=4, scaler=None, at_most=None, model=MODEL):
    """One SGD step on a classification batch: (the probe's answer, its step, the masters' start, the full batch's
    float64 (gradients, mean loss))."""
    inputs, targets = classification_batch(batch, 6, 4, seed=batch)
    start, full_batch = start_and_gradient(expected, inputs, targets, model)
    out = student.run("mixed_precision_train_step", model=model, masters=start,
                      batches=[(inputs, targets)], loss="cross_entropy", micro_batch_size=micro,
                      optimizer=SGD, scaler=scaler, at_most=at_most)
    return out, out["steps"][0], start, full_batch


def returned_pair(step):
    r = step["returned"]
    if kind(r) != "tuple" or len(r["items"]) != 2:
        return None, None
    loss, stepped = r["items"]
    return loss, stepped


def repeated_calls(student, expected, calls, lr, inputs, targets, **extra):
    """`calls` calls of the step on the same batch (SGD with this lr): the run, where the masters started, and
    what they should have moved by. lr is small enough that the gradient barely changes from call to call, so
    the right total update is calls * -lr * (the float64 gradient at the start)."""
    start, (grads, _) = start_and_gradient(expected, inputs, targets)
    out = student.run("mixed_precision_train_step", model=MODEL, masters=start, batches=[(inputs, targets)] * calls,
                      loss="cross_entropy", micro_batch_size=4, optimizer={"name": "sgd", "lr": lr}, **extra)
    return out, start, [-calls * lr * g for g in grads]


def total_update_error(step, start, want) -> tuple:
    """(how far the masters' total update is from `want`, relative to its size; the multiple of `want` it is,
    when it is one)."""
    moved = [moved_by(m, s) for m, s in zip(step["masters"], start)]
    if len(moved) != len(want) or any(m is None for m in moved):
        return math.inf, None
    err = max(max_abs_diff(m, w) for m, w in zip(moved, want)) / (max(float(w.abs().max()) for w in want) + 1e-12)
    multiple = as_multiple(moved, want)
    return err, None if multiple is None else multiple[0]


# ---- the causes, each confirmed by what its scenario shows ----

def loss_in_low_precision(step) -> str:
    """The loss computed on the model's fp16 (or bf16) output, as loss_fn's calls show it."""
    dtypes = sorted({dtype for dtype, _ in step.get("loss_calls", [])} & {"float16", "bfloat16"})
    if not dtypes:
        return ""
    _, stepped = returned_pair(step)
    skipped = stepped is not None and number(stepped) == 0.0
    return (f"mixed_precision_train_step(batch of 12, micro_batch_size=4, scale 2^16) called loss_fn on the model's "
            f"{dtypes[0]} output, so the loss and its gradient were computed in {dtypes[0]}, where the log-softmax "
            "is rounded and the loss times the scale can overflow"
            + (": this clean batch's step was skipped as an overflow. " if skipped else ". ")
            + "Hint: compute the loss in fp32, loss_fn(model(x).float(), y); only the model runs in fp16.")


def loss_scale_seen(step, grads):
    """The multiple of the float64 gradient that the model's fp16 gradients held after backward(): the scale the
    loss was multiplied by (None where they were cleared, or are no multiple of it)."""
    model_grads = step.get("model_grads", [])
    multiple = as_multiple(model_grads, grads) if all(g is not None for g in model_grads) else None
    if multiple is None:
        return None
    factor, got, want = multiple
    return factor if float((got - factor * want).norm()) <= 0.05 * abs(factor) * float(want.norm()) else None


def never_scaled(step, start, grads) -> str:
    """The loss not multiplied by the scale before backward(): the model's gradients are the true gradient (and
    where the update is 1/scale of the right one, the master gradients were unscaled all the same)."""
    factor = loss_scale_seen(step, grads)
    if factor is None or not math.isclose(factor, 1.0, rel_tol=0.05):
        return ""
    _, moved = total_update_error(step, start, [-SGD["lr"] * g for g in grads])
    unscaled = moved is not None and math.isclose(moved, 1 / SCALE, rel_tol=0.05)
    return ("After backward() the model's fp16 gradients equal the true gradient, not 2^16 times it: the loss was never "
            "multiplied by the scale, so gradients below 2^-24 flush to zero in fp16"
            + (", and unscale_ then divided the master gradients by a scale they never had (the update is 1/2^16 of "
               "the right one). " if unscaled else ". ")
            + "Hint: scaler.scale_loss(loss * share).backward().")


def masters_from_the_model(student, expected) -> str:
    """Masters overwritten from the fp16 model in each call: each call starts from the model's values, so the
    updates too small for fp16 are lost, and the last call's masters are the model before it plus one update."""
    inputs, targets = classification_batch(12, 6, 4, seed=21)
    out, start, want = repeated_calls(student, expected, 4, 1e-4, inputs, targets)
    steps = out["steps"]
    one = [w / 4 for w in want]
    from_model = [moved_by(m, p) for m, p in zip(steps[-1]["masters"], steps[-2]["model"])]
    if len(from_model) != len(one) or any(d is None for d in from_model):
        return ""
    err = max(max_abs_diff(d, w) for d, w in zip(from_model, one)) / (max(float(w.abs().max()) for w in one) + 1e-12)
    _, factor = total_update_error(steps[-1], start, want)
    if err > 0.1 or factor is None or not math.isclose(factor, 0.25, rel_tol=0.2):
        return ""
    return ("After 4 calls of SGD (lr=1e-4), each too small for fp16 to show, the masters moved by one call's update, "
            "not four: each call's masters started from the fp16 model's values, which had not moved. The masters "
            "were overwritten from the fp16 model. Hint: the masters are the true weights; copy only masters -> "
            "model, after optimizer.step(), never the model into the masters.")


def which_loss(step, want_loss: float) -> str:
    """The returned loss, when it is one of the wrong losses the step had at hand (loss_fn's calls show them)."""
    loss, _ = returned_pair(step)
    got = None if loss is None else number(loss)
    losses = [value for _, value in step.get("loss_calls", [])]
    if got is None or not losses or math.isclose(got, want_loss, rel_tol=1e-2):
        return ""
    said = f"mixed_precision_train_step(batch of 12, micro_batch_size=4) returned the loss {got:.4g}, which is "
    close = lambda value: math.isclose(got, value, rel_tol=1e-3)  # noqa: E731
    if len(losses) > 1 and close(losses[-1]):
        return (said + f"the last micro-batch's loss; the whole batch's mean loss is {want_loss:.4f}. Hint: add up "
                "each micro-batch's loss times its share of the batch (total_loss += loss.item() * share).")
    if len(losses) > 1 and close(sum(losses)):
        return (said + f"the sum of the {len(losses)} micro-batches' mean losses; the whole batch's mean loss is "
                f"{want_loss:.4f}. Hint: weight each micro-batch's loss by its share of the batch before adding.")
    if math.isclose(got, want_loss * SCALE, rel_tol=1e-2):
        return (said + f"2^16 times the whole batch's mean loss {want_loss:.4f}: the scaled loss. Hint: add up the "
                "unscaled losses (loss.item() * share), not what scaler.scale_loss returned.")
    return ""


def diagnose(student, expected) -> str:
    """The one cause that the telling scenarios confirm, in the student's terms; "" when none is confirmed."""
    _, step, start, (grads, want_loss) = one_step(student, expected)
    return (loss_in_low_precision(step) or never_scaled(step, start, grads)
            or masters_from_the_model(student, expected) or which_loss(step, want_loss))
