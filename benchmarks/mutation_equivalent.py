"""Mutants of the reference that survive every check because they do not change what the code does.

`python -m benchmarks mutation` leaves these out of the score. Key: "<item>: <line before> -> <line after>",
as the benchmark prints it; value: one line saying why the mutant is equivalent.
"""
EQUIVALENT = {
}
