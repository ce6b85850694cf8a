"""What each field of a probe's answer is, declared once: a value the student's code computed, or a report the
probe made about the objects it handed over.

A probe runs in the student's process, which the student's code can read and write whole: whatever the probe
observes there (whether two tensors share memory, a dtype's name, a flag, the calls and batch sizes a layer
recorded, which exception was raised) could be rewritten without doing the work. Only values decide points:
tensors and numbers the student's code must compute, compared here with an oracle on inputs the fork sees only
when they arrive. A check may still fail on a report, for a clearer message; a report never makes one pass.
The tests hold this (tests/test_reports.py): with every report rewritten to a correct answer's (`forged`, the
fault hook backends.FORGE_REPORTS switches on in the grader), no behaviour's score rises but the small shares
named in SMALL_SHARES, where no value can tell.

Runs in the checking process only; imports nothing but the standard library.
"""
import copy
from typing import Literal, get_args

Kind = Literal["value", "report", "words", "measured"]
KINDS = get_args(Kind)

# the fields every probe's answer may carry (harness.run's words, plain_data.describe's value and reports) and those
# several exercises' probes return; an exercise declares the fields only its own probes return in its folder
# (Exercise.fields), and autograder/exercises/__init__.py merges them with these into FIELDS
SHARED: dict = {
    # words about the call, for messages only: what was called, where it raised
    "status": "words", "call": "words", "name": "words", "message": "words", "where": "words", "names": "words",
    # values: what the student's code returned, or left in the objects the probe handed it, read back as it
    # is (a tensor in its own dtype, a float as a float); forging one means computing it
    "value": "value", "items": "value", "returned": "value", "grads": "value", "grads_again": "value",
    "masters": "value", "model_grads": "value", "scale": "value", "scales": "value",
    # reports: what the probe observed about the objects, which a correct answer would report alike
    "type": "report", "subclass": "report", "dtype": "report", "length": "report", "same_objects": "report",
    "model_dtypes": "report", "batches": "report", "graphs_alive": "report", "weights": "report",
    # measured by the grader, outside the sandbox (the memory cgroup): never in the student's reach
    "memory": "measured",
}

# (item, behaviour): where no value can tell, the share of the item that rests on a report (docs/grading-design.md,
# "Values decide; reports only explain"); the fault hook may raise these, and only these
SMALL_SHARES: dict = {
    ("token_accumulation", "empty_batch"): "that the call raised and returned nothing is a value (none came back); "
                                           "which exception it raised, ValueError or another, only the process sees",
    ("underflow_fraction", "any_shape_input_kept"): "a change to the input that the function's own second answer on "
                                                    "it does not show is seen only in the process",
}

# (item, check): checks whose verdict rests on a report but that decide no point alone: the student's guide in
# the notebook, beside a hidden check of the same behaviour that the grader measures outside the sandbox (the
# memory of a call), which a forged report cannot pass (tests/test_reports.py holds that it is there)
GUIDES: dict = {
    (item, "test_one_graph_alive_at_a_time"): "micro_batches"
    for item in ("accumulate_gradients", "mixed_precision_train_step", "token_accumulation")
}


def merged(own: dict) -> dict:
    """SHARED and the exercises' own fields ({exercise id: {field: kind}}) as one table; a field declared with two
    kinds stops the import, naming both declarations."""
    table, by = dict(SHARED), dict.fromkeys(SHARED, "autograder/checks/answers.py SHARED")
    for exercise, declared in own.items():
        for key, what in declared.items():
            if what not in KINDS:
                raise ValueError(f"exercise {exercise!r} declares answer field {key!r} as {what!r}, not one of {KINDS}")
            if table.setdefault(key, what) != what:
                raise ValueError(f"answer field {key!r} is declared {table[key]!r} by {by[key]} and {what!r} by "
                                 f"exercise {exercise!r}: a field has one kind")
            by.setdefault(key, f"exercise {exercise!r}")
    return table


def kind(key: str, table: dict) -> Kind:
    """What a field is in `table` (the merged FIELDS); a field no declaration names counts as a report
    (tests/test_reports.py fails on it)."""
    return table.get(key, "report")


def forged(answer, correct, table: dict):
    """`answer` with every report in it replaced by the report at the same place in `correct` (the reference's
    answer to the same request): what the checks would read if the student's code rewrote every report to a
    correct one. Values and words are left as they are; reports a correct answer makes and this one lacks
    are added (a list longer than the correct one takes its last element's)."""
    if isinstance(answer, dict) and isinstance(correct, dict):
        out = {}
        for key, value in answer.items():
            if kind(key, table) == "report":
                out[key] = copy.deepcopy(correct.get(key, value))
            else:
                out[key] = forged(value, correct.get(key), table) if kind(key, table) == "value" else value
        out.update({key: copy.deepcopy(value) for key, value in correct.items()
                    if key not in answer and kind(key, table) == "report"})
        return out
    if isinstance(answer, (list, tuple)) and isinstance(correct, (list, tuple)) and correct:
        return type(answer)(forged(a, correct[min(i, len(correct) - 1)], table) for i, a in enumerate(answer))
    return answer


def fields(answer, table: dict, inside: str = "") -> list:
    """(field, the field it sits in, its value) for every field of an answer that its kind lets the checks
    look into: the fields of values, not those inside reports or measurements."""
    found = []
    if isinstance(answer, dict):
        for key, value in answer.items():
            found.append((key, inside, value))
            if kind(key, table) in ("value", "words"):
                found += fields(value, table, key)
    elif isinstance(answer, (list, tuple)):
        for value in answer:
            found += fields(value, table, inside)
    return found
