"""The sandboxed processes' own settings: limits, dumpability, the OOM killer's choice, and small system calls.

Only the standard library: worker.py loads this file by path inside the sandbox, before any student code.
"""
import ctypes
import hmac
import json
import os
import resource
import signal

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def apply_limits():
    """Lower this process's limits before any student code runs (inherited, and never raised back)."""
    for name, value in json.loads(os.environ.pop("LESSON20_LIMITS", "{}")).items():
        if value is not None:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def _prctl(option: int, value: int):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def set_dumpable(flag: bool):
    """A process that is not dumpable cannot be traced, nor its memory read or written, by another process
    of the same uid (the zygote, and each item's template, are not)."""
    _prctl(PR_SET_DUMPABLE, int(flag))


def become_subreaper():
    """Orphans among this process's descendants become its children, so that it can end and reap them."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)


def prefer_for_oom_killer():
    """When memory runs out, the OOM killer takes the sandbox (and every child it forks) before the grader."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def raw_fork() -> int:
    """fork(2) itself, without Python's at-fork callbacks (which os.register_at_fork lets the student's code
    add): for a process with one thread only, where Python has no other thread's state to put right. The
    GIL is held through the call (PyDLL), so the new process starts holding it, as the only thread."""
    pid = ctypes.PyDLL(None).fork()
    if pid < 0:
        raise OSError(ctypes.get_errno(), "fork failed")
    return pid


def privatize_shared_memory() -> int:
    """Make every shared mapping of this process private, its contents kept: a fork then pays for each page it
    writes (copy on write, charged to the cgroup), where a shared mapping made earlier would let it store
    what it likes in memory already paid for. Returns the bytes made private."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype, libc.mmap.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                              ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    import mmap
    with open("/proc/self/maps") as f:
        shared = [line.split() for line in f if len(line.split()) > 1 and line.split()[1][3] == "s"]
    done = 0
    for fields in shared:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        perms, size = fields[1], end - start
        prot = (mmap.PROT_READ if "r" in perms else 0) | (mmap.PROT_WRITE if "w" in perms else 0) | (
            mmap.PROT_EXEC if "x" in perms else 0)
        if "r" not in perms and libc.mprotect(start, size, mmap.PROT_READ) != 0:
            continue
        data = ctypes.string_at(start, size)
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | 0x10  # MAP_FIXED: in place, at the same address
        if libc.mmap(start, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0) != start:
            continue
        ctypes.memmove(start, data, size)
        del data
        libc.mprotect(start, size, prot)
        done += size
    return done


def write_all(fd: int, data: bytes, write=os.write):
    view = memoryview(data)
    while view:
        view = view[write(fd, view):]


def hmac_function():
    """OpenSSL's HMAC as the C function itself: hmac.digest, a Python function, looks up its module's
    globals when called, and a student's code could rebind them to see the key."""
    try:
        from _hashlib import hmac_digest
        return hmac_digest
    except ImportError:
        return hmac.digest


def heap_trimmer():
    """glibc's malloc_trim(0): give the heap's free memory back to the system (a no-op elsewhere)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
        return lambda: trim(0)
    except (OSError, AttributeError):
        return lambda: None


def cpu_budget(seconds, getrusage=resource.getrusage):
    """CPU time for one request on top of what this process has used so far (RLIMIT_CPU's soft limit)."""
    if not seconds:
        return
    usage = getrusage(resource.RUSAGE_SELF)
    want = int(usage.ru_utime + usage.ru_stime + seconds) + 1
    soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
    except (ValueError, OSError):
        pass


def alive(pid: int) -> bool:
    """Whether process `pid` runs: not a zombie, and not being torn down by a SIGKILL (a large process
    takes a while to die, and shows as running meanwhile)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
    except (OSError, ValueError):
        return False
    pending = int(fields.get("SigPnd", "0").strip() or "0", 16) | int(fields.get("ShdPnd", "0").strip() or "0", 16)
    return fields.get("State", "").split()[:1] not in (["Z"], ["X"]) and not pending & (1 << (signal.SIGKILL - 1))


def quiet_signals():
    """Every signal back to its default action, and every interval timer off: a handler or a timer that the
    notebook set would otherwise run the student's code, or end the process, while it serves as a template."""
    for timer in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF):
        signal.setitimer(timer, 0)
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):
            pass
