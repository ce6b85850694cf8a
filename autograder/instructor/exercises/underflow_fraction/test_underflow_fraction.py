"""Hidden checks for underflow_fraction against the reference."""
import pytest
import torch

from autograder.checks.compare import max_abs_diff
from autograder.checks.inputs import log_uniform
from autograder.checks.read import kind, number, shown

RANDOM = [
    pytest.param("float32", None, -40, 4, id="float32 values, default dtype"),
    pytest.param("float64", "float16", -40, 4, id="float64 values to float16"),
    pytest.param("float32", "bfloat16", -140, 4, id="float32 values to bfloat16"),
    pytest.param("float64", "float32", -160, 4, id="float64 values to float32"),
    pytest.param("float16", "float16", -24, 4, id="float16 values to float16"),
]


def known_mistakes(values, dtype=None):
    """What code with each common mistake returns on `values`: [(the mistake, in words; its fraction)]."""
    target = getattr(torch, dtype or "float16")
    nonzero = values != 0
    count = max(int(nonzero.sum()), 1)
    cast = values.to(target)
    return [
        ("counting the values that become subnormal (below torch.finfo(dtype).tiny) as underflowing; only those "
         "that become exactly 0 underflow", int((nonzero & (cast.abs() < torch.finfo(target).tiny)).sum()) / count),
        ("casting to torch.float16 whatever `dtype` says", int((nonzero & (values.half() == 0)).sum()) / count),
        ("dividing by every entry: the zeros were already zero, they are not part of the count",
         int((nonzero & (cast == 0)).sum()) / max(values.numel(), 1)),
        ("counting the zeros as underflowing: they were already zero", int((cast == 0).sum()) / count),
        ("comparing with a threshold instead of casting with values.to(dtype)",
         int((nonzero & (values.abs() < 2.0**-24)).sum()) / count),
    ]


def diagnosis(got, want, values, dtype=None) -> str:
    """The common mistake the wrong answer is the answer of, if exactly one is; else nothing."""
    if got is None:
        return ""
    causes = [why for why, fraction in known_mistakes(values, dtype)
              if fraction == pytest.approx(got, rel=1e-6, abs=1e-9) and fraction != pytest.approx(want, abs=1e-9)]
    return f" That is what you get by {causes[0]}." if len(causes) == 1 else ""


def compare(student, reference, values, dtype=None, what=""):
    got = student.run("underflow_fraction", values=values, dtype=dtype)
    want = reference.run("underflow_fraction", values=values, dtype=dtype)
    g, w = number(got["result"]), number(want["result"])
    assert g is not None and g == pytest.approx(w, rel=1e-6, abs=1e-9), (
        f"underflow_fraction({what or 'values'}{', torch.' + dtype if dtype else ''}) should be {w:.6f}, "
        f"but it returned {shown(got['result'])}." + diagnosis(g, w, values, dtype))
    return got


@pytest.mark.behaviour("uses_dtype")
@pytest.mark.parametrize("source,dtype,low,high", RANDOM)
def test_random_magnitudes(student, reference, source, dtype, low, high):
    """Matches the reference on 2000 values spread over many orders of magnitude"""
    values = log_uniform(2000, low, high, seed=low * 7 + high, dtype=getattr(torch, source))
    compare(student, reference, values, dtype, f"2000 {source} values with log2|v| in [{low}, {high}]")


@pytest.mark.behaviour("counts_flushed_nonzero")
def test_rounding_edge_at_two_to_minus_25(student, reference):
    """Uses fp16's real rounding: 2^-25 becomes 0, but 1.01 * 2^-25 rounds up to 2^-24"""
    values = torch.tensor([2.0**-25, -2.0**-25, 1.01 * 2.0**-25, -1.01 * 2.0**-25, 2.0**-24, 3.0],
                          dtype=torch.float64)
    got = student.run("underflow_fraction", values=values)
    want = reference.run("underflow_fraction", values=values)
    assert number(got["result"]) == pytest.approx(number(want["result"]), rel=1e-6, abs=1e-9), (
        "underflow_fraction([2^-25, -2^-25, 1.01*2^-25, -1.01*2^-25, 2^-24, 3.0]) should be 2/6: only "
        f"+-2^-25 round to 0 (ties go to even), 1.01*2^-25 rounds up to 2^-24. It returned {shown(got['result'])}. "
        "Hint: do not compare against a threshold; cast with values.to(dtype) and test for == 0.")


@pytest.mark.behaviour("nan_inf_nonzero")
def test_nan_and_inf_count_as_nonzero(student, reference):
    """NaN and +-inf are nonzero values that do not underflow"""
    values = torch.tensor([float("nan"), float("inf"), float("-inf"), 2.0**-30, 1.0, 0.0])
    got = student.run("underflow_fraction", values=values)
    assert number(got["result"]) == pytest.approx(1 / 5, rel=1e-6, abs=1e-9), (
        "underflow_fraction([nan, inf, -inf, 2^-30, 1.0, 0.0]) should be 1/5: five nonzero values "
        f"(NaN and inf count), one of which underflows. It returned {shown(got['result'])}. "
        "Hint: `values != 0` is True for NaN; `values.abs() > 0` is False for NaN.")


@pytest.mark.behaviour("python_float")
def test_empty_tensor(student):
    """An empty tensor gives 0.0"""
    got = student.run("underflow_fraction", values=torch.empty(0))
    assert number(got["result"]) == 0.0, (
        f"underflow_fraction(torch.empty(0)) should be 0.0, but it returned {shown(got['result'])}.")


@pytest.mark.behaviour("any_shape_input_kept")
def test_matrix_input_and_zeros(student, reference):
    """Works on a 2-D tensor with many zeros"""
    values = log_uniform(63, -35, 2, seed=5).reshape(7, 9)
    values[::2] = 0.0
    compare(student, reference, values, None, "a 7x9 float32 tensor, every other row zero")


@pytest.mark.behaviour("any_shape_input_kept")
def test_input_is_not_modified(student):
    """Leaves its input unchanged: called again on the same tensor, it gives the same answer"""
    values = log_uniform(50, -40, 3, seed=9)
    values[::7] = float("nan")
    got = student.run("underflow_fraction", values=values, twice=True)
    first, again = number(got["result"]), number(got["again"])
    changed = max_abs_diff(got["input_after"], values) != 0  # what the probe saw of the tensor: it only lowers
    assert again == first and not changed, (
        "underflow_fraction changed the tensor it was given"
        + (f": called again on the same tensor it returned {shown(got['again'])} instead of {shown(got['result'])}, "
           "so code that reuses the tensor afterwards sees other values" if again != first else "")
        + "; work on a copy or a cast.")


@pytest.mark.behaviour("python_float")
def test_returns_float_when_everything_underflows(student):
    """Returns the Python float 1.0 when every nonzero value underflows"""
    got = student.run("underflow_fraction", values=torch.full((5,), 2.0**-40))
    assert kind(got["result"]) == "float" and got["result"]["value"] == 1.0, (
        f"underflow_fraction(five values of 2^-40) should be the float 1.0, but it returned {shown(got['result'])}.")
