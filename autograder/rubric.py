"""The rubric of each auto-graded item: the behaviours its exercise asks for, and their points.

The one table an instructor edits to change how an item's points are split. A behaviour earns
its points only if every check marked with it passes, visible and hidden, every parametrised
case included. A central behaviour is what the exercise is about: when it fails, the item
keeps at most half its points, whatever else passes.

Each check names the behaviour it decides beside its code, `@pytest.mark.behaviour(id)` in
`checks/test_<item>.py` (visible) and `instructor/hidden/test_<item>.py` (hidden, not shipped to
students), so this table names no check. A check whose marker is missing or names no behaviour
here stops the run at collection (runner.behaviour).
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Behaviour:
    id: str
    text: str            # one line, for the student: what the exercise asks for
    points: float
    central: bool = False


RUBRIC = {
    "underflow_fraction": (
        Behaviour("counts_flushed_nonzero", "Counts, among the nonzero entries, those that become exactly 0 when "
                  "cast, with the cast's own rounding (zeros are not counted)", 0.4, central=True),
        Behaviour("uses_dtype", "Casts to the dtype argument, whatever the input's dtype (bfloat16 keeps what "
                  "float16 loses)", 0.2),
        Behaviour("nan_inf_nonzero", "NaN and ±inf count as nonzero", 0.1),
        Behaviour("python_float", "Returns a Python float, and 0.0 when no entry is nonzero", 0.2),
        Behaviour("any_shape_input_kept", "Works on any shape and leaves its input unchanged", 0.1),
    ),
    "static_loss_scaler": (
        Behaviour("scale_loss", "scale_loss returns loss * scale, still attached to the graph", 0.3, central=True),
        Behaviour("scale", "scale is a float attribute of each scaler: 1024.0 by default, or the value given", 0.1),
        Behaviour("unscale_divides", "unscale_ divides every gradient by scale, in place", 0.3, central=True),
        Behaviour("overflow", "unscale_ returns a Python bool: True when a gradient holds inf, -inf or NaN", 0.2),
        Behaviour("edge_cases", "unscale_ skips None gradients and reads a one-shot generator once", 0.1),
    ),
    "dynamic_loss_scaler": (
        Behaviour("backoff", "An overflow multiplies the scale by backoff_factor", 0.5, central=True),
        Behaviour("no_minimum", "There is no minimum scale", 0.2),
        Behaviour("growth", "The scale grows by growth_factor after growth_interval clean updates in a row; "
                  "an overflow or a growth restarts the count", 0.7),
        Behaviour("defaults", "torch's defaults: init_scale 2^16, growth_interval 2000", 0.3),
        Behaviour("inherits", "scale_loss and unscale_ work as in StaticLossScaler (when graded, what your class "
                  "inherits is the reference's: your StaticLossScaler is graded in Exercise 2 only)", 0.3),
    ),
    "master_weights": (
        Behaviour("fp32_leaves", "make_master_params returns a list of fp32 leaves with requires_grad=True, one per "
                  "parameter in order, holding its values, and leaves the model's parameters as they were", 0.4,
                  central=True),
        Behaviour("separate_copies", "Each master owns its memory, even when the model is already fp32", 0.4,
                  central=True),
        Behaviour("grads_to_fp32", "model_grads_to_master_grads sets each master's .grad to an fp32 copy of the "
                  "model's .grad that shares no memory with it, None where it is None", 0.5),
        Behaviour("copy_back", "master_params_to_model_params copies the masters into the existing fp16 parameters, "
                  "in place and untracked", 0.4, central=True),
        Behaviour("copy_back_any_dtype", "The copy back keeps any model dtype (bf16, fp32), reads a generator, and "
                  "leaves the masters alone", 0.3),
    ),
    "accumulate_gradients": (
        Behaviour("full_batch_gradient", "Leaves in each .grad the gradient of the whole batch", 0.7, central=True),
        Behaviour("micro_batches", "Passes the model at most micro_batch_size examples at a time, and keeps one "
                  "micro-batch's graph alive at a time (measured memory)", 0.4, central=True),
        Behaviour("any_split", "Any split works: a smaller last micro-batch, micro-batches of 1 or larger than the "
                  "batch, other models and losses", 0.3),
        Behaviour("stale_discarded", "Discards gradients present before the call, and changes no weight", 0.3),
        Behaviour("mean_loss", "Returns the whole-batch mean loss as a Python float", 0.3),
    ),
    "mixed_precision_train_step": (
        Behaviour("clean_step", "A clean step moves the fp32 masters by the optimizer's update of the whole-batch "
                  "gradient, copies them into the fp16 model, and returns (loss, True)", 0.4),
        Behaviour("masters_keep_updates", "The fp32 masters are the weights: updates too small for fp16 add up in "
                  "them, and they are never overwritten from the fp16 model", 0.3, central=True),
        Behaviour("loss_scaling", "The loss is multiplied by the scale before backward() and the fp32 master "
                  "gradients are unscaled, so tiny gradients survive", 0.4, central=True),
        Behaviour("micro_batches", "At most micro_batch_size examples at a time, one graph alive at a time (measured "
                  "memory), each micro-batch weighted by its share; the parameters stay the same fp16 objects", 0.4,
                  central=True),
        Behaviour("overflow_skips", "On overflow nothing is updated (masters, model, optimizer state), the scale "
                  "backs off and the step returns stepped=False", 0.4, central=True),
        Behaviour("clip_after_unscale", "Clips the unscaled gradients' total norm, only when max_grad_norm is given",
                  0.2),
        Behaviour("scale_update", "scaler.update(found_inf) once per call, so the scale grows after "
                  "growth_interval clean calls", 0.2),
        Behaviour("stale_grads", "Gradients left over from before the call do not leak into the step", 0.2),
        Behaviour("integer_inputs", "Integer inputs (token ids) are not cast to fp16", 0.2),
        Behaviour("any_run", "Runs of several calls drawn at random (fp16 or bf16 models, SGD with momentum, Adam, "
                  "AdamW, frozen and unused parameters, uneven micro-batches, fp16 overflows between clean calls) "
                  "match the reference after every call", 0.3),
    ),
    "token_accumulation": (
        Behaviour("token_weighting", "Weights each micro-batch by its share of the batch's counted tokens, so the "
                  "gradient is that of the mean over every counted token (not 1/k, not per sequence)", 0.8,
                  central=True),
        Behaviour("micro_batches", "At most micro_batch_size sequences at a time, one graph alive at a time (measured "
                  "memory), and gradients from before the call discarded", 0.4, central=True),
        Behaviour("mean_loss", "Returns the whole batch's mean loss per counted token, as a Python float", 0.3),
        Behaviour("empty_batch", "A batch without any counted token raises ValueError", 0.3),
        Behaviour("weights_unchanged", "Only gradients are computed: the weights are left as they were", 0.2),
    ),
    "q5_answer": (
        Behaviour("a_letter", "Q5_ANSWER is one letter: a, b, c or d", 0.1),
        Behaviour("right_letter", "Q5_ANSWER is the right letter", 0.9, central=True),
    ),
}


# Why each item's central behaviours are its exercise's point (a central failure caps the item at half).
WHY_CENTRAL = {
    "underflow_fraction": "Counting what a cast flushes to zero is the measurement the whole exercise is about.",
    "static_loss_scaler": "Loss scaling is multiplying the loss up before backward and dividing the gradients back "
                          "down; a scaler that skips either half leaves the gradients wrong by the scale.",
    "dynamic_loss_scaler": "Backing off on overflow is what makes the scale dynamic: without it one inf stops "
                           "training for good.",
    "master_weights": "The master copy exists to hold the weights in fp32, apart from the fp16 model, and to "
                      "write them back into the same fp16 parameters; fp16 or aliased masters lose the small "
                      "updates the copy is for.",
    "accumulate_gradients": "Accumulation must give the whole batch's gradient while holding only one "
                            "micro-batch's activations: either alone misses the point.",
    "mixed_precision_train_step": "The step is the recipe of the paper: fp32 masters that keep every update, "
                                  "loss scaling, micro-batches, and skipping the step on overflow.",
    "token_accumulation": "Weighting by counted tokens is the exercise's point; doing it one micro-batch's graph "
                          "at a time is why one accumulates.",
    "q5_answer": "The right letter is the answer.",
}


def behaviours(item_id: str) -> tuple:
    """The behaviours of an auto-graded item, or a KeyError that lists the items that have some."""
    try:
        return RUBRIC[item_id]
    except KeyError:
        raise KeyError(f"no rubric for {item_id!r}; items with one: {', '.join(RUBRIC)}") from None


def judge(item, outcomes) -> list:
    """Per behaviour of `item`, as plain data: its points, what it earned, and its failing checks.

    A behaviour no check ran on (the notebook runs no hidden check) earns None. A failing outcome
    that belongs to no check (the grader's "your code ran", when the submission could not start)
    counts against every behaviour.
    """
    mine = {b.id: [] for b in behaviours(item.id)}
    against_all = []
    for o in outcomes:
        if o.behaviour in mine:
            mine[o.behaviour].append(o)
        elif not o.passed:
            against_all.append(o)
    results = []
    for b in behaviours(item.id):
        ran = mine[b.id] + against_all
        failing = [o for o in ran if not o.passed]
        results.append({
            "id": b.id, "description": b.text, "points": b.points, "central": b.central,
            "earned": None if not ran else 0.0 if failing else float(b.points),
            "passed": len(ran) - len(failing), "total": len(ran),
            "failures": [{"name": o.name, "message": o.message, "hidden": o.hidden, "reason": o.reason}
                         for o in failing],
        })
    return results


def score(item, judged: list) -> float:
    """The item's score from `judge`: the points of the behaviours that pass, scaled up to the item's
    points when some were not checked, and at most half when a central one fails."""
    checked = [b for b in judged if b["earned"] is not None]
    possible = sum(b["points"] for b in checked)
    if not possible:
        return 0.0
    earned = item.points * sum(b["earned"] for b in checked) / possible
    if capped(judged):
        earned = min(earned, item.points / 2)
    return round(earned, 4)


def capped(judged: list) -> bool:
    """Whether a central behaviour failed, which leaves the item at most half its points."""
    return any(b["central"] and b["earned"] == 0 for b in judged)
