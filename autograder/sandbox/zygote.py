"""The zygote: a sandboxed Python with torch imported, which forks one child per submission.

Starting Python and importing torch costs seconds, so each grading process keeps one zygote
(see worker.py) and has it fork a fresh child for every submission, over pipes made for that
submission alone. When a submission is done, everything it started is killed and /tmp is
emptied before the next one is let in.
"""
import atexit
import json
import shutil
import os
import select
import socket
import subprocess
import tempfile
import threading
from dataclasses import astuple

from .channel import Channel, Drain
from ..limits import Limits
from .errors import SandboxError
from .isolation import HERE, Cgroup, command, sandbox_uid
from .memory import ProcessTree


class Zygote:
    """A sandboxed Python with torch imported, which forks one child per submission."""

    def __init__(self, limits: Limits, isolate: bool):
        self.limits, self.isolate = limits, isolate
        self.uid = sandbox_uid()
        self.cgroup = Cgroup(limits) if isolate and os.geteuid() == 0 else None
        self.lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "MPLCONFIGDIR": "/tmp", "MPLBACKEND": "Agg",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               # glibc: every block of 64 KiB or more is its own mapping, given back when freed, and a fixed
               # threshold (no dynamic raise): memory a submission frees shows in the cgroup's use at once,
               # so it cannot be kept in the heap as a hidden reserve for a measured call
               "MALLOC_MMAP_THRESHOLD_": "65536", "MALLOC_TRIM_THRESHOLD_": "131072",
               "NBGRADER_EXECUTION": "autograde",  # the lesson's demos run at their autograding sizes
               # torch.compile'd functions run as written: the same results, without compiling C++ afresh in
               # every item's fork (minutes per item on 2 cores)
               "TORCHDYNAMO_DISABLE": "1",
               "LESSON20_ZYGOTE_FD": str(theirs.fileno()), "LESSON20_ISOLATED": "1" if isolate else "",
               "LESSON20_TMP_BYTES": str(limits.tmp_mb * 2**20),  # each submission's fresh /tmp and /dev/shm
               "LESSON20_LIMITS": json.dumps(self._rlimits())}
        # not isolated, the machine's /tmp is the children's: the files handed in beside each notebook go to a
        # folder of this zygote's own (TMPDIR), removed with it, rather than piling up in /tmp
        self.scratch = None if isolate else tempfile.mkdtemp(prefix="lesson20-zygote-")
        if self.scratch:
            env["TMPDIR"] = self.scratch
        self.proc, self.sock = None, ours
        try:
            self.proc = subprocess.Popen(command(limits, isolate, self.uid, self.cgroup), stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                         pass_fds=(theirs.fileno(),), env=env, cwd="/" if isolate else str(HERE),
                                         start_new_session=True)
        except BaseException:  # no process (no memory, no bubblewrap...): its cgroups and scratch go now, not at exit
            self.close()
            raise
        finally:
            theirs.close()
        self.err = Drain(os.dup(self.proc.stderr.fileno()), 64 * 1024)  # its last line says why it stopped
        self.proc.stderr.close()
        try:
            reply = self._receive(max(self.limits.cell_seconds, self.limits.startup_seconds))
        except SandboxError:
            self.close()
            raise
        if not reply.get("ready"):
            self.close()
            raise SandboxError("protocol", "the sandbox did not start properly")
        # whether each submission gets new namespaces of its own (namespaces.py), or shares the zygote's
        self.fresh_namespaces = reply.get("fresh_namespaces") is True
        # what measures a call's memory: the cgroup, or, where this process may make none, the sandbox's processes
        self.memory = self.cgroup.memory if self.cgroup and self.cgroup.memory.measures else (
            ProcessTree(self.proc.pid) if isolate else None)

    def _rlimits(self) -> dict:
        mb = 2**20
        return {"AS": self.limits.memory_mb * mb, "FSIZE": self.limits.tmp_mb * mb, "CORE": 0,
                "NPROC": self.limits.max_processes if self.uid is not None else None}

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def _receive(self, timeout: float) -> dict:
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            raise SandboxError("timeout", f"the sandbox did not answer within {timeout:g} s")
        try:
            message = self.sock.recv(1 << 16)
        except OSError:
            message = b""
        if not message:
            tail = self.err.tail() if self.err else ""
            raise SandboxError("crashed", "the sandbox stopped" + (f": {tail}" if tail else ""))
        try:
            reply = json.loads(message)
        except ValueError:
            reply = None
        if not isinstance(reply, dict):
            raise SandboxError("protocol", "the sandbox sent an unreadable message")
        return reply

    def spawn(self, fds) -> int:
        with self.lock:
            socket.send_fds(self.sock, [json.dumps({"cmd": "spawn"}).encode()], fds)
            return self._receive(10)["pid"]

    def reap(self):
        """Kill everything a submission started; the exit code of its child (None if unknown)."""
        with self.lock:
            self.sock.send(json.dumps({"cmd": "reap"}).encode())
            reply = self._receive(5)  # killing and cleaning up takes milliseconds; more means it was stopped
        if reply.get("clean") is not True:  # something survived: this sandbox is not used again
            self.close()
        return reply.get("status")

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)  # bwrap dies, and with it its whole PID namespace
            except OSError:
                pass
            self.proc.wait()
            self.proc = None
        try:
            self.sock.close()
        except OSError:
            pass
        if self.cgroup:
            self.cgroup.close()
            self.cgroup = None
        if getattr(self, "scratch", None):
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None


_SHARED = {}  # (limits, isolate, pid) -> Zygote, one per grading process


def shared_zygote(limits: Limits, isolate: bool) -> Zygote:
    """This process's zygote for these limits, started (or replaced, if it died) when needed."""
    key = (astuple(limits), isolate, os.getpid())  # a forked copy of this process starts its own
    zygote = _SHARED.get(key)
    if zygote is None or not zygote.alive:
        if zygote is not None:
            zygote.close()
        zygote = _SHARED[key] = Zygote(limits, isolate)
    return zygote


@atexit.register
def close_all():
    """End every sandbox this process started."""
    while _SHARED:
        _SHARED.popitem()[1].close()


def open_channel(zygote, limits: Limits, isolate: bool):
    """Fork a child for one submission, over four new pipes; returns (the zygote used, its Channel).

    With bubblewrap the zygote is this process's shared one; without, a fresh one per child.
    A zygote that died since its last use is replaced once.
    """
    pipes = [os.pipe() for _ in range(4)]  # requests, replies, stdout, stderr
    theirs = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1]]
    ours = [pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0]]
    pid = None
    for _ in range(2):
        try:
            if zygote is None or not zygote.alive:
                zygote = shared_zygote(limits, True) if isolate else Zygote(limits, False)
            pid = zygote.spawn(theirs)
            break
        except (OSError, SandboxError, KeyError, ValueError, TypeError):
            if zygote is not None:
                zygote.close()
            zygote = None
    for fd in theirs:
        os.close(fd)
    if pid is None:
        for fd in ours:
            os.close(fd)
        raise SandboxError("crashed", "the sandbox could not start your code")
    kept = limits.max_output_kb * 1024
    return zygote, Channel(ours[0], ours[1], Drain(ours[2], kept), Drain(ours[3], kept))
