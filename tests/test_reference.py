"""The reference code (executed from the instructor notebook) meets the student contract, judged by
oracles that do not share its code: numpy's float16 casts, torch.amp.GradScaler itself, float64 autograd."""
import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.checks import models
from autograder.checks.compare import max_abs_diff
from autograder.checks.inputs import token_batch_of_lengths
from autograder.instructor.exercises.accumulate_gradients.oracles import full_batch_grads
from autograder.instructor.exercises.dynamic_loss_scaler.oracles import torch_scales
from autograder.instructor.exercises.token_accumulation.oracles import full_batch_token_grads
from autograder.instructor.reference import reference_namespace

REF = reference_namespace()
SETTINGS = settings(max_examples=60, deadline=None)

floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)


@SETTINGS
@given(st.lists(floats32, max_size=60))
def test_underflow_fraction_agrees_with_numpy(values):
    array = np.array(values, dtype=np.float32)
    nonzero = array != 0
    with np.errstate(over="ignore"):  # values past 65504 become inf in float16, as they should
        half = array.astype(np.float16)
    want = float((nonzero & (half == 0)).sum() / nonzero.sum()) if nonzero.any() else 0.0
    got = REF["underflow_fraction"](torch.from_numpy(array))
    assert type(got) is float and math.isclose(got, want, abs_tol=1e-12)


def test_underflow_fraction_edges():
    f = REF["underflow_fraction"]
    assert f(torch.tensor([2.0**-25, 1.01 * 2.0**-25], dtype=torch.float64)) == 0.5
    assert f(torch.tensor([2.0**-30]), torch.bfloat16) == 0.0
    assert f(torch.tensor([])) == 0.0


def grad_scaler_trace(found_infs, **kwargs):
    """Scales of a real torch.amp.GradScaler fed these overflow flags through real steps."""
    w = torch.nn.Parameter(torch.ones(2))
    opt = torch.optim.SGD([w], lr=0.0)
    scaler = torch.amp.GradScaler("cpu", **kwargs)
    scales = [scaler.get_scale()]
    for found in found_infs:
        opt.zero_grad()
        scaler.scale(w.sum()).backward()
        if found:
            w.grad[0] = float("inf")
        scaler.step(opt)
        scaler.update()
        scales.append(scaler.get_scale())
    return scales


@SETTINGS
@given(st.lists(st.booleans(), max_size=25), st.integers(1, 4))
def test_dynamic_scaler_agrees_with_grad_scaler(found_infs, interval):
    scaler = REF["DynamicLossScaler"](init_scale=2.0**10, growth_interval=interval)
    scales = [scaler.scale]
    for found in found_infs:
        scaler.update(found)
        scales.append(scaler.scale)
    assert scales == grad_scaler_trace(found_infs, init_scale=2.0**10, growth_interval=interval)


@SETTINGS
@given(st.lists(st.booleans(), max_size=25), st.integers(1, 4))
def test_scale_oracle_agrees_with_grad_scaler(found_infs, interval):
    """The hidden checks' and expected.pt's scales (instructor/oracles.py) are a real GradScaler's."""
    assert torch_scales(2.0**10, growth_interval=interval, found_infs=found_infs) == grad_scaler_trace(
        found_infs, init_scale=2.0**10, growth_interval=interval)


def test_static_scaler_unscales_a_generator_in_one_pass():
    params = [torch.nn.Parameter(torch.ones(2)) for _ in range(3)]
    for p, g in zip(params, ([4.0, 8.0], None, [2.0, float("nan")])):
        p.grad = None if g is None else torch.tensor(g)
    found = REF["StaticLossScaler"](2.0).unscale_(p for p in params)
    assert found is True and params[0].grad.tolist() == [2.0, 4.0] and params[1].grad is None


def test_master_weights_contract():
    model = torch.nn.Linear(3, 2).half()
    masters = REF["make_master_params"](model)
    assert [m.dtype for m in masters] == [torch.float32] * 2
    assert all(m.is_leaf and m.requires_grad for m in masters)
    fp32 = torch.nn.Linear(3, 2)
    assert all(m.data_ptr() != p.data_ptr() for m, p in zip(REF["make_master_params"](fp32), fp32.parameters()))
    model.weight.grad = torch.ones(2, 3, dtype=torch.float16)
    masters[1].grad = torch.ones(2)  # stale; the model's bias has no grad
    REF["model_grads_to_master_grads"](model.parameters(), masters)
    assert masters[0].grad.dtype == torch.float32 and masters[1].grad is None
    weight = model.weight
    with torch.no_grad():
        masters[0].add_(0.5)
    REF["master_params_to_model_params"](model.parameters(), masters)
    assert model.weight is weight and model.weight.dtype == torch.float16 and model.weight.is_leaf
    assert torch.equal(model.weight, masters[0].detach().half())


@SETTINGS
@given(st.integers(1, 17), st.integers(1, 20), st.integers(0, 1000))
def test_accumulation_equals_one_float64_batch(n, micro, seed):
    spec = {"arch": "mlp", "sizes": [4, 6, 3], "seed": seed, "dtype": "float64"}
    g = torch.Generator().manual_seed(seed)
    inputs, targets = torch.randn(n, 4, generator=g, dtype=torch.float64), torch.randint(0, 3, (n,), generator=g)
    model, seen = models.recorded_model(spec)
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # stale
    loss = REF["accumulate_gradients"](model, F.cross_entropy, inputs, targets, micro)
    want, want_loss = full_batch_grads(spec, "cross_entropy", inputs, targets)
    assert max(seen) <= micro and type(loss) is float and math.isclose(loss, want_loss, rel_tol=1e-9)
    assert all(max_abs_diff(p.grad, w) < 1e-12 for p, w in zip(model.parameters(), want))


def sgd_step(micro, max_grad_norm=None, init_scale=2.0**16, lr=0.1):
    spec = {"arch": "mlp", "sizes": [5, 8, 3], "seed": 3, "dtype": "float16"}
    model = models.build_model(spec)
    masters = [p.detach().float().clone().requires_grad_(True) for p in model.parameters()]
    start = [m.detach().clone() for m in masters]
    g = torch.Generator().manual_seed(0)
    inputs, targets = torch.randn(10, 5, generator=g), torch.randint(0, 3, (10,), generator=g)
    scaler = REF["DynamicLossScaler"](init_scale=init_scale)
    out = REF["mixed_precision_train_step"](model, masters, torch.optim.SGD(masters, lr=lr), scaler,
                                            F.cross_entropy, inputs, targets, micro, max_grad_norm)
    grads, loss = full_batch_grads(spec, "cross_entropy", inputs, targets)
    return out, model, masters, start, grads, loss, scaler


@pytest.mark.parametrize("micro", [10, 4, 3])
def test_train_step_is_an_sgd_step_on_the_float64_gradient(micro):
    (loss, stepped), model, masters, start, grads, want_loss, _ = sgd_step(micro)
    assert stepped is True and math.isclose(loss, want_loss, rel_tol=1e-2)
    for m, s, g in zip(masters, start, grads):
        update = (m.detach() - s).double()
        assert max_abs_diff(update, -0.1 * g) <= 0.02 * float((0.1 * g).abs().max())
    assert all(torch.equal(p, m.detach().half()) for p, m in zip(model.parameters(), masters))


def test_train_step_clips_the_unscaled_gradient():
    _, _, masters, start, grads, _, _ = sgd_step(4, max_grad_norm=1e-3, lr=1.0)
    norm = math.sqrt(sum(float((m.detach() - s).double().pow(2).sum()) for m, s in zip(masters, start)))
    assert math.isclose(norm, 1e-3, rel_tol=1e-3)


def test_train_step_skips_on_overflow():
    (loss, stepped), model, masters, start, _, _, scaler = sgd_step(4, init_scale=2.0**40)
    assert stepped is False and math.isfinite(loss) and scaler.scale == 2.0**39
    assert all(torch.equal(m.detach(), s) for m, s in zip(masters, start))


@SETTINGS
@given(st.lists(st.integers(0, 9), min_size=1, max_size=9), st.integers(1, 10), st.integers(0, 3),
       st.integers(0, 1000))
def test_token_accumulation_equals_one_float64_batch(lengths, micro, masked, seed):
    """Every counted token weighs the same, however long the sequences and however they are split."""
    spec = {"arch": "lm", "vocab": 7, "dim": 4, "seed": seed, "dtype": "float64"}
    inputs, targets = token_batch_of_lengths([n + 1 for n in lengths], 7, seed, masked_prefix=masked)
    model, seen = models.recorded_model(spec)
    if not (targets != -100).any():
        with pytest.raises(ValueError, match="token_accumulation"):
            REF["accumulate_token_gradients"](model, inputs, targets, micro)
        return
    seen.clear()
    for p in model.parameters():
        p.grad = torch.full_like(p, 5.0)  # stale
    loss = REF["accumulate_token_gradients"](model, inputs, targets, micro)
    want, want_loss = full_batch_token_grads(spec, inputs, targets)
    assert max(seen) <= micro and type(loss) is float and math.isclose(loss, want_loss, rel_tol=1e-9)
    assert all(max_abs_diff(p.grad, w) < 1e-12 for p, w in zip(model.parameters(), want))
