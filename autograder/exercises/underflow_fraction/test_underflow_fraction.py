"""Visible checks for underflow_fraction."""
import pytest
import torch

from autograder.checks.read import kind, number, shown

HINT = ("Hint: count the nonzero entries of `values`, then how many of those become exactly 0 "
        "after `values.to(dtype)`.")


def mixture(n_tiny, n_normal, n_zero, seed=0):
    """Values whose answer is known by construction: 2^-30 always flushes to 0 in fp16, 0.5..1.5 never does."""
    g = torch.Generator().manual_seed(seed)
    values = torch.cat([torch.full((n_tiny,), 2.0 ** -30), torch.rand(n_normal, generator=g) + 0.5,
                        torch.zeros(n_zero)])
    return values[torch.randperm(len(values), generator=g)]


@pytest.mark.behaviour("counts_flushed_nonzero")
@pytest.mark.parametrize("n_tiny,n_normal,n_zero", [(3, 7, 0), (5, 15, 10), (0, 8, 2)])
def test_fraction_of_values_that_flush_to_zero(student, n_tiny, n_normal, n_zero):
    """Counts the nonzero values that become 0 in float16"""
    values = mixture(n_tiny, n_normal, n_zero)
    expected = n_tiny / (n_tiny + n_normal)
    out = student.run("underflow_fraction", values=values)
    got = number(out["result"])
    assert got is not None and got == pytest.approx(expected, rel=1e-6, abs=1e-9), (
        f"underflow_fraction(values) with {n_tiny} values of 2^-30, {n_normal} values near 1 and {n_zero} zeros "
        f"should be {n_tiny}/{n_tiny + n_normal} = {expected:.4f}, but it returned {shown(out['result'])}. "
        + why_not(student, out['result'], n_tiny, n_normal, n_zero))


def why_not(student, result: dict, n_tiny, n_normal, n_zero) -> str:
    """What the wrong fraction shows of its cause, as far as the counts built into the input tell it."""
    got = number(result)
    if kind(result) == "NoneType":
        return "It returns None: does the function end with `return fraction`?"
    if n_zero and got == pytest.approx(n_tiny / (n_tiny + n_normal + n_zero)):
        return (f"That is {n_tiny}/{n_tiny + n_normal + n_zero}: the {n_zero} zeros were counted in the denominator. "
                "Zeros were already zero: they are not part of the count. " + HINT)
    if n_zero and got == pytest.approx((n_tiny + n_zero) / (n_tiny + n_normal)):
        return (f"That is ({n_tiny} + {n_zero})/{n_tiny + n_normal}: the {n_zero} zeros were counted as underflowing, "
                "but they were already zero. " + HINT)
    if n_normal and got == pytest.approx(1.0):
        return (f"That is 1: the {n_normal} values near 1 were counted too. They change when cast (fp16 rounds "
                "them) but do not become 0: comparing the cast back with the original (a round trip) counts every "
                "rounded value, not the flushed ones. " + HINT)
    try:
        other = number(student.run("underflow_fraction", values=mixture(1, 3, 0, seed=7))["result"])
    except AssertionError:  # it failed on that input: nothing more to learn from it
        other = None
    if got is not None and other == got and other != pytest.approx(0.25):
        return (f"It returned {got!r} for 1 value of 2^-30 and 3 near 1 as well (should be 0.25): the answer is the "
                "same whatever the input. Is a placeholder constant left in place of the computation?")
    return HINT


@pytest.mark.behaviour("python_float")
def test_all_zero_input_gives_zero(student):
    """Returns 0.0 when there is no nonzero value"""
    out = student.run("underflow_fraction", values=torch.zeros(6))
    got = number(out["result"])
    hint = ("Hint: return the float 0.0, not the int 0: the fraction is a float whatever the input."
            if got == 0.0 and kind(out["result"]) == "int" else
            "Hint: guard against dividing by a count of 0 (0 / 0 is nan), and return 0.0.")
    assert got == 0.0 and kind(out["result"]) == "float", (
        f"underflow_fraction(torch.zeros(6)) should be the float 0.0 (nothing nonzero can underflow), "
        f"but it returned {shown(out['result'])}. {hint}")


@pytest.mark.behaviour("python_float")
def test_returns_a_python_float(student):
    """Returns a Python float, not a tensor"""
    out = student.run("underflow_fraction", values=mixture(2, 6, 0))
    assert kind(out["result"]) == "float", (
        f"underflow_fraction(values) returned {shown(out['result'])}; it should return a Python float. "
        "Hint: turn a count tensor into a number with int(...) or .item() before dividing.")


@pytest.mark.behaviour("uses_dtype")
def test_bfloat16_keeps_what_float16_loses(student):
    """Uses the dtype argument: 2^-30 survives in bfloat16"""
    values = torch.full((4,), 2.0 ** -30)
    out = student.run("underflow_fraction", values=values, dtype="bfloat16")
    got = number(out["result"])
    assert got == 0.0, (
        f"underflow_fraction(four values of 2^-30, torch.bfloat16) should be 0.0: bfloat16 has fp32's "
        f"8-bit exponent, so 2^-30 is representable. It returned {shown(out['result'])}. "
        "Hint: cast to the `dtype` argument, not to torch.float16.")


@pytest.mark.behaviour("nan_inf_nonzero")
def test_nan_and_inf_are_nonzero(student):
    """NaN and inf are nonzero values, and they do not underflow"""
    values = torch.tensor([float("nan"), 2.0 ** -30, float("-inf"), 2.0 ** -30, 0.5, 0.0])
    out = student.run("underflow_fraction", values=values)
    got = number(out["result"])
    hint = ("That is 2/3: NaN and -inf were left out of the nonzero count. `values.abs() > 0` is False for NaN; "
            "`values != 0` is True for NaN and inf. " if got == pytest.approx(2 / 3) else "")
    assert got == pytest.approx(2 / 5, rel=1e-6, abs=1e-9), (
        "underflow_fraction([nan, 2^-30, -inf, 2^-30, 0.5, 0.0]) should be 2/5: five values are nonzero (NaN and "
        f"inf count), and the two of 2^-30 underflow. It returned {shown(out['result'])}. {hint}" + HINT)


@pytest.mark.behaviour("counts_flushed_nonzero")
def test_the_cast_decides_at_the_rounding_edge(student):
    """Near fp16's smallest step 2^-24 the cast rounds: 0.75 * 2^-24 survives, 0.4 * 2^-24 flushes"""
    tiny = 2.0 ** -24
    values = torch.tensor([0.75 * tiny, 0.4 * tiny, 0.5 * tiny, -0.75 * tiny, 2.0 ** -20, 1.0, 0.0])
    out = student.run("underflow_fraction", values=values)
    got = number(out["result"])
    if got == pytest.approx(4 / 6):
        why = ("That is 4/6: every value below 2^-24 was counted as flushed, but the cast rounds to the nearest "
               "fp16 value, and ±0.75 * 2^-24 round to ±2^-24. ")
    elif got == pytest.approx(5 / 6):
        why = ("That is 5/6: the values that became subnormal in fp16 (nonzero, below its smallest normal number "
               "2^-14: ±2^-24 and 2^-20) were counted too, but a subnormal is not 0. ")
    else:
        why = ""
    assert got == pytest.approx(2 / 6, rel=1e-6, abs=1e-9), (
        "underflow_fraction([0.75, 0.4, 0.5, -0.75] * 2^-24 + [2^-20, 1.0, 0.0]) should be 2/6: of the six nonzero "
        "values, 0.4 * 2^-24 and 0.5 * 2^-24 (a tie, rounded to the even 0) become 0 in fp16, while ±0.75 * 2^-24 "
        f"round to ±2^-24 and 2^-20 is kept as a subnormal. It returned {shown(out['result'])}. {why}Hint: do not "
        "compare with a threshold; cast with values.to(dtype) and test for == 0.")
