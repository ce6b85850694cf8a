"""The sandbox's uid: one that no account, group, subordinate range or process of the host holds, checked when
a grading process starts its sandbox (a host account with the sandbox's uid could signal or trace it)."""
import os
import shutil
from pathlib import Path

from .errors import SandboxError

# The sandbox's uids (and gids, the same numbers): a block above every range that account tools hand out
# (useradd up to 60000, systemd's up to 65535, /etc/subuid's 100000 + 65536 per user, systemd-nspawn's up to
# 0x6FFFFFFF). Each grading process takes the first of its candidates that no host account, group, subordinate
# range or running process holds, checked when it starts (sandbox_uid): a host account can then never signal,
# trace or share files with a sandbox.
UIDS = range(0x70000000, 0x70000000 + 65536)
_PICKED = {}  # pid of this process -> its uid, once picked


def uid_candidates(pid: int, tries: int = 64) -> list:
    """The uids a grading process with this pid may run its sandbox under, in the order it tries them."""
    first = pid % len(UIDS)
    return [UIDS[(first + i) % len(UIDS)] for i in range(tries)]


def uid_holder(uid: int, running: bool = True):
    """What on this machine holds `uid` (as a uid or a gid), in words, or None: an account, a group, an
    /etc/subuid or /etc/subgid range, or (`running`) a running process."""
    import grp
    import pwd
    for lookup, what in ((pwd.getpwuid, "the account"), (grp.getgrgid, "the group")):
        try:
            return f"{what} {lookup(uid)[0]}"
        except KeyError:
            pass
    for table in ("/etc/subuid", "/etc/subgid"):
        try:
            lines = Path(table).read_text().splitlines()
        except OSError:
            continue
        for line in lines:
            fields = line.strip().split(":")
            if len(fields) == 3 and fields[1].isdigit() and fields[2].isdigit() \
                    and int(fields[1]) <= uid < int(fields[1]) + int(fields[2]):
                return f"{table}'s range for {fields[0]}"
    if running:
        for entry in Path("/proc").iterdir():
            try:
                ids = [line.split()[1:] for line in (entry / "status").read_text().splitlines()
                       if line.startswith(("Uid:", "Gid:"))] if entry.name.isdigit() else []
            except OSError:
                continue
            if any(str(uid) in row for row in ids):
                return f"process {entry.name}"
    return None


def sandbox_uid(pid: int = None):
    """The unprivileged uid that submissions graded by process `pid` (default: this one) run under,
    or None when they run under the grader's own uid (not root, or no setpriv).

    For this process: the first of its candidates that nothing on the machine holds, picked once, when it is
    first asked for (before its sandbox starts). For another process: the first its account and range checks
    leave (that process may have moved on, had a process been running under it). Raises SandboxError if
    every candidate is held."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    if pid is not None and pid != os.getpid():
        return next((uid for uid in uid_candidates(pid) if uid_holder(uid, running=False) is None), None)
    if os.getpid() not in _PICKED:
        candidates = uid_candidates(os.getpid())
        free = next((uid for uid in candidates if uid_holder(uid) is None), None)
        if free is None:
            raise SandboxError("protocol", f"every uid this grading process may give its sandbox ({candidates[0]} "
                                           f"to {candidates[-1]}) is held: {uid_holder(candidates[0])}, and so on")
        _PICKED[os.getpid()] = free
    return _PICKED[os.getpid()]
