"""One ungraded case per item, run on the student's GPU by the self-check when the kernel has CUDA.

The checks themselves run on the CPU, as the grader does, so a mistake that only a GPU shows (a CPU
tensor made inside the code and mixed with CUDA ones, a master left on the CPU) would pass them. Each
case runs the item's code once with the model and the batch on the GPU and asks only that it runs
and keeps every tensor where its inputs are. It decides no points: a failure is shown beside the report.

Each exercise's case is `case` in its folder's smoke.py (autograder/exercises/<id>/smoke.py); CASES gathers them.
"""
from ..exercises import parts

CASES = {module.__name__.split(".")[-2]: module.case for module in parts("smoke")}


def trouble(item_id: str, student) -> str:
    """The smoke case of an item on `student`'s device: "" when it runs, else what went wrong, for the student
    (an item without a case, such as Q5's letter, has nothing to run)."""
    case = CASES.get(item_id)
    if case is None:
        return ""
    try:
        case(student)
    except AssertionError as failure:  # a CheckFailure too: the probe's own message, already worded
        return str(failure) or "the case failed"
    return ""
