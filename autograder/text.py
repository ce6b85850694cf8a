"""How much of a text that came from student code (or a failing tool) is kept: one table, one function.

Such text is whatever the code wrote, so it is always cut before it is stored or shown.
"""
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


def clip(value, kind: str) -> str:
    """`value` as text, at most LIMITS[kind] characters ("" for None)."""
    return "" if value is None else str(value)[:LIMITS[kind]]
