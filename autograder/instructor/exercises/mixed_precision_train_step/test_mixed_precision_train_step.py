"""Hidden checks for mixed_precision_train_step against the reference."""
import math
import random

import pytest
import torch

from autograder.checks.compare import max_abs_diff, relative_error
from autograder.checks.inputs import classification_batch, token_batch
from autograder.checks.read import kind, number, shown
from autograder.instructor.exercises.master_weights.oracles import fp32_masters
from autograder.instructor.exercises import memory

MLP16 = {"arch": "mlp", "sizes": [6, 16, 5], "seed": 31, "dtype": "float16"}
EMBED16 = {"arch": "embed", "vocab": 20, "dim": 8, "classes": 4, "seed": 32, "dtype": "float16"}
SGD = {"name": "sgd", "lr": 0.2}
MOMENTUM = {"name": "sgd", "lr": 0.05, "momentum": 0.9}
ADAM = {"name": "adam", "lr": 1e-2}


def batches(model, n, count, seed):
    if model["arch"] == "embed":
        return [token_batch(n, 3, model["vocab"], model["classes"], seed + i) for i in range(count)]
    return [classification_batch(n, model["sizes"][0], model["sizes"][-1], seed + i) for i in range(count)]


def run_both(student, reference, model=MLP16, n=12, micro=4, steps=1, optimizer=SGD, seed=0, **extra):
    spec = dict(model=model, masters=fp32_masters(model), batches=batches(model, n, steps, seed),
                loss="cross_entropy", micro_batch_size=micro, optimizer=optimizer, **extra)
    return (student.run("mixed_precision_train_step", **spec),
            reference.run("mixed_precision_train_step", **spec), fp32_masters(model))


def pair(step):
    r = step["returned"]
    if kind(r) != "tuple" or len(r["items"]) != 2:
        return None, None
    return number(r["items"][0]), number(r["items"][1])


def leaked_grads(got, want, t) -> str:
    """Whether the model's .grad after call t is this call's gradient plus the one the call before left."""
    if t == 0:
        return ""
    now, before, right = (got["steps"][t].get("model_grads"), got["steps"][t - 1].get("model_grads"),
                          want["steps"][t].get("model_grads"))
    tensors = [now, before, right]
    if not all(isinstance(x, list) and len(x) == len(right) for x in tensors) or not all(
            isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and isinstance(c, torch.Tensor)
            and a.shape == b.shape == c.shape for a, b, c in zip(*tensors)):
        return ""
    summed = [b.double() + c.double() for b, c in zip(before, right)]
    off = relative_error(now, summed, [torch.zeros_like(x) for x in summed])
    if off > 1e-2 or relative_error(now, right, [torch.zeros_like(x) for x in right]) <= 1e-2:
        return ""
    return ("After this call the model's .grad is this call's gradient plus the one the call before left: the "
            "stale gradients were added to. Hint: zero the model's gradients at the start of every call "
            "(model.zero_grad(set_to_none=True)).")


def assert_like_reference(got, want, start, what, hint="", tol=0.05, dtype=torch.float16):
    """The student's run against the reference's, call by call. dtype: the model's; a loss computed in it
    (rather than in fp32) is as close as its precision allows."""
    loss_tol = 1e-2 if dtype == torch.bfloat16 else 1e-3
    for t, (g, w) in enumerate(zip(got["steps"], want["steps"])):
        call = f"{what}, call {t + 1} of {len(want['steps'])}" if len(want["steps"]) > 1 else what
        g_loss, g_stepped = pair(g)
        w_loss, w_stepped = pair(w)
        assert g_loss is not None, (f"{call}: returned {shown(g['returned'])}; return (loss as a float, "
                                    "stepped as a bool).")
        assert g_stepped == w_stepped, f"{call}: returned stepped={g_stepped}, expected {bool(w_stepped)}. {hint}"
        err = relative_error(g["masters"], w["masters"], start)
        assert err <= tol, (f"{call}: the fp32 masters' update is {err:.1%} off the expected update "
                            f"(tolerance {tol:.0%}). {leaked_grads(got, want, t) or hint}")
        assert math.isclose(g_loss, w_loss, rel_tol=loss_tol, abs_tol=1e-9), (
            f"{call}: returned loss {g_loss!r}, expected the whole-batch mean loss {w_loss:.6g}.")
        for i, (p, m) in enumerate(zip(g["model"], g["masters"])):
            assert max_abs_diff(p, m, round_to=dtype) == 0, (
                f"{call}: model parameter {i} is not its master rounded to fp16; copy the masters back after "
                "every step that was taken.")


STEPS = [
    pytest.param(dict(optimizer=SGD, n=12, micro=4, steps=1), id="SGD, 12 in 4s"),
    pytest.param(dict(optimizer=MOMENTUM, n=10, micro=4, steps=3), id="SGD momentum, 10 in 4+4+2, 3 calls"),
    pytest.param(dict(optimizer=ADAM, n=16, micro=5, steps=2), id="Adam, 16 in 5+5+5+1, 2 calls"),
]


@pytest.mark.behaviour("clean_step")
@pytest.mark.parametrize("config", STEPS)
def test_steps_match_reference(student, reference, config):
    """Several optimizers and micro-batch splits give the reference's updates"""
    got, want, start = run_both(student, reference, **config)
    assert_like_reference(got, want, start, f"mixed_precision_train_step({config['optimizer']['name']}, batch of "
                          f"{config['n']}, micro_batch_size={config['micro']})",
                          "Hint: weight each micro-batch's loss by its share of the batch, multiply by "
                          "scaler.scale, unscale the fp32 master grads before stepping.")


@pytest.mark.behaviour("clip_after_unscale")
def test_clipping_happens_after_unscaling(student, reference):
    """Clipping uses the true (unscaled) gradient norm"""
    got, want, start = run_both(student, reference, optimizer={"name": "sgd", "lr": 0.5}, max_grad_norm=0.05)
    assert_like_reference(got, want, start, "mixed_precision_train_step(..., max_grad_norm=0.05)",
                          "Hint: clip the master gradients after unscale_: a scaled gradient's norm is S times too "
                          "large, so clipping it first acts as a threshold of max_grad_norm / S and cuts far too "
                          "hard; clip only when max_grad_norm is not None.")


@pytest.mark.behaviour("loss_scaling")
def test_tiny_gradients_survive(student, reference):
    """Gradients of about 2^-30, which fp16 flushes to zero, survive thanks to the loss scale"""
    spec = dict(model=MLP16, masters=fp32_masters(MLP16), batches=batches(MLP16, 12, 1, 5),
                loss="tiny_cross_entropy", micro_batch_size=6, optimizer={"name": "sgd", "lr": 2.0**24})
    got = student.run("mixed_precision_train_step", **spec)
    want = reference.run("mixed_precision_train_step", **spec)
    assert_like_reference(got, want, fp32_masters(MLP16), "mixed_precision_train_step with a loss whose "
                          "gradients are about 2^-30",
                          "These gradients underflow to 0 in fp16 unless the loss is multiplied by "
                          "scaler.scale before backward(), and they underflow again if you unscale in fp16: "
                          "unscale the fp32 master grads.")


@pytest.mark.behaviour("overflow_skips")
@pytest.mark.parametrize("optimizer", [ADAM, MOMENTUM], ids=["Adam", "SGD momentum"])
def test_overflow_changes_nothing(student, reference, optimizer):
    """Overflowing steps leave masters, model and optimizer state untouched, and back off the scale"""
    got, want, start = run_both(student, reference, optimizer=optimizer, steps=3, scaler={"init_scale": 2.0**40})
    for t, (g, w) in enumerate(zip(got["steps"], want["steps"])):
        _, stepped = pair(g)
        assert stepped == 0.0, (f"call {t + 1} with scale 2^{40 - t} overflows; it should return stepped=False, "
                                f"but returned {shown(g['returned'])}.")
        moved = max(max_abs_diff(m, s) for m, s in zip(g["masters"], start))
        assert moved == 0, f"an overflowing step moved the masters by {moved:.3g}; skip optimizer.step()."
        assert all(not state for state in g["state"]), (
            f"an overflowing step created or changed {optimizer['name']}'s state ({sorted(g['state'][0])}); "
            "do not call optimizer.step() when found_inf.")
        assert number(g["scale"]) == number(w["scale"]), (
            f"after overflowing call {t + 1} the scale should be {number(w['scale']):g}, "
            f"but it is {shown(g['scale'])}: call scaler.update(found_inf) once per step.")


@pytest.mark.behaviour("overflow_skips")
@pytest.mark.parametrize("row", [1, 10], ids=["first micro-batch", "last micro-batch"])
def test_an_overflow_in_some_gradients_of_one_micro_batch_skips(student, reference, row):
    """An overflow confined to one micro-batch, in some parameters' gradients only, skips the whole step"""
    inputs, targets = classification_batch(12, MLP16["sizes"][0], MLP16["sizes"][-1], seed=7)
    inputs[row, 0] = 3.0e4  # one huge input: its micro-batch's gradients overflow in some layers, not in all
    spec = dict(model=MLP16, masters=fp32_masters(MLP16), batches=[(inputs, targets)], loss="cross_entropy",
                micro_batch_size=4, optimizer=SGD)
    got, want = student.run("mixed_precision_train_step", **spec), reference.run("mixed_precision_train_step", **spec)
    overflowed = [i for i, g in enumerate(want["steps"][0]["model_grads"])
                  if g is not None and not bool(torch.isfinite(g).all())]
    _, stepped = pair(got["steps"][0])
    moved = max(max_abs_diff(m, s) for m, s in zip(got["steps"][0]["masters"], spec["masters"]))
    assert stepped == 0.0 and moved == 0, (
        f"With one input of 3e4 in micro-batch {row // 4 + 1} of 3 (init_scale 2^16), the scaled fp16 gradients of "
        f"parameters {overflowed} overflow and the others stay finite, so the whole step must be skipped; it "
        f"returned {shown(got['steps'][0]['returned'])} and the masters moved by up to {moved:.3g}. Hint: test every "
        "master gradient for inf and NaN once all the micro-batches' backward() have run (scaler.unscale_("
        "master_params) does): not one parameter, one layer, one micro-batch, or the losses.")


@pytest.mark.behaviour("overflow_skips")
def test_the_next_clean_call_steps_after_an_overflow(student, reference):
    """After a skipped call, the next clean call steps: skipping an overflow lets training go on"""
    scaler = {"init_scale": 2.0**40, "backoff_factor": 2.0**-36}  # overflows once, then 2^4: clean
    got, want, start = run_both(student, reference, optimizer=MOMENTUM, steps=2, scaler=scaler)
    _, first = pair(got["steps"][0])
    _, second = pair(got["steps"][1])
    assert first == 0.0, (f"call 1 with scale 2^40 overflows; it should return stepped=False, but returned "
                          f"{shown(got['steps'][0]['returned'])}.")
    assert second == 1.0, (
        f"call 2, with the scale backed off to 2^4, is clean and should step, but returned "
        f"{shown(got['steps'][1]['returned'])}: one overflow stopped training. Clear the gradients at the start of "
        "every call (the inf gradients of the skipped call must not carry over), and unscale only this call's.")
    assert_like_reference(got, want, start, "an overflowing call, then a clean one")


@pytest.mark.behaviour("stale_grads")
def test_stale_gradients_do_not_matter(student, reference):
    """Gradients left on the model and the masters before the call do not leak into the step"""
    got, want, start = run_both(student, reference, optimizer=MOMENTUM, steps=2, stale_grads=True)
    assert_like_reference(got, want, start, "mixed_precision_train_step with stale .grad on the model and masters",
                          "Hint: zero the model's gradients at the start; the masters' grads are replaced.")


@pytest.mark.behaviour("integer_inputs")
def test_integer_inputs_stay_integers(student, reference):
    """Token ids are not cast to fp16 (only floating inputs are)"""
    got, want, start = run_both(student, reference, model=EMBED16, n=10, micro=4, optimizer={"name": "sgd", "lr": 0.5})
    assert_like_reference(got, want, start, "mixed_precision_train_step on an embedding model fed token ids",
                          "Hint: cast inputs only if inputs.is_floating_point().")


@pytest.mark.behaviour("scale_update")
def test_update_once_per_call_and_growth(student, reference):
    """scaler.update is called exactly once per call, and the scale grows after growth_interval clean calls"""
    got, want, start = run_both(student, reference, steps=4, scaler={"growth_interval": 2})
    assert_like_reference(got, want, start, "mixed_precision_train_step, 4 calls with growth_interval=2",
                          "Hint: unscale with the scale the loss was multiplied by; update it only at the end.")
    for t, (g, w) in enumerate(zip(got["steps"], want["steps"])):
        calls = [number(c) for c in g["update_calls"]]
        assert calls == [0.0], (f"call {t + 1}: scaler.update was called with {calls}; call it exactly once, "
                                "with found_inf (False on a clean step).")
        assert number(g["scale"]) == number(w["scale"]), (
            f"after call {t + 1} the scale should be {number(w['scale']):g}, got {shown(g['scale'])}.")


@pytest.mark.behaviour("micro_batches")
def test_micro_batch_limit_and_parameters_kept(student):
    """Never more than micro_batch_size examples at once; parameters keep their identity and fp16 dtype"""
    spec = dict(model=MLP16, masters=fp32_masters(MLP16), batches=batches(MLP16, 11, 2, 9), loss="cross_entropy",
                micro_batch_size=2, optimizer=SGD)
    got = student.run("mixed_precision_train_step", **spec, at_most=2)
    free = student.run("mixed_precision_train_step", **spec)
    steps = got["steps"]
    # the same run, unless a call was larger than 2 (the graded model's first layer then returns NaN)
    same = all(relative_error(s["masters"], f["masters"], spec["masters"]) == 0 for s, f in zip(steps, free["steps"]))
    assert same and got["batches_seen"] and max(got["batches_seen"]) <= 2, (
        f"with micro_batch_size=2 the model saw batches of {sorted(set(got['batches_seen']))}: the graded model's "
        "first layer returns NaN for a call of more than 2 examples.")
    # the model as read through the parameters it had before the first call (other checks compare its values)
    fp16 = all(p.dtype == torch.float16 for s in steps for p in s["model"])
    assert all(got["same_objects"]) and set(got["model_dtypes"]) == {"float16"} and fp16, (
        "after two steps the model's parameters were replaced or changed dtype "
        f"({got['model_dtypes']}); copy the masters into the existing fp16 parameters.")


@pytest.mark.behaviour("masters_keep_updates")
def test_masters_keep_updates_too_small_for_fp16(student, reference):
    """Updates smaller than fp16 can hold add up in the fp32 masters, call after call"""
    # lr 1e-4: most weights move by less than half an fp16 step per call, so the fp16 model barely
    # changes while the masters must add every update up; masters rebuilt from the model lose them
    got, want, start = run_both(student, reference, optimizer={"name": "sgd", "lr": 1e-4}, steps=4, seed=40)
    assert_like_reference(got, want, start, "mixed_precision_train_step(sgd lr=1e-4), 4 calls",
                          "Each update here is smaller than fp16 can show, so only the fp32 masters keep it. "
                          "Hint: the masters are the true weights: never copy the fp16 model into them during a "
                          "step (for example at its start); copy only masters -> model, after optimizer.step().")


@pytest.mark.behaviour("micro_batches")
def test_one_micro_batch_graph_at_a_time(student):
    """Keeps one micro-batch's graph alive at a time, as measured in the sandbox's memory"""
    model = {**memory.WIDE, "dtype": "bfloat16"}  # 2 bytes a value, as fp16, and 4 to 7x faster on a CPU
    inputs, targets = classification_batch(memory.BATCH, memory.FEATURES, memory.CLASSES, seed=44)
    got = student.run("mixed_precision_train_step", measure_memory=True, model=model, masters=fp32_masters(model),
                      batches=[(inputs, targets)], loss="cross_entropy", micro_batch_size=memory.MICRO,
                      optimizer=SGD)
    memory.assert_one_graph_at_a_time(
        got, f"mixed_precision_train_step(bf16 model, batch of {memory.BATCH}, micro_batch_size={memory.MICRO})",
        memory.activation_bytes(dtype_bytes=2), memory.BATCH // memory.MICRO, memory.MICRO)


# ---- scenarios: every dimension the contract names, drawn at random, the whole state compared after every call ----

def scenario(seed: int) -> dict:
    """A seeded run of 3 to 5 calls: model dtype (fp16, bf16), float features or token ids, an optimizer with
    state, an uneven or oversized micro-batch, frozen and unused parameters, stale gradients, clipping, and a
    scale that overflows at some call (growth_factor huge, backoff its inverse) and then steps cleanly again."""
    rng = random.Random(seed)
    dtype = rng.choice(["float16", "bfloat16"])
    if rng.random() < 0.35:
        model = {"arch": "embed", "vocab": 16, "dim": 6, "classes": 3, "seed": 100 + seed, "dtype": dtype}
        frozen = "head.bias"
    else:
        model = {"arch": "mlp", "sizes": [5, rng.choice([4, 7]), 3], "seed": 100 + seed, "dtype": dtype,
                 "act": rng.choice(["relu", "tanh"])}
        frozen = "0.bias"
    # one of: a frozen parameter, one the forward never uses, stale gradients before each call (only where
    # every parameter gets a gradient: zeroing a leftover .grad rather than setting it to None is also right,
    # and AdamW or momentum would tell the two apart), or none of these
    extra = rng.choice(["frozen", "unused", "stale", "none"])
    if extra == "frozen":
        model["frozen"] = frozen
    if extra == "unused":
        model["unused"] = True
    optimizer = rng.choice([{"name": "sgd", "lr": 0.05, "momentum": 0.9}, {"name": "adam", "lr": 1e-2},
                            {"name": "adamw", "lr": 1e-2, "weight_decay": 0.1}])
    n = rng.randint(5, 13)
    micro = rng.choice([1, 2, 3, 4, n - 1, n, n + 3])
    # fp16: clean at 2^8; after growth_interval clean calls the scale jumps to 2^32, past what fp16 gradients
    # can hold, overflows, backs off to 2^8 and steps cleanly again. bf16 has fp32's range: a scale that
    # overflows its gradients would overflow an fp32 scale too (GradScaler keeps it in fp32), so bf16 runs
    # only grow the scale, never overflow
    jump = 2.0 ** 24 if dtype == "float16" else 2.0
    scaler = {"init_scale": 2.0 ** 8, "growth_interval": rng.choice([1, 2]), "growth_factor": jump,
              "backoff_factor": 1 / jump}
    return dict(model=model, masters=fp32_masters(model), batches=batches(model, n, rng.randint(3, 5), 200 + seed),
                loss="cross_entropy", micro_batch_size=micro, optimizer=optimizer, scaler=scaler,
                max_grad_norm=rng.choice([None, None, 0.5]), stale_grads=extra == "stale")


def describe_scenario(spec: dict) -> str:
    model, opt = spec["model"], spec["optimizer"]
    parts = [f"{model['dtype']} {'embedding model fed token ids' if model['arch'] == 'embed' else 'MLP'}",
             ", ".join(f"{k}={v}" for k, v in opt.items()),
             f"{len(spec['batches'])} calls on batches of {len(spec['batches'][0][0])}",
             f"micro_batch_size={spec['micro_batch_size']}",
             (f"scale 2^8 overflowing after {spec['scaler']['growth_interval']} clean call(s), then clean again"
              if spec["scaler"]["growth_factor"] > 2 else
              f"scale 2^8 doubling every {spec['scaler']['growth_interval']} clean call(s)")]
    if "frozen" in model:
        parts.append(f"{model['frozen']} frozen")
    if model.get("unused"):
        parts.append("a parameter the forward never uses")
    if spec["stale_grads"]:
        parts.append("stale .grad before each call")
    if spec["max_grad_norm"] is not None:
        parts.append(f"max_grad_norm={spec['max_grad_norm']}")
    return "; ".join(parts)


@pytest.mark.behaviour("any_run")
@pytest.mark.parametrize("seed", range(6), ids=[f"scenario {i}" for i in range(6)])
def test_random_scenarios(student, reference, seed):
    """Random runs with overflows between clean calls: the reference's state after every call"""
    spec = scenario(seed)
    got, want = student.run("mixed_precision_train_step", **spec), reference.run("mixed_precision_train_step", **spec)
    what = f"mixed_precision_train_step ({describe_scenario(spec)})"
    assert_like_reference(got, want, spec["masters"], what,
                          "Hint: zero the model's gradients at the start of every call, skip everything but "
                          "scaler.update on overflow, and copy the masters back only after a step.",
                          dtype=getattr(torch, spec["model"]["dtype"]))
    for t, (g, w) in enumerate(zip(got["steps"], want["steps"])):
        assert number(g["scale"]) == number(w["scale"]), (
            f"{what}, call {t + 1}: the scale after the call is {shown(g['scale'])}, expected "
            f"{number(w['scale']):g}: call scaler.update(found_inf) once per call.")
        assert [sorted(st) for st in g["state"]] == [sorted(st) for st in w["state"]], (
            f"{what}, call {t + 1}: the optimizer's state differs from the reference's (which parameters have "
            "state): step the optimizer only on a clean call, on the masters.")
