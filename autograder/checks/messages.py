"""Words several exercises' checks share for one kind of mistake."""
from .compare import max_abs_diff
from .read import shown


def kept_graphs(call: str, alive: int, micro_batches: int) -> str:
    """The message of a call that held several micro-batches' graphs at once (probes report how many)."""
    return (f"{call} held the graphs of {alive} of its {micro_batches} micro-batches alive at once (counted from "
            "the tensors autograd saved for backward). A graph holds its micro-batch's activations until backward() "
            "frees it, so keeping them all costs the whole batch's memory, which accumulation is meant to avoid. "
            "Hint: call backward() on each micro-batch's weighted loss inside the loop, instead of adding the "
            "losses up (or concatenating the outputs) and calling backward() once.")


def instances_interfere(out: dict) -> bool:
    """Whether a scaler used beside a second one (probe scalers_side_by_side) behaved otherwise than one used
    alone: whatever the scaler computes, right or wrong, that difference is state the instances share."""
    alone, beside = out["alone"], out["beside"]
    if [shown(s) for s in alone["scales"]] != [shown(s) for s in beside["scales"]]:
        return True
    return any((a is None) != (b is None) or (a is not None and max_abs_diff(a, b) != 0)
               for a, b in zip(alone["grads"], beside["grads"]))
