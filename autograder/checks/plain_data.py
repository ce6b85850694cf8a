"""What the student's code returned or raised, as plain data: a value's exact type and, where that is safe,
its value (`describe`); an exception's type, message and the student's line that raised it
(`describe_exception`); a tensor's attributes read through torch's C type (`attr`); short texts for the
messages. Plain data is what `torch.load(..., weights_only=True)` can carry out of the sandbox.

Like harness.py, this file imports nothing but torch and the standard library: in the sandbox it is executed
into the probes' namespace first (sandbox/isolation.py, PROBE_FILES).
"""
import linecache
import types

import torch


def _safe_text(obj, limit=400) -> str:
    try:
        text = str(obj)
    except BaseException:
        text = "<unprintable>"
    return text if len(text) <= limit else text[:limit] + "..."


def traceback_entries(tb) -> list:
    """(file name, line, function) of each level of a real traceback, outermost first ([] for anything else),
    read through the C-level descriptors: a traceback-like object's tb_frame would run its own code. This is
    the reader of a kernel, where nothing guards frames; in the sandbox, whose audit hook denies the student's
    code frames, the probes are handed the sandbox's own (harness.Context, sandbox/notebook.py)."""
    entries = []
    frame_of, next_of, line_of = (types.TracebackType.__dict__[n].__get__ for n in ("tb_frame", "tb_next", "tb_lineno"))
    while type(tb) is types.TracebackType and len(entries) < 200:
        code = types.FrameType.__dict__["f_code"].__get__(frame_of(tb))
        entries.append((code.co_filename, line_of(tb), code.co_name))
        tb = next_of(tb)
    return entries


# the grader's own files, whose levels of a traceback are never the student's line
OWN_FILES = ("probes.py", "harness.py", "/checks/plain_data.py", "/checks/models.py", "guard.py", "worker.py",
             "'s code>")


def describe_exception(exc: BaseException, entries) -> dict:
    """Type, message and the innermost line of the student's code that raised (its traceback as the
    interpreter set it, never what a property of its class returns). entries: the traceback's reader
    (`traceback_entries`, or the sandbox's)."""
    where = ""
    for filename, lineno, function in reversed(entries(BaseException.__dict__["__traceback__"].__get__(exc))):
        name = filename.replace("\\", "/")
        if "/torch/" in name or name.endswith(OWN_FILES):
            continue
        where = f"line {lineno} in {function}(): {linecache.getline(filename, lineno).strip()}"
        break
    return {"type": type(exc).__name__, "message": _safe_text(exc), "where": _safe_text(where, 300)}


# Tensor attributes read through torch's C type, which code cannot patch (torch.Tensor, a Python
# subclass, it can): what a probe reports about a tensor is what the tensor is.
TENSOR_BASE = torch._C.TensorBase


def attr(t, name: str):
    """t.<name> for a real tensor (is_leaf, requires_grad, dtype, grad, ...), whatever torch.Tensor says."""
    return TENSOR_BASE.__dict__[name].__get__(t)


def dtype_name(t) -> str:
    return str(attr(t, "dtype")).replace("torch.", "")


def plain_tensor(t: torch.Tensor) -> torch.Tensor:
    """A detached, contiguous, plain (non-subclass) CPU copy of `t`."""
    return t.detach().as_subclass(torch.Tensor).to("cpu", copy=True).contiguous()


def describe(value, depth: int = 0) -> dict:
    """A returned value as plain data: its exact type name and, where that is safe, the value.

    Types are compared by identity: a subclass of float or str (whose == may lie) is not a float or a str.
    """
    kind = type(value)
    if value is None or any(kind is t for t in (bool, int, float, str)):
        return {"type": kind.__name__ if value is not None else "NoneType", "value": value}
    for base in (float, int, str):  # numpy.float64 is a float; report what it holds, not what it says
        if isinstance(value, base) and kind is not bool and base.__dict__.get(f"__{base.__name__}__", None) is not None:
            return {"type": base.__name__, "value": base.__dict__[f"__{base.__name__}__"](value),
                    "subclass": _safe_text(type.__dict__["__name__"].__get__(kind), 80)}
    if isinstance(value, TENSOR_BASE):
        return {"type": "Tensor", "value": plain_tensor(value), "dtype": dtype_name(value)}
    if (kind is tuple or kind is list) and depth < 2:  # the items come back in a container of the same kind
        return {"type": kind.__name__, "items": kind(describe(v, depth + 1) for v in value[:8]), "length": len(value)}
    if issubclass(kind, tuple) and depth < 2:  # a NamedTuple is a tuple: read through tuple's own methods
        length = tuple.__len__(value)
        return {"type": "tuple", "items": tuple(describe(tuple.__getitem__(value, i), depth + 1)
                                                for i in range(min(length, 8))),
                "length": length, "subclass": _safe_text(type.__dict__["__name__"].__get__(kind), 80)}
    return {"type": _safe_text(type.__dict__["__name__"].__get__(kind), 80), "value": None}


def shape_text(t: torch.Tensor) -> str:
    return f"<{str(t.dtype).replace('torch.', '')} tensor of shape {tuple(t.shape)}>"


def kwargs_text(kwargs: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
