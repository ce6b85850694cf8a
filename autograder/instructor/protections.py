"""Every protection `grade` can lose on some machine, in one list, and which of them this machine gives.

The sandbox (sandbox/isolation.py) uses what the machine allows and falls back quietly: without bubblewrap a
plain subprocess, without root no memory cgroup, no uid of its own and no process or CPU cgroup, and where the
kernel refuses user namespaces no fresh namespaces per submission. Grading
weaker in silence changes grades (a non-root instructor's run gave full marks to code that keeps every
micro-batch's graph alive), so `grade` probes each protection at start-up, prints which it has, and refuses
to grade without one unless told `--allow-weaker-isolation`. What a missing protection leaves unchecked is
recorded as "not checked" by the checks themselves (runner.NOT_CHECKED), never as passed.

Each protection is probed, not assumed: bubblewrap is run (it may be installed where user namespaces are
off), and a cgroup is made and removed.
"""
import os
import shutil
import subprocess
from dataclasses import dataclass

from ..limits import Limits
from ..sandbox.isolation import user_namespaces_allowed

ALLOW_WEAKER = "--allow-weaker-isolation"


@dataclass(frozen=True)
class Protection:
    id: str
    name: str
    without: str  # what is lost without it
    fix: str      # how to get it


PROTECTIONS = (
    Protection("bubblewrap", "the bubblewrap sandbox (no network, a read-only view of the Python installation, "
               "nothing of the course, the hidden checks or other submissions)",
               "submissions run in a plain subprocess that can read your files (solutions, hidden checks, other "
               "students' work) and use the network, and no call's memory is measured (the memory behaviours of "
               "accumulate_gradients, mixed_precision_train_step and token_accumulation are not checked)",
               "apt-get install -y bubblewrap; as a user other than root the kernel must also allow user "
               "namespaces (sysctl kernel.unprivileged_userns_clone=1)"),
    Protection("pid_namespace", "a PID namespace of its own (every process a submission starts dies with it)",
               "processes a submission starts can outlive it, and see and signal the grader's",
               "bubblewrap that can unshare the PID namespace (as above)"),
    Protection("fresh_namespaces", "new user, IPC, mount, network, UTS and PID namespaces and an empty /tmp and "
               "/dev/shm for each submission, and for each measured call's fork",
               "submissions graded by one process share the sandbox's kernel objects (message queues, keyrings), "
               "emptied between them as far as the grader knows them, and a measured call could write its "
               "graphs into a tmpfs file the notebook filled",
               "let unprivileged processes make user namespaces (sysctl user.max_user_namespaces=15000, or "
               "kernel.unprivileged_userns_clone=1)"),
    Protection("memory_cgroup", "a memory cgroup per sandbox (memory measured from outside, and bounded in all)",
               "the sandbox's memory is bounded by rlimits alone, and a call's memory (whether one micro-batch's "
               "graph is alive at a time: accumulate_gradients, mixed_precision_train_step, token_accumulation) "
               "is sampled from the sandbox's processes every 2 ms, without the kernel's peak (with bubblewrap; "
               "without it, not at all)",
               "run `grade` as root (sudo), on a machine with cgroup v1 or v2 memory controllers"),
    Protection("sandbox_uid", "an unprivileged uid of its own for the submission's code",
               "a submission runs under your uid inside the sandbox: it can signal your other processes",
               "run `grade` as root, with setpriv (util-linux) installed"),
    Protection("limits", "process-count and CPU limits (a pids and a CPU cgroup)",
               "a submission can start processes without bound and take every core",
               "run `grade` as root, on a machine with pids and cpu cgroup controllers"),
)


def probe(limits: Limits = Limits()) -> dict:
    """{protection id: "" if this machine gives it, else why not}."""
    missing = {p.id: "" for p in PROTECTIONS}
    missing["bubblewrap"] = _runs_bwrap([])
    missing["pid_namespace"] = missing["bubblewrap"] or _runs_bwrap(["--unshare-pid"])
    missing["fresh_namespaces"] = missing["bubblewrap"] or (
        "" if user_namespaces_allowed() else "this kernel refuses unprivileged user namespaces")
    root = os.geteuid() == 0
    if not root:
        for pid in ("memory_cgroup", "sandbox_uid", "limits"):
            missing[pid] = "grade runs as a user other than root"
        return missing
    if missing["bubblewrap"]:  # the cgroups and the uid are the sandbox's: without it, none of them
        for pid in ("memory_cgroup", "sandbox_uid", "limits"):
            missing[pid] = "no bubblewrap sandbox to put them on"
        return missing
    if not shutil.which("setpriv"):
        missing["sandbox_uid"] = "setpriv was not found"
    controllers = _cgroup_controllers(limits)
    missing["memory_cgroup"] = "" if "memory" in controllers else "no memory cgroup could be made"
    missing["limits"] = "" if {"pids", "cpu"} <= controllers else "no pids and cpu cgroups could be made"
    return missing


def _runs_bwrap(extra: list) -> str:
    """"" if bubblewrap runs a command here with these namespaces, else why not."""
    if not shutil.which("bwrap"):
        return "bwrap was not found"
    cmd = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", *extra,
           *(["--unshare-user"] if os.geteuid() != 0 else []), "true"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run ({exc})"
    return "" if done.returncode == 0 else f"bwrap failed here: {done.stderr.strip()[:200]}"


def _cgroup_controllers(limits: Limits) -> set:
    """The controllers of which this process can make a cgroup for a sandbox (made and removed at once)."""
    from ..sandbox.isolation import Cgroup
    cgroup = Cgroup(limits)
    try:
        found = set()
        for folder in cgroup.dirs:
            if (folder / "memory.limit_in_bytes").exists() or (folder / "memory.max").exists():
                found.add("memory")
            if (folder / "pids.max").exists():
                found.add("pids")
            if (folder / "cpu.cfs_quota_us").exists() or (folder / "cpu.max").exists():
                found.add("cpu")
        return found
    finally:
        cgroup.close()


def start_up_lines(missing: dict) -> list:
    """What `grade` prints at start-up: each protection, had or not (and why not)."""
    return [f"  {'yes' if not missing[p.id] else 'NO '} {p.name}" + (f": {missing[p.id]}" if missing[p.id] else "")
            for p in PROTECTIONS]


def refusal(missing: dict) -> str:
    """Why `grade` will not start, what each missing protection costs, and the fixes."""
    lost = [p for p in PROTECTIONS if missing[p.id]]
    lines = ["grade refuses to start: this machine does not give every protection the grades rely on."]
    for p in lost:
        lines += [f"* {p.id}: {missing[p.id]}.", f"  Without it {p.without}.", f"  Fix: {p.fix}."]
    lines.append(f"To grade anyway, with these protections missing, run grade again with {ALLOW_WEAKER}: what "
                 "cannot be checked is then recorded as \"not checked\" (the feedback, grades.json's \"not_checked\", "
                 "grades.csv's review column, the class report), never as passed.")
    return "\n".join(lines)


def missing_ids(missing: dict) -> list:
    return [p.id for p in PROTECTIONS if missing[p.id]]
