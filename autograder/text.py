"""How much of a text that came from student code (or a failing tool) is kept: one table, one function.

Such text is whatever the code wrote, so it is always cut before it is stored or shown, and cut
without first writing out the whole value: a string is sliced, anything else is written by a
bounded repr (reprlib), which stops after a few items and levels however large the value is.
"""
import reprlib

LIMITS = {
    "name": 100,      # a name the probe looked up
    "type": 80,       # an exception's type
    "status": 40,     # a probe's status word
    "call": 300,      # the call a probe made, as shown to the student
    "where": 300,     # the line of student code that raised
    "tail": 200,      # the last line a dead process wrote to stderr
    "message": 400,   # an exception's message
    "note": 300,      # one note in a grading record
    "reason": 500,    # a grading record's reason
}

_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel, _BOUNDED.maxstring, _BOUNDED.maxother, _BOUNDED.maxlong = 3, 200, 200, 200
_BOUNDED.maxlist = _BOUNDED.maxtuple = _BOUNDED.maxdict = _BOUNDED.maxset = 8


def clip(value, kind: str) -> str:
    """`value` as text, at most LIMITS[kind] characters ("" for None)."""
    if value is None:
        return ""
    if type(value) is str:
        return value[:LIMITS[kind]]
    return bounded_repr(value)[:LIMITS[kind]]


def bounded_repr(value) -> str:
    """repr(value), cut short inside: a few items of each container, a few levels, a few hundred characters."""
    try:
        return _BOUNDED.repr(value)
    except Exception as exc:  # a value whose own repr raises
        return f"<{type(value).__name__}: {type(exc).__name__} in repr>"
