"""Run a submission's code in an isolated process and carry plain data back.

With bubblewrap (Linux): no network, a read-only view of the Python installation and nothing
else of the file system, a private /tmp, its own PID namespace, and death with the grading
process. Run as root, the code also runs under a uid no host account holds, inside a memory, CPU and
process-count cgroup when the machine allows one.

Starting Python and importing torch costs seconds, so each grading process keeps one sandbox
(a *zygote*, see worker.py) and forks a fresh child in it for every submission, over
pipes made for that submission alone. That child enters new user, IPC, mount, network, UTS and PID
namespaces, with a fresh /tmp and /dev/shm, before any student code (namespaces.py): nothing one
submission leaves in the kernel reaches the next. When a submission is done, everything it started is
killed before the next one is let in.

Without bubblewrap: a resource-limited subprocess per submission, with a warning that
isolation is weaker.

After the notebook has run, each graded item's checks run in a fork of that child of their own, which
ends before the next item's starts (child.py).

The parts in the grader, each importing only the ones before it: errors (SandboxError), uids (the
sandbox's uid, checked against the host's accounts), memory (one call's peak, from the cgroup or the
sandbox's processes), isolation (bwrap, cgroups, the sandbox's uid), decode (one answer read
back, bounded), channel (pipes and framing), zygote (the process that forks children), forks (an item's
fork), loading (running the notebook), session (Sandbox: one submission). Inside the sandbox, loaded by
path: worker (the zygote) and its parts protocol, process, notebook, cleanup, standins, namespaces, guard
and child.

This module is transport and isolation only: it imports nothing from the project but the limits
(limits.py, plain data), decides nothing, and words nothing for a student. A failure is a SandboxError with plain fields
(what it was doing, how the child ended); backends.py turns it into a student's message.
"""
import importlib

from .errors import SandboxError

# The rest is imported when first used (PEP 562): SandboxError comes without torch, so that a
# process that only hands limits on (`grade`'s main process, nbgrader's configuration) never imports it.
_WHERE = {"Refused": "decode", "stored_zip": "decode", "WEAK_ISOLATION": "isolation", "have_bwrap": "isolation",
          "sandbox_uid": "isolation", "Sandbox": "session", "close_all": "zygote"}

__all__ = ["SandboxError", *_WHERE]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    globals()[name] = value
    return value
