"""Run a submission's code in an isolated process and carry plain data back.

With bubblewrap (Linux): no network, a read-only view of the Python installation and nothing
else of the file system, a private /tmp, its own PID namespace, and death with the grading
process. Run as root, the code also runs under an unprivileged uid, inside a memory, CPU and
process-count cgroup when the machine allows one.

Starting Python and importing torch costs seconds, so each grading process keeps one sandbox
(a *zygote*, see sandbox_worker.py) and forks a fresh child in it for every submission, over
pipes made for that submission alone. When a submission is done, everything it started is
killed and /tmp is emptied before the next one is let in.

Without bubblewrap: a resource-limited subprocess per submission, with a warning that
isolation is weaker.
"""
import atexit
import io
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
import warnings
import zipfile
from dataclasses import astuple, dataclass
from pathlib import Path

import torch

from .checks.expect import CheckFailure
from .runner import probe_failure

HERE = Path(__file__).parent
BOX = "/sandbox"
WEAK_ISOLATION = ("bubblewrap (bwrap) was not found: submissions run in a resource-limited subprocess "
                  "that can still read your files and use the network. Install it (apt-get install "
                  "bubblewrap) before grading work you do not trust.")


@dataclass(frozen=True)
class Limits:
    memory_mb: int = 4096        # address space per process, and the cgroup's total where there is one
    cpu_seconds: int = 60        # per graded item (and for loading the notebook's code)
    max_processes: int = 64      # processes and threads, enforced where the code runs under its own uid
    max_output_kb: int = 256     # what the code prints is drained and kept up to this, then dropped
    max_answer_mb: int = 64      # largest answer read back
    tmp_mb: int = 256            # size of the private /tmp
    cpus: float = 1.0            # CPU cores the sandbox may use at once (cgroup), 0 for no limit
    max_restarts: int = 8        # fresh starts after a crash or timeout, per submission
    total_seconds: int = 0       # all items together (0: three times cpu_seconds); then the rest fail fast


class SandboxError(Exception):
    """The sandboxed process timed out, died or broke the protocol; `reason` says which."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason


def have_bwrap() -> bool:
    return sys.platform.startswith("linux") and shutil.which("bwrap") is not None


def _ro_binds() -> list:
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


class _Cgroup:
    """Memory, pids and CPU cgroups (v1 or v2) for one sandbox, when this process may create them."""

    ROOT = Path("/sys/fs/cgroup")

    def __init__(self, limits: Limits):
        self.dirs = []
        self.name = f"lesson20-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        memory, pids = str(limits.memory_mb * 2**20), str(limits.max_processes)
        period = 100_000
        quota = str(int(limits.cpus * period)) if limits.cpus else None
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
                    (d / knob).write_text(value)
        except OSError:
            self.close()
            self.dirs = []

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
        for d in self.dirs:
            procs = d / "cgroup.procs"
            for _ in range(100):
                try:
                    pids = [int(x) for x in procs.read_text().split()]
                except OSError:
                    break
                if not pids:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, 9)
                    except OSError:
                        pass
                time.sleep(0.02)
            for _ in range(50):
                try:
                    d.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.02)  # the last processes are still exiting
        self.dirs = []


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first `limit` bytes (so a flood cannot block or fill memory)."""

    def __init__(self, fd: int, limit: int):
        super().__init__(daemon=True)
        self.fd, self.limit, self.kept, self.dropped = fd, limit, bytearray(), 0
        self.start()

    def run(self):
        try:
            while chunk := os.read(self.fd, 1 << 16):
                room = max(self.limit - len(self.kept), 0)
                self.kept += chunk[:room]
                self.dropped += len(chunk) - min(room, len(chunk))
        except OSError:
            pass
        finally:
            try:
                os.close(self.fd)
            except OSError:
                pass

    def tail(self) -> str:
        lines = bytes(self.kept[-600:]).decode(errors="replace").strip().splitlines()
        return lines[-1][:200] if lines else ""


def sandbox_uid(pid: int = None):
    """The unprivileged uid that submissions graded by process `pid` (default: this one) run under,
    or None when they run under the grader's own uid (not root, or no setpriv)."""
    if os.geteuid() != 0 or not shutil.which("setpriv"):
        return None
    return 61000 + (os.getpid() if pid is None else pid) % 4000


class _Zygote:
    """A sandboxed Python with torch imported, which forks one child per submission."""

    def __init__(self, limits: Limits, isolate: bool):
        self.limits, self.isolate = limits, isolate
        self.uid = sandbox_uid()
        self.cgroup = _Cgroup(limits) if isolate and os.geteuid() == 0 else None
        self.lock = threading.Lock()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "MPLCONFIGDIR": "/tmp", "MPLBACKEND": "Agg",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "LESSON20_ZYGOTE_FD": str(theirs.fileno()), "LESSON20_ISOLATED": "1" if isolate else "",
               "LESSON20_LIMITS": json.dumps(self._rlimits())}
        self.proc = subprocess.Popen(self._command(), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, pass_fds=(theirs.fileno(),), env=env,
                                     cwd="/" if isolate else str(HERE), start_new_session=True)
        theirs.close()
        self.sock = ours
        self.out = _Drain(os.dup(self.proc.stdout.fileno()), 64 * 1024)
        self.err = _Drain(os.dup(self.proc.stderr.fileno()), 64 * 1024)
        self.proc.stdout.close()
        self.proc.stderr.close()
        try:
            reply = self._receive(max(self.limits.cpu_seconds, 60))
        except SandboxError:
            self.close()
            raise
        if not reply.get("ready"):
            self.close()
            raise SandboxError("protocol", "the sandbox did not start properly")

    def _rlimits(self) -> dict:
        mb = 2**20
        return {"AS": self.limits.memory_mb * mb, "FSIZE": self.limits.tmp_mb * mb, "CORE": 0,
                "NPROC": self.limits.max_processes if self.uid is not None else None}

    def _command(self) -> list:
        python = [sys.executable, "-I"]
        if not self.isolate:
            return python + [str(HERE / "sandbox_worker.py"), str(HERE / "checks")]
        # the private /tmp first: a Python installation that lives under /tmp is then bound on top of it
        cmd = ["bwrap", "--perms", "1777", "--size", str(self.limits.tmp_mb * 2**20), "--tmpfs", "/tmp",
               *_ro_binds(),
               "--dir", BOX,
               "--ro-bind", str(HERE / "sandbox_worker.py"), f"{BOX}/worker.py",
               "--ro-bind", str(HERE / "checks" / "probes.py"), f"{BOX}/probes.py",
               "--proc", "/proc", "--dev", "/dev",
               "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--chdir", "/tmp"]
        if os.geteuid() != 0:
            cmd.append("--unshare-user")
        if self.uid is not None:
            cmd += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--no-new-privs"]
        prefix = self.cgroup.enter_command() if self.cgroup else []
        return prefix + cmd + python + [f"{BOX}/worker.py", BOX]

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


_SHARED = {}  # (limits, isolate, pid) -> _Zygote, one per grading process


def _shared_zygote(limits: Limits, isolate: bool) -> _Zygote:
    key = (astuple(limits), isolate, os.getpid())  # a forked copy of this process starts its own
    zygote = _SHARED.get(key)
    if zygote is None or not zygote.alive:
        if zygote is not None:
            zygote.close()
        zygote = _SHARED[key] = _Zygote(limits, isolate)
    return zygote


@atexit.register
def close_all():
    """End every sandbox this process started (also called by tests)."""
    while _SHARED:
        _SHARED.popitem()[1].close()


class Sandbox:
    """The sandboxed process holding one submission's code; restartable after a crash or timeout."""

    def __init__(self, cells, limits: Limits = Limits(), isolate: bool = None):
        self.cells = [{"index": c.index, "label": c.label, "source": c.source, "solution": c.solution}
                      for c in cells]
        self.limits = limits
        self.isolate = have_bwrap() if isolate is None else isolate
        if not self.isolate:
            warnings.warn(WEAK_ISOLATION, stacklevel=2)
        self.zygote = None
        self.child = None      # (pid, requests fd, replies fd, stdout drain, stderr drain)
        self.problems = []
        self.starts = 0
        self.last = (None, None)  # (exit code, stderr drain) of the last child that ended
        self._next_id = 0
        self._buffer = b""

    # ---- lifecycle ----

    def start(self, timeout: float = None) -> list:
        """Start a child and run the submission's code in it; return its load problems (cell errors)."""
        self._end_child()
        if self.starts > self.limits.max_restarts:
            raise SandboxError("crashed", f"your code stopped the sandbox {self.starts} times; "
                                          "the rest of its checks are skipped")
        self.starts += 1
        pipes = [os.pipe() for _ in range(4)]  # requests, replies, stdout, stderr
        theirs = [pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1]]
        pid = None
        for attempt in range(2):  # a zygote that died since its last use is replaced once
            try:
                if self.zygote is None or not self.zygote.alive:
                    self.zygote = (_shared_zygote(self.limits, True) if self.isolate
                                   else _Zygote(self.limits, False))
                pid = self.zygote.spawn(theirs)
                break
            except (OSError, SandboxError, KeyError, ValueError, TypeError):
                if self.zygote is not None:
                    self.zygote.close()
                self.zygote = None
        for fd in theirs:
            os.close(fd)
        if pid is None:
            for fd in (pipes[0][1], pipes[1][0], pipes[2][0], pipes[3][0]):
                os.close(fd)
            raise SandboxError("crashed", "the sandbox could not start your code")
        requests, replies = pipes[0][1], pipes[1][0]
        os.set_blocking(requests, False)
        kept = self.limits.max_output_kb * 1024
        self.child = (pid, requests, replies, _Drain(pipes[2][0], kept), _Drain(pipes[3][0], kept))
        self._buffer = b""
        deadline = time.monotonic() + (timeout or self.limits.cpu_seconds)
        self._send(json.dumps(self.cells).encode() + b"\n", deadline, "loading your notebook's code")
        hello = self._line(deadline, "loading your notebook's code")
        if hello.get("ready") is not True:
            self._fail("protocol", "the sandbox did not start properly")
        problems = hello.get("problems")
        self.problems = [_plain_problem(p) for p in (problems if isinstance(problems, list) else [])[:20]
                         if isinstance(p, dict)]
        return self.problems

    def close(self):
        self._end_child()
        if self.zygote is not None and not self.isolate:
            self.zygote.close()
        self.zygote = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _end_child(self):
        """Close this submission's pipes and have the zygote kill everything it started."""
        if self.child is None:
            return None
        _, requests, replies, out, err = self.child
        self.child = None
        for fd in (requests, replies):
            try:
                os.close(fd)
            except OSError:
                pass
        status = None
        if self.zygote is not None:
            try:
                status = self.zygote.reap()
            except (OSError, SandboxError, ValueError):
                self.zygote.close()  # a zygote that cannot clean up is not used again
            if not self.isolate:  # without a PID namespace, a fresh process for every start
                self.zygote.close()
                self.zygote = None
        for drain in (out, err):
            drain.join(timeout=2)
        self.last = (status, err)
        return status

    # ---- requests ----

    def request(self, probe: str, spec: dict, timeout: float) -> dict:
        """Run one probe in the sandbox; return its plain-data answer, or raise SandboxError."""
        if self.child is None:
            self.start()
        self._next_id += 1
        rid = self._next_id
        buffer = io.BytesIO()
        torch.save(spec, buffer)
        data = buffer.getvalue()
        deadline = time.monotonic() + timeout
        header = json.dumps({"id": rid, "probe": probe, "size": len(data), "cpu_seconds": int(timeout) + 1})
        self._send(header.encode() + b"\n" + data, deadline, f"running {probe}")
        reply = self._line(deadline, f"running {probe}")
        size = reply.get("size")
        if reply.get("id") != rid or not isinstance(size, int) or size < 0:
            self._fail("protocol", "the sandbox answered out of turn")
        if size > self.limits.max_answer_mb * 2**20:
            self._fail("protocol", "the answer was too large to read back")
        payload = self._exact(size, deadline, f"running {probe}")
        if not _stored_zip(payload, self.limits.max_answer_mb * 2**20):
            self._fail("protocol", "the answer was not in the form the sandbox writes")
        try:
            answer = torch.load(io.BytesIO(payload), weights_only=True)  # plain data only: nothing the student made
        except Exception as exc:
            self._fail("protocol", f"the answer could not be read as plain data ({type(exc).__name__})")
        if not isinstance(answer, dict) or "status" not in answer:
            self._fail("protocol", "the answer had the wrong shape")
        return answer

    # ---- internals ----

    def _send(self, data: bytes, deadline: float, doing: str):
        fd = self.child[1]
        view = memoryview(data)
        while view:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail("timeout", f"took longer than it may while {doing}")
            _, writable, _ = select.select([], [fd], [], min(left, 1.0))
            if writable:
                try:
                    view = view[os.write(fd, view):]
                except BlockingIOError:
                    continue
                except OSError:
                    self._fail("crashed", self._death_message(doing))

    def _fill(self, deadline: float, doing: str, timeout_message: str):
        fd = self.child[2]
        left = deadline - time.monotonic()
        if left <= 0:
            self._fail("timeout", timeout_message)
        ready, _, _ = select.select([fd], [], [], min(left, 1.0))
        if ready:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self._fail("crashed", self._death_message(doing))
            self._buffer += chunk

    def _line(self, deadline: float, doing: str) -> dict:
        total = deadline - time.monotonic()
        while b"\n" not in self._buffer:
            if len(self._buffer) > 2**20:
                self._fail("protocol", "the sandbox flooded its reply channel")
            self._fill(deadline, doing, f"took longer than {max(total, 0):.0f} s while {doing}")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            message = None
        if not isinstance(message, dict):
            self._fail("protocol", "the sandbox sent an unreadable message")
        return message

    def _exact(self, size: int, deadline: float, doing: str) -> bytes:
        while len(self._buffer) < size:
            self._fill(deadline, doing, f"took too long while {doing}")
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def _death_message(self, doing: str = "running your code") -> str:
        status, err = self._end_child(), self.last[1]
        why = {-9: "it was killed (out of memory, or past its CPU time)", -24: "it ran past its CPU time",
               -11: "it crashed (segmentation fault)", -25: "it wrote a file that was too large",
               -6: "it aborted"}.get(status)
        text = why or (f"it exited with code {status}" if status is not None else "it stopped answering")
        tail = err.tail() if err is not None else ""
        return f"the Python process running your code ended while {doing}: {text}" + (
            f". Last message: {tail}" if tail and why is None else "")

    def _fail(self, reason: str, message: str):
        if os.environ.get("LESSON20_SANDBOX_DEBUG") and self.child is not None:
            print(bytes(self.child[4].kept).decode(errors="replace"), file=sys.stderr)
        self._end_child()
        raise SandboxError(reason, message)


def _stored_zip(payload: bytes, limit: int) -> bool:
    """True for a torch.save zip whose members are stored, not compressed, within `limit` bytes in all:
    a forged answer could otherwise be a zip bomb that torch.load would inflate in the grader."""
    try:
        with zipfile.ZipFile(io.BytesIO(payload)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, ValueError, OSError, RecursionError, EOFError):
        return False
    return (all(m.compress_type == zipfile.ZIP_STORED for m in members)
            and sum(m.file_size for m in members) <= limit)


def _plain_problem(p: dict) -> dict:
    """A load problem as the grader keeps it: known keys, short strings (it came from the sandbox)."""
    def text(v, n):
        return str(v)[:n] if v is not None else ""
    line = p.get("line")
    return {"cell": p.get("cell") if isinstance(p.get("cell"), int) else -1,
            "line": line if isinstance(line, int) else None,
            "type": text(p.get("type"), 80), "message": text(p.get("message"), 400), "where": text(p.get("where"), 300)}


class SandboxStudent:
    """The checks' `student` backend during grading: probes run in the sandbox, with a time budget per item."""

    context = "sandbox"
    CRASHES_PER_ITEM = 2  # after this many, the item's remaining checks fail without running again

    def __init__(self, sandbox: Sandbox, seconds_per_item: float, total_seconds: float = None):
        self.sandbox = sandbox
        self.seconds_per_item = seconds_per_item
        self.total_seconds = total_seconds or 3 * seconds_per_item
        self.item = None
        self.spent = {}
        self.crashes = {}
        self.failures = {}  # item -> CheckFailure that ended it (timeout, crashes): later checks fail fast

    def begin_item(self, item_id: str):
        self.item = item_id

    def run(self, probe: str, **spec) -> dict:
        item = self.item
        if item in self.failures:  # a new exception each time: re-raising one would grow its traceback
            raise CheckFailure(str(self.failures[item]), self.failures[item].reason)
        total_left = self.total_seconds - sum(self.spent.values())
        left = min(self.seconds_per_item - self.spent.get(item, 0.0), total_left)
        if total_left <= 0:  # the whole notebook's time is used up
            self.failures[item] = CheckFailure(
                f"{probe.replace('_', ' ')}: not run: your notebook used up its {self.total_seconds:g} s for all "
                "exercises in earlier ones. Look for an endless loop there.", "timeout")
            raise CheckFailure(str(self.failures[item]), "timeout")
        started = time.monotonic()
        try:
            obs = self.sandbox.request(probe, spec, timeout=max(left, 0.5))
        except SandboxError as exc:
            hint = {"timeout": f"This exercise has {self.seconds_per_item:g} s in all: look for an endless loop.",
                    "crashed": "Look for os._exit, sys.exit, or a very large allocation.",
                    }.get(exc.reason, "")
            text = f"{probe.replace('_', ' ')}: {exc}".rstrip(".")
            failure = CheckFailure(f"{text}. {hint}".strip(), exc.reason)
            self.crashes[item] = self.crashes.get(item, 0) + 1
            if exc.reason == "timeout" or self.crashes[item] >= self.CRASHES_PER_ITEM:
                self.failures[item] = failure
            raise failure from None
        finally:
            self.spent[item] = self.spent.get(item, 0.0) + time.monotonic() - started
        if obs["status"] != "ok":
            raise probe_failure(obs, self.context)
        return obs
