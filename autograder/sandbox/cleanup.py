"""Leaving the sandbox as it was: the processes a submission (or one item's checks) started, and what it
wrote to the only writable folders, /tmp and /dev/shm.

Only the standard library: worker.py loads this file by path inside the sandbox.
"""
import os
import signal
import stat
import time

WRITABLE = ("/tmp", "/dev/shm")

def mounts_within(folders) -> set:
    """The mount points inside these folders and the folders leading to them (a Python installation that
    lives under /tmp is bound there): part of the sandbox, not left by a submission."""
    keep = set()
    try:
        with open("/proc/self/mountinfo") as f:
            points = [line.split()[4] for line in f if len(line.split()) > 4]
    except OSError:
        return keep
    for point in points:
        for folder in folders:
            while point.startswith(folder + "/"):
                keep.add(point)
                point = os.path.dirname(point)
    return keep

def empty(folder: str, keep=frozenset()):
    """Remove everything in `folder`, whatever a submission made of it: folders of mode 000, FIFOs,
    sockets, links (removed, never followed), but for the sandbox's own mounts (`keep`). Whatever cannot
    be removed is left for the caller to see."""
    stack = [folder]
    while stack:
        path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.path in keep:
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    os.chmod(entry.path, 0o700)  # its owner (the sandbox's uid) may always do that
                    stack += [entry.path, entry.path]  # emptied first, then removed on the second visit
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
        if path != folder and not os.listdir(path):
            try:
                os.rmdir(path)
            except OSError:
                pass

def leftovers(keep) -> list:
    """What is in the writable folders but the sandbox's own mounts."""
    return [os.path.join(f, e) for f in WRITABLE if os.path.isdir(f) for e in os.listdir(f)
            if os.path.join(f, e) not in keep]

def reap(isolated: bool, children: dict, keep=frozenset()):
    """Kill every process but this one and the sandbox's init, empty the writable folders.

    Returns the exit codes of our children, and whether the sandbox is provably as it was: nothing
    else left running, and every writable folder empty (if not, the grader replaces this zygote)."""
    status = {}
    me = os.getpid()
    deadline = time.monotonic() + 5
    others = []
    while time.monotonic() < deadline:
        if isolated:  # in our own PID namespace: -1 is everything we may signal, but ourselves and init
            try:
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
        else:
            for pid in children:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
        while True:
            try:
                pid, code = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            status[pid] = os.waitstatus_to_exitcode(code)
        if not isolated:  # killed, or ended on its own: its pipes close before its exit status is there
            if all(pid in status for pid in children):
                break
            time.sleep(0.005)
            continue
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            break
        time.sleep(0.005)
    if isolated:
        for folder in WRITABLE:
            empty(folder, keep)
        remove_ipc()
        others = others or leftovers(keep)
    return status, not others


def namespace_pids(pid) -> list:
    """Process `pid`'s pid in each PID namespace from /proc's down to its own (NSpid), [] if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("NSpid:"):
                    return [int(p) for p in line.split()[1:]]
    except (OSError, ValueError):
        pass
    return []


def processes(isolated: bool, group: int = None) -> dict:
    """{pid as this process names it: pid in /proc} of the sandbox's running processes (in its own PID
    namespace: all of them; else those of process group `group`), init's and this process's aside.

    In fresh namespaces (namespaces.py) /proc is still the sandbox's, one PID namespace up: each process is
    found there, and named by its pid in ours (a process whose NSpid does not reach our level is not in it)."""
    me, found = os.getpid(), {}
    try:
        depth = len(namespace_pids(os.readlink("/proc/self")))
    except OSError:
        return found
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        levels = namespace_pids(name)
        if len(levels) < depth or levels[depth - 1] in (1, me) or not running(int(name)):
            continue
        pid = levels[depth - 1]
        if not isolated:
            try:
                if os.getpgid(pid) != group:
                    continue
            except OSError:
                continue
        found[pid] = int(name)
    return found


def end_processes(pids: dict, seconds: float = 5.0) -> bool:
    """SIGKILL these processes ({pid: pid in /proc}, as `processes` gives them) and reap those that are this
    process's children (a subreaper's orphans too); True once none of them runs any more."""
    deadline = time.monotonic() + seconds
    pids = dict(pids)
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pids.pop(pid, None)
            except OSError:
                pass
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            pids.pop(pid, None)
        pids = {p: there for p, there in pids.items() if running(there)}
        if pids:
            time.sleep(0.002)
    return not pids


def running(pid: int) -> bool:
    """Whether the process is there and not a zombie: one of its threads runs (a process whose first thread
    ended alone shows as a zombie, yet its other threads run on). A zombie waits for its parent: it runs nothing."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for task in tasks:
        try:
            with open(f"/proc/{pid}/task/{task}/stat") as f:
                if f.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X"):
                    return True
        except (OSError, IndexError):
            continue
    return False


def _ipc_removers() -> dict:
    """shmctl, semctl and msgctl, bound when this file is loaded (before any student code): remove_ipc runs in a
    trusted section, where it looks up nothing the notebook can rebind."""
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return {"shm": libc.shmctl, "sem": libc.semctl, "msg": libc.msgctl}
    except (OSError, AttributeError):
        return {}


IPC_REMOVERS = _ipc_removers()


def remove_ipc():
    """Remove every SysV shared memory segment, semaphore set and message queue of the sandbox's IPC namespace
    (call it only inside the sandbox, which has an IPC namespace of its own):
    they outlive their processes, and a segment made earlier is memory a later process could use without being
    charged for it. By system call, not by running ipcrm: no process is started (and no at-fork callback runs)."""
    for kind, call in IPC_REMOVERS.items():
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                ids = [int(line.split()[1]) for line in f.readlines()[1:] if len(line.split()) > 1]
        except (OSError, ValueError):
            continue
        for ipc_id in ids:  # IPC_RMID is 0; semctl takes a semaphore number first
            if kind == "sem":
                call(ipc_id, 0, 0)
            else:
                call(ipc_id, 0, None)


class Snapshot:
    """What the writable folders held at one moment (the notebook's files, once it has run), to be put back
    after each item's checks: nothing one item's code writes there reaches the next item.

    Held in this process's memory: it is the student's own files. A folder holding more than `max_bytes`
    or `max_entries` is not kept (`complete` is False), and then only emptied."""

    def __init__(self, folders, keep=frozenset(), max_bytes: int = 256 * 2**20, max_entries: int = 10_000):
        self.folders, self.keep = tuple(folders), keep
        self.entries, self.complete = [], True
        size = 0
        for path, st in self._walk():
            if len(self.entries) >= max_entries:
                self.complete = False
                break
            mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                self.entries.append((path, "dir", mode, None))
            elif stat.S_ISLNK(st.st_mode):
                self.entries.append((path, "link", mode, os.readlink(path)))
            elif stat.S_ISREG(st.st_mode):
                size += st.st_size
                if size > max_bytes:
                    self.complete = False
                    break
                try:
                    with open(path, "rb") as f:
                        self.entries.append((path, "file", mode, f.read()))
                except OSError:
                    self.complete = False
            # FIFOs, sockets and devices are not kept: a kernel's files are files
        self.mark = self.fingerprint()

    def _walk(self):
        stack = [f for f in self.folders if os.path.isdir(f)]
        while stack:
            folder = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                if entry.path in self.keep:
                    continue
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                yield entry.path, st
                if stat.S_ISDIR(st.st_mode):
                    stack.append(entry.path)

    def fingerprint(self) -> list:
        """What identifies the folders' contents cheaply: each entry's path, type, size, mode and times."""
        return [(p, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino) for p, st in self._walk()]

    def restore(self) -> bool:
        """Put the folders back as they were; True if they are (nothing to do when nothing changed)."""
        if self.fingerprint() == self.mark:
            return True
        for folder in self.folders:
            empty(folder, self.keep)
        if any(leftovers_in(f, self.keep) for f in self.folders):
            return False
        for path, kind, _mode, data in self.entries:
            try:
                if kind == "dir":
                    os.mkdir(path, 0o700)
                elif kind == "link":
                    os.symlink(data, path)
                else:
                    with open(path, "wb") as f:
                        f.write(data)
            except OSError:
                return False
        for path, kind, mode, _data in reversed(self.entries):  # folders last: a read-only one still took files
            if kind != "link":
                try:
                    os.chmod(path, mode)
                except OSError:
                    pass
        self.mark = self.fingerprint()
        return self.complete


def leftovers_in(folder: str, keep) -> list:
    return [os.path.join(folder, e) for e in os.listdir(folder) if os.path.join(folder, e) not in keep] \
        if os.path.isdir(folder) else []
