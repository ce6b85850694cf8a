"""A fresh kernel for each submission: the zygote's child enters new namespaces before any student code runs.

New user, IPC, mount, network, UTS and PID namespaces (unshare(2)), a fresh tmpfs on /tmp and on /dev/shm
(the sandbox's own mounts under them, a Python installation under /tmp, bound again), the loopback
interface up, and a new session keyring. Nothing one submission makes in any of them (SysV or POSIX IPC
objects, files, abstract unix sockets, keys, processes) is there for the next: each set of namespaces ends
with the last process in it. The child then drops every capability the new user namespace gave it.

The submission's notebook runs in the second process of the new PID namespace; the first (`INIT`, a small
interpreter of its own) runs no student code and reaps the orphans, so that the notebook's process may exit
once it has forked the template (child.py). This costs a few tens of milliseconds (a fork of the zygote
and the kernel's new namespaces), against seconds for a new bubblewrap (which imports torch again).

Only the standard library: worker.py loads this file by path inside the sandbox, before any student code.
"""
import ctypes
import fcntl
import os
import platform
import select
import signal
import socket
import stat
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
FRESH = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWPID
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 0x1, 0x2, 0x4, 0x8, 0x20
MS_NOATIME, MS_NODIRATIME, MS_BIND, MS_REC, MS_PRIVATE, MS_RELATIME = 0x400, 0x800, 0x1000, 0x4000, 0x40000, 0x200000
WRITABLE = ("/tmp", "/dev/shm")
KEYCTL_JOIN_SESSION_KEYRING = 1
SYS_KEYCTL = {"x86_64": 250, "aarch64": 219, "riscv64": 219, "ppc64le": 271, "s390x": 280, "i686": 288}
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
CAPABILITY_VERSION_3 = 0x20080522


def _libc() -> dict:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        found = {"unshare": libc.unshare, "mount": libc.mount, "syscall": libc.syscall, "capset": libc.capset}
    except (OSError, AttributeError):
        return {}
    text = ctypes.c_char_p
    found["mount"].argtypes = [text, text, text, ctypes.c_ulong, text]
    found["unshare"].argtypes = [ctypes.c_int]
    return found


LIBC = _libc()


def _check(result: int, doing: str):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{doing}: {os.strerror(errno)}")


def join_new_session_keyring() -> bool:
    """A new, empty session keyring for this process and what it starts (no key the grader's session holds is
    possessed here, and none this process adds outlives it); False where that cannot be done."""
    number = SYS_KEYCTL.get(platform.machine())
    if number is None or "syscall" not in LIBC:
        return False
    return LIBC["syscall"](number, KEYCTL_JOIN_SESSION_KEYRING, None) >= 0


def _mounts_within(folders) -> list:
    """The mount points strictly inside these folders, outermost first (one inside another is carried with it)."""
    with open("/proc/self/mountinfo") as f:
        points = [line.split()[4] for line in f if len(line.split()) > 4]
    inside = sorted({p for p in points if any(p.startswith(folder + "/") for folder in folders)},
                    key=lambda p: p.count("/"))
    outermost = []
    for point in inside:
        if not any(point.startswith(kept + "/") for kept in outermost):
            outermost.append(point)
    return outermost


def _write(path: str, text: str):
    with open(path, "w") as f:
        f.write(text)


def enter(tmp_bytes: int):
    """Move this process (single-threaded, before any student code) into new namespaces, as described above;
    the next process it forks is the new PID namespace's first. Raises OSError if the kernel refuses."""
    if "unshare" not in LIBC:
        raise OSError(38, "unshare(2) is not available")
    uid, gid = os.getuid(), os.getgid()
    _check(LIBC["unshare"](FRESH), "unshare")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")  # the same uid inside: files and processes look as before
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    mount = LIBC["mount"]
    _check(mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "making the mounts private")
    # the sandbox's own mounts under /tmp (a Python installation there), held open before the fresh tmpfs hides them
    kept = [(point, os.open(point, os.O_PATH | os.O_CLOEXEC), os.path.isdir(point)) for point in _mounts_within(WRITABLE)]
    options = f"size={tmp_bytes},mode=1777".encode()
    for folder in WRITABLE:
        _check(mount(b"tmpfs", folder.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, options), f"a fresh tmpfs on {folder}")
    for point, fd, is_folder in kept:
        os.makedirs(point if is_folder else os.path.dirname(point), mode=0o755, exist_ok=True)
        if not is_folder:
            os.close(os.open(point, os.O_CREAT | os.O_WRONLY, 0o644))
        _check(mount(f"/proc/self/fd/{fd}".encode(), point.encode(), None, MS_BIND | MS_REC, None), f"binding {point}")
        os.close(fd)
    os.chdir("/tmp")  # the working folder was the old /tmp
    _loopback_up()
    join_new_session_keyring()
    _drop_capabilities()


def lock_for_measurement(kept_fds):
    """For a fork whose call's memory is measured, before any student code runs in it: /tmp and /dev/shm (and
    what is mounted under them) read-only in a mount namespace of its own, and every descriptor it inherited,
    but `kept_fds` and read-only ones of files outside tmpfs, pointed at /dev/null. No memory charged before
    the call (a tmpfs file, a memfd, a full pipe) is then there to cut, or to write the call's graphs into
    unseen: what the call holds, it must allocate. Raises OSError if the kernel refuses."""
    uid, gid = os.getuid(), os.getgid()
    _check(LIBC["unshare"](CLONE_NEWUSER | CLONE_NEWNS), "unshare")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    tmpfs = set()
    for point in (*WRITABLE, *_mounts_within(WRITABLE)):
        tmpfs.add(os.stat(point).st_dev)
        _check(LIBC["mount"](None, point.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | _flags_of(point), None),
               f"making {point} read-only")
    null = os.open("/dev/null", os.O_RDWR)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd in kept_fds or fd == null:
            continue
        try:
            info, mode, target = os.fstat(fd), fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE, os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue  # the listing's own descriptor, gone by now
        if not (stat.S_ISREG(info.st_mode) and mode == os.O_RDONLY and info.st_dev not in tmpfs
                and not target.startswith("/memfd:")):
            os.dup2(null, fd, inheritable=os.get_inheritable(fd))
    os.close(null)
    _drop_capabilities()


def _flags_of(point: str) -> int:
    """The mount flags a remount of `point` must keep (a mount locked by a user namespace keeps them)."""
    flags = os.statvfs(point).f_flag
    kept = [(os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
            (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME), (os.ST_RELATIME, MS_RELATIME)]
    return sum(ms for st, ms in kept if flags & st)


def _loopback_up():
    """The new network namespace's loopback interface up, as bubblewrap leaves its own: local sockets work,
    nothing reaches past the namespace."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sh", fcntl.ioctl(s, SIOCGIFFLAGS, struct.pack("16sh22x", b"lo", 0))[:18])[1]
        fcntl.ioctl(s, SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", flags | IFF_UP))


def _drop_capabilities():
    """No capability left (the new user namespace gave this process all of them over its new namespaces): the
    student's code cannot unmount the fresh /tmp or remount anything. no_new_privs (bubblewrap's) keeps them
    from coming back with an exec."""
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()
    _check(LIBC["capset"](header, data), "dropping capabilities")


# The new PID namespace's first process, started from a fresh interpreter (posix_spawn: no copy of this large
# process). Not dumpable before it says it is ready, so no process of the submission's can trace it; it reaps
# what is orphaned in its namespace until the grader ends it, runs no student code, and signals from inside
# its namespace cannot reach it (it has no handler).
INIT = """
import ctypes, os, signal, sys
ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
os.write(int(sys.argv[1]), b"1")
os.close(int(sys.argv[1]))
while True:
    signal.sigwait({signal.SIGCHLD})
    try:
        while os.waitpid(-1, os.WNOHANG)[0]:
            pass
    except ChildProcessError:
        pass
"""


def start_init(keep_closed) -> tuple:
    """Start the new PID namespace's init (INIT) without the descriptors `keep_closed`; returns its pid and a
    descriptor that says when it is ready (wait_for_init)."""
    ready, told = os.pipe()
    os.set_inheritable(told, True)  # Python's pipes are closed on exec by default
    actions = [(os.POSIX_SPAWN_CLOSE, fd) for fd in (*keep_closed, ready)]
    pid = os.posix_spawn(sys.executable, [sys.executable, "-I", "-S", "-c", INIT, str(told)], {}, file_actions=actions)
    os.close(told)
    return pid, ready


def wait_for_init(ready: int, seconds: float = 30):
    """Block until the init started by start_init is not dumpable (before any student code runs)."""
    try:
        if not select.select([ready], [], [], seconds)[0] or os.read(ready, 1) != b"1":
            raise OSError(62, "the PID namespace's init did not start")
    finally:
        os.close(ready)


def exit_as(status: int):
    """End this process as the notebook's process ended: its exit code, or the signal that killed it (status
    from os.waitstatus_to_exitcode, None if unknown), so that the zygote reports the same."""
    if status is not None and status < 0:
        try:
            signal.signal(-status, signal.SIG_DFL)
        except (OSError, ValueError):  # SIGKILL and SIGSTOP have no handler to reset
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {-status})
        os.kill(os.getpid(), -status)
    os._exit(status if status is not None and 0 <= status < 256 else 1)
