"""What a fresh kernel per submission costs: forking a process and entering a new set of user, IPC, mount,
network, UTS and PID namespaces with an empty /tmp and /dev/shm (autograder/sandbox/namespaces.enter, what each
submission's child does in the sandbox), against a plain fork, timed in turn in each repetition.

Linux only; the namespaces need root or unprivileged user namespaces (the row says so when they are refused).
"""
import os
import time
from dataclasses import dataclass

import torch

from autograder.sandbox import namespaces

from .common import format_table, median, quartiles

TMPFS_BYTES = 16 * 2 ** 20


@dataclass
class Config:
    repetitions: int = 50


CPU = Config()
QUICK = Config(repetitions=3)


def _forked(enter: bool) -> float:
    """Seconds from fork to the child's exit, the child entering fresh namespaces first if `enter`."""
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            if enter:
                namespaces.enter(TMPFS_BYTES)
        except BaseException:  # noqa: BLE001 - any refusal is reported as such by the parent
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise OSError("this machine refused the namespaces (not root, and no unprivileged user namespaces)")
    return time.perf_counter() - start


def run(config: Config, device: torch.device) -> dict:
    times = {"plain fork": [], "fork + fresh namespaces": []}
    try:
        for _ in range(config.repetitions):
            for label in times:
                times[label].append(_forked(label != "plain fork"))
    except OSError as exc:
        return {"rows": [{"step": "fork + fresh namespaces", "note": str(exc)}], "summary": {}}
    rows = [{"step": label, "median_ms": median(t) * 1e3, "q1_ms": quartiles(t)[0] * 1e3,
             "q3_ms": quartiles(t)[1] * 1e3} for label, t in times.items()]
    return {"rows": rows, "summary": {"added_ms": rows[1]["median_ms"] - rows[0]["median_ms"]}}


def table(result: dict) -> str:
    text = format_table(result["rows"], [("step", "step", ""), ("median ms", "median_ms", ".2f"),
                                         ("q1 ms", "q1_ms", ".2f"), ("q3 ms", "q3_ms", ".2f"), ("note", "note", "")])
    if "added_ms" in result["summary"]:
        text += f"\nfresh namespaces add {result['summary']['added_ms']:.2f} ms per submission (medians)"
    return text
