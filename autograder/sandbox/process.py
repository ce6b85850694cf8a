"""The sandboxed processes' own settings: limits, dumpability, the OOM killer's choice, and small system calls.

Only the standard library: worker.py loads this file by path inside the sandbox, before any student code.
"""
import ctypes
import hmac
import json
import mmap
import os
import resource
import signal

PR_SET_DUMPABLE = 4
PR_SET_CHILD_SUBREAPER = 36


def _libc_functions() -> dict:
    """The C functions the grader calls inside its trusted sections, bound once, when this file is loaded (before
    any student code): a call looks up nothing the notebook can rebind (ctypes.CDLL, ctypes.string_at...).
    {} where there is no C library to bind (then each function below does nothing)."""
    try:
        libc, pylibc = ctypes.CDLL(None, use_errno=True), ctypes.PyDLL(None, use_errno=True)
        found = {"prctl": libc.prctl, "malloc_trim": libc.malloc_trim, "mmap": libc.mmap, "mremap": libc.mremap,
                 "mprotect": libc.mprotect, "memcpy": libc.memcpy, "munmap": libc.munmap,
                 # fork through PyDLL: the GIL is held through the call, so the new process starts holding it
                 "fork": pylibc.fork}
    except (OSError, AttributeError):
        return {}
    pointer, size, integer, long = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_long
    for name, restype, argtypes in (
            ("mmap", pointer, [pointer, size, integer, integer, integer, long]),
            ("mremap", pointer, [pointer, size, size, integer, pointer]),
            ("mprotect", integer, [pointer, size, integer]), ("memcpy", pointer, [pointer, pointer, size]),
            ("munmap", integer, [pointer, size]), ("prctl", integer, [integer, long, long, long, long])):
        found[name].restype, found[name].argtypes = restype, argtypes
    return found


LIBC = _libc_functions()
get_errno = ctypes.get_errno  # a C function of _ctypes
MAP_FAILED = 2**64 - 1
PROT_READ, PROT_WRITE, PROT_EXEC = mmap.PROT_READ, mmap.PROT_WRITE, mmap.PROT_EXEC
MAP_PRIVATE, MAP_ANONYMOUS = mmap.MAP_PRIVATE, mmap.MAP_ANONYMOUS


def apply_limits():
    """Lower this process's limits before any student code runs (inherited, and never raised back)."""
    for name, value in json.loads(os.environ.pop("LESSON20_LIMITS", "{}")).items():
        if value is not None:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def _prctl(option: int, value: int):
    if "prctl" in LIBC:
        LIBC["prctl"](option, value, 0, 0, 0)


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
    if "fork" not in LIBC:
        raise OSError(38, "fork(2) cannot be called here")
    pid = LIBC["fork"]()
    if pid < 0:
        raise OSError(get_errno(), "fork failed")
    return pid


def privatize_shared_memory() -> int:
    """Make every shared mapping of this process private, its contents kept: a fork then pays for each page it
    writes (copy on write, charged to the cgroup), where a shared mapping made earlier would let it store
    what it likes in memory already paid for. Returns the bytes made private.

    Only C functions bound when this file was loaded, and the builtins as they were then (worker.load_module):
    it runs inside a trusted section."""
    if "mremap" not in LIBC:
        return 0
    mmap_, mremap, mprotect, memcpy = LIBC["mmap"], LIBC["mremap"], LIBC["mprotect"], LIBC["memcpy"]
    with open("/proc/self/maps") as f:
        shared = [line.split() for line in f if len(line.split()) > 1 and line.split()[1][3] == "s"]
    done = 0
    for fields in shared:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        perms, size = fields[1], end - start
        prot = (PROT_READ if "r" in perms else 0) | (PROT_WRITE if "w" in perms else 0) | (
            PROT_EXEC if "x" in perms else 0)
        if "r" not in perms and mprotect(start, size, PROT_READ) != 0:
            continue
        copy = mmap_(None, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        if copy in (None, MAP_FAILED):
            continue
        memcpy(copy, start, size)
        # the private copy moves onto the shared mapping's addresses, replacing it (MREMAP_MAYMOVE | MREMAP_FIXED)
        if mremap(copy, size, size, 3, start) != start:
            LIBC["munmap"](copy, size)
            continue
        mprotect(start, size, prot)
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
    trim = LIBC.get("malloc_trim")
    return (lambda: trim(0)) if trim is not None else (lambda: None)


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
