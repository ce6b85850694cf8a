"""What walls a submission runs inside: bubblewrap's view of the file system, cgroups, an unprivileged uid.

With bubblewrap (Linux): no network, a read-only view of the Python installation and nothing
else of the file system, a private /tmp, its own PID namespace, and death with the grading
process. Run as root, the code also runs under an unprivileged uid, inside a memory, CPU and
process-count cgroup when the machine allows one. Without bubblewrap: a resource-limited
subprocess, with a warning that isolation is weaker.
"""
import contextlib
import os
import shutil
import sys
import time
import uuid
from pathlib import Path

from ..exercises import part_files
from ..limits import Limits
from .memory import CgroupMemory
from .uids import UIDS, sandbox_uid, uid_candidates, uid_holder  # noqa: F401 - the sandbox's uid, from here too
from .worker import PARTS

HERE = Path(__file__).parent
PACKAGE = HERE.parent  # autograder/
BOX = "/sandbox"
# the probes' files, derived from the exercises' folders: the child executes them in this order, after checking
# them against the grader's hashes (session.PROBES_SHA256), and its audit guard holds them as the grader's own
PROBE_FILES = (*(PACKAGE / "checks" / name for name in ("plain_data.py", "models.py", "harness.py")), *part_files("probes"))
WEAK_ISOLATION = ("bubblewrap (bwrap) was not found: submissions run in a resource-limited subprocess "
                  "that can still read your files and use the network. Install it (apt-get install "
                  "bubblewrap) before grading work you do not trust.")


def have_bwrap() -> bool:
    return sys.platform.startswith("linux") and shutil.which("bwrap") is not None


def ro_binds() -> list:
    """The Python installation and system libraries, read-only, and nothing else."""
    paths = ["/usr", "/etc/alternatives", "/etc/ld.so.cache"]
    for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable))):
        if not any(p == q or p.startswith(q.rstrip("/") + "/") for q in paths):
            paths.append(p)
    args, made = [], {"/tmp"}  # /tmp is the sandbox's own tmpfs, mounted first
    for p in paths:
        if not os.path.exists(p):
            continue
        parent = os.path.dirname(p)
        parents = []
        while parent not in ("/", "") and parent not in made:
            parents.append(parent)
            parent = os.path.dirname(parent)
        for d in reversed(parents):  # bwrap would copy the host's modes (/root is 0700): open them
            args += ["--perms", "0755", "--dir", d]
            made.add(d)
        args += ["--ro-bind", p, p]
    for link in ("/bin", "/sbin", "/lib", "/lib64", "/lib32"):
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    return args


def cpu_shares():
    """The CPU share (cgroup v1's cpu.shares, 1024 for a process at niceness 0) of this process's niceness,
    or None at niceness 0. A sandbox's CPU cgroup competes with the machine's other processes as one process
    at niceness 0 whatever the niceness of what runs inside it, so the cgroup is given the share that keeps
    the priority of the grading process that made it (`nice python -m autograder grade`). Each step of
    niceness is a factor of 1.25, as in the kernel's own table of weights."""
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    return max(2, min(262144, round(1024 / 1.25 ** nice))) if nice else None


class Cgroup:
    """Memory, pids and CPU cgroups (v1 or v2) for one sandbox, when this process may create them."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits):
        self.dirs = []
        self.memory = CgroupMemory(self.dirs)  # what a call's memory is read from (memory.py)
        self.name = f"lesson20-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        memory, pids = str(limits.memory_mb * 2**20), str(limits.max_processes)
        period = 100_000
        quota = str(int(limits.cpus * period)) if limits.cpus else None
        shares = cpu_shares()
        self._remove_stale()
        try:
            if (self.ROOT / "cgroup.controllers").exists():
                d = self.ROOT / self.name
                d.mkdir()
                self.dirs.append(d)
                (d / "memory.max").write_text(memory)
                (d / "pids.max").write_text(pids)
                if quota and (d / "cpu.max").exists():
                    (d / "cpu.max").write_text(f"{quota} {period}")
                if shares:  # cpu.weight is 100 where cpu.shares is 1024; absent without the cpu controller
                    with contextlib.suppress(OSError):
                        (d / "cpu.weight").write_text(str(min(10000, max(1, round(shares * 100 / 1024)))))
            else:
                knobs = [("memory", "memory.limit_in_bytes", memory), ("pids", "pids.max", pids)]
                if quota and (self.ROOT / "cpu" / "cpu.cfs_quota_us").exists():
                    knobs.append(("cpu", "cpu.cfs_quota_us", quota))
                for controller, knob, value in knobs:
                    d = self.ROOT / controller / self.name
                    d.mkdir()
                    self.dirs.append(d)
                    if controller == "cpu":
                        (d / "cpu.cfs_period_us").write_text(str(period))
                        if shares:
                            with contextlib.suppress(OSError):
                                (d / "cpu.shares").write_text(str(shares))
                    (d / knob).write_text(value)
        except OSError:
            self.close()

    @classmethod
    def _remove_stale(cls):
        """Empty cgroups left by grading processes that were killed before they could clean up."""
        for parent in (cls.ROOT, *(cls.ROOT / c for c in ("memory", "pids", "cpu"))):
            try:
                entries = list(parent.glob("lesson20-*-*"))
            except OSError:
                continue
            for d in entries:
                try:
                    pid = int(d.name.split("-")[1])
                except (IndexError, ValueError):
                    continue
                if not Path(f"/proc/{pid}").exists():
                    try:
                        d.rmdir()
                    except OSError:
                        pass

    def enter_command(self) -> list:
        """A shell prefix that moves itself into the cgroups, then execs the rest."""
        if not self.dirs:
            return []
        moves = " && ".join(f"echo $$ > {d / 'cgroup.procs'}" for d in self.dirs)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh"]

    def close(self):
        self.memory.close()
        for d in self.dirs:
            remove_cgroup(d)
        self.dirs.clear()


def remove_cgroup(folder: Path, kill: bool = True, seconds: float = 3.0) -> bool:
    """Removes cgroup `folder`: with `kill`, SIGKILLs what is still in it first; in any case tries again
    while its last processes exit, for up to `seconds`. True once it is gone (or never was)."""
    until = time.monotonic() + seconds
    while True:
        if kill:
            with contextlib.suppress(OSError):
                for pid in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), 9)
        try:
            folder.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            if time.monotonic() >= until:
                return False
            time.sleep(0.02)  # the last processes are still exiting


def command(limits: Limits, isolate: bool, uid, cgroup) -> list:
    """The command that starts the zygote: bwrap (+ setpriv, inside the cgroup) or a plain Python."""
    python = [sys.executable, "-I"]
    package = PACKAGE
    guard = HERE / "guard.py"
    if not isolate:
        return python + [str(HERE / "worker.py"), os.pathsep.join(probe_files(False)), str(guard),
                         str(package.parent)]
    # the private /tmp first: a Python installation that lives under /tmp is then bound on top of it
    cmd = ["bwrap", "--perms", "1777", "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/tmp",
           *ro_binds(),
           "--dir", BOX,
           "--ro-bind", str(HERE / "worker.py"), f"{BOX}/worker.py",
           # beside worker.py, which loads them by path
           *(arg for name in PARTS for arg in ("--ro-bind", str(HERE / f"{name}.py"), f"{BOX}/{name}.py")),
           # bwrap would make a bind's missing folders 0700, closed to the sandbox's uid: made open first
           *(arg for folder in probe_folders() for arg in ("--perms", "0755", "--dir", folder)),
           *(arg for here, there in zip(probe_files(False), probe_files(True)) for arg in ("--ro-bind", here, there)),
           "--ro-bind", str(guard), f"{BOX}/guard.py",
           # the student package, as students install it: without the instructor's part (hidden checks)
           "--perms", "0755", "--dir", f"{BOX}/lib", "--ro-bind", str(package), f"{BOX}/lib/autograder",
           *(["--tmpfs", f"{BOX}/lib/autograder/instructor"] if (package / "instructor").is_dir() else []),
           # the oracles' values for the visible checks' inputs: a grade is never decided by what the sandbox
           # could look up, and the checks run outside it
           *(["--ro-bind", "/dev/null", f"{BOX}/lib/autograder/checks/expected.pt"]
             if (package / "checks" / "expected.pt").is_file() else []),
           "--proc", "/proc", "--dev", "/dev",
           # POSIX shared memory and semaphores (a DataLoader's workers): private, emptied after every submission
           "--perms", "1777", "--size", str(limits.tmp_mb * 2**20), "--tmpfs", "/dev/shm",
           "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
           "--die-with-parent", "--new-session", "--chdir", "/tmp"]
    if os.geteuid() != 0:
        cmd.append("--unshare-user")
    if uid is not None:
        cmd += ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs"]
    prefix = cgroup.enter_command() if cgroup else []
    return prefix + cmd + python + [f"{BOX}/worker.py", os.pathsep.join(probe_files(True)), f"{BOX}/guard.py",
                                    f"{BOX}/lib"]


def probe_files(isolate: bool) -> list:
    """Where the child reads the probes' files from, as it sees the file system, in the order it runs them: in
    the sandbox, at their place in the package under /sandbox (/sandbox/exercises/<id>/probes.py)."""
    return [f"{BOX}/{path.relative_to(PACKAGE).as_posix()}" if isolate else str(path) for path in PROBE_FILES]


def probe_folders() -> list:
    """The folders under /sandbox that the probes' files sit in there, each after its parent."""
    folders = []
    for path in probe_files(True):
        parents = list(Path(path).parents)
        for folder in reversed(parents[:parents.index(Path(BOX))]):
            if str(folder) not in folders:
                folders.append(str(folder))
    return folders


def user_namespaces_allowed() -> bool:
    """Whether this kernel lets an unprivileged process make a user namespace (what per-submission namespaces
    need inside the sandbox): tried in a process of its own."""
    import ctypes
    pid = os.fork()
    if pid == 0:
        try:
            os._exit(0 if ctypes.CDLL(None, use_errno=True).unshare(0x10000000) == 0 else 1)  # CLONE_NEWUSER
        except BaseException:  # noqa: BLE001 - whatever failed, the answer is no
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
