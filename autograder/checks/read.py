"""Reading a probe's plain-data answers (its kind, its number, how a student reads it) and how a check says it
failed (CheckFailure, CheckReason).

Like every module of checks/, it runs in the checking process (the grader, or the student's kernel for a
self-check), never in the sandbox, and uses no student code.
"""
from typing import Literal

import torch

from ..text import bounded_repr


# Why a check failed, when it says nothing about the code's logic ("" when it does): "not_implemented" (a stub
# still raises), "missing" (a name is not defined), "error" (the probe could not use what the code returned),
# "tampered" (set aside for review), or how the sandbox failed (sandbox.errors.SandboxReason, passed on as is).
# report.py reads it to say once what made every check of an item fail.
CheckReason = Literal["", "not_implemented", "missing", "error", "tampered", "timeout", "crashed", "protocol",
                      "refused", "not_checked"]


class CheckFailure(AssertionError):
    """A check failed for a reason already worded for the student; `reason` sorts it (CheckReason)."""

    def __init__(self, message: str, reason: CheckReason = ""):
        super().__init__(message)
        self.reason = reason


def kind(desc: dict) -> str:
    """The type of a described value, read from what came back: a float comes back a float, a tensor a tensor,
    a tuple's items in a tuple (checks/answers.py: the probe's word for a type is a report). An object of any
    other type comes back as its type's name alone, which only ever fails a check."""
    value, items = desc.get("value"), desc.get("items")
    if isinstance(value, torch.Tensor):
        return "Tensor"
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__
    if isinstance(items, (tuple, list)):
        return type(items).__name__
    said = desc.get("type")
    return "NoneType" if said in ("NoneType", "bool", "int", "float", "str", "Tensor", "tuple", "list") else str(said)


def number(desc: dict):
    """The numeric value of a described return value, or None if it has none.

    Lenient on purpose: a 0-d tensor still has a value, so a check of the value can pass
    even where a separate check of the type fails.
    """
    value = desc.get("value")
    if kind(desc) in ("float", "int", "bool"):
        return float(value)
    if kind(desc) == "Tensor" and value.numel() == 1:
        return float(value.reshape(()).double())
    return None


def shown(desc: dict) -> str:
    """A short, student-readable rendering of a described value."""
    kind_ = kind(desc)
    if kind_ == "Tensor":
        value = desc["value"]
        if value.numel() == 1:
            return f"tensor({float(value.reshape(()).double())!r}, dtype=torch.{dtype_of(value)})"
        return f"a {dtype_of(value)} tensor of shape {tuple(value.shape)}"
    if kind_ in ("float", "int", "bool", "str", "NoneType"):
        return bounded_repr(desc.get("value"))  # a string may be long: the message shows its start
    if kind_ in ("tuple", "list"):  # what it holds, as far as the probe described it (nested ones by length)
        items = list(desc["items"])
        length = desc.get("length")
        if not items or any(isinstance(i, dict) and kind(i) in ("tuple", "list") for i in items):
            return f"a {kind_} of length {length}"
        inner = ", ".join(shown(i) for i in items[:4]) + (", ..." if not isinstance(length, int) or length > 4 else "")
        return f"({inner}{',' if length == 1 else ''})" if kind_ == "tuple" else f"[{inner}]"
    return f"an object of type {kind_}"


def dtype_of(t: torch.Tensor) -> str:
    """A tensor's dtype as the student writes it: float16, bfloat16, float32."""
    return str(t.dtype).replace("torch.", "")
