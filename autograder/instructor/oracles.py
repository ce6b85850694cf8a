"""The oracles: what each exercise must produce, computed with torch itself.

They compute graded answers (a float64 full-batch gradient, GradScaler's own scale updates,
fp32 master copies), so they stay on the instructor's side and never ship to students. Each exercise's are in
its instructor folder (instructor/exercises/<id>/oracles.py, listed in its ORACLES); ORACLES gathers them by name.
The hidden checks call them directly; the visible checks read their values for the visible checks' fixed
inputs from `autograder/checks/expected.pt`, written by `python -m autograder release`
(instructor/expected.py).
"""
from pathlib import Path

from ..exercises import parts

# the oracles the visible checks may ask for, by name (their `expected` fixture)
ORACLES = {f.__name__: f for module in parts("oracles", f"{__package__}.exercises", Path(__file__).parent / "exercises")
           for f in module.ORACLES}
