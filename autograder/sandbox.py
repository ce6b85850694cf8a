"""Run a submission's code in an isolated process and carry plain data back.

With bubblewrap (Linux): no network, a read-only view of the Python installation and nothing
else of the file system, a private /tmp, its own PID namespace (so every process it starts
dies with it), and death with the grader. Run as root, the code also runs under an
unprivileged uid, inside a memory and process-count cgroup when the machine allows one.
Without bubblewrap: a resource-limited subprocess, with a warning that isolation is weaker.
"""
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

import torch

from .checks import probes
from .checks.expect import CheckFailure
from .runner import probe_failure

HERE = Path(__file__).parent
WEAK_ISOLATION = ("bubblewrap (bwrap) was not found: submissions run in a resource-limited subprocess "
                  "that can still read your files and use the network. Install it (apt-get install "
                  "bubblewrap) before grading work you do not trust.")


@dataclass
class Limits:
    memory_mb: int = 4096        # address space per process, and the cgroup's total where there is one
    cpu_seconds: int = 60        # per graded item (and for loading the notebook's code)
    max_processes: int = 64      # processes and threads, enforced where the code runs under its own uid
    max_output_kb: int = 256     # what the code prints is drained and kept up to this, then dropped
    max_answer_mb: int = 64      # largest answer file read back
    tmp_mb: int = 256            # size of the private /tmp


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
    args, made = [], set()
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
    """A memory + pids cgroup (v1 or v2) for one sandbox, when this process may create one."""

    def __init__(self, limits: Limits):
        self.dirs = []
        name = f"lesson20-{uuid.uuid4().hex[:12]}"
        v2 = Path("/sys/fs/cgroup/cgroup.controllers")
        try:
            if v2.exists():
                d = Path("/sys/fs/cgroup") / name
                d.mkdir()
                self.dirs.append(d)
                (d / "memory.max").write_text(str(limits.memory_mb * 2**20))
                (d / "pids.max").write_text(str(limits.max_processes))
            else:
                for ctl, knob, value in (("memory", "memory.limit_in_bytes", limits.memory_mb * 2**20),
                                         ("pids", "pids.max", limits.max_processes)):
                    d = Path("/sys/fs/cgroup") / ctl / name
                    d.mkdir()
                    self.dirs.append(d)
                    (d / knob).write_text(str(value))
        except OSError:
            self.close()
            self.dirs = []

    def enter_command(self) -> list:
        """A shell prefix that moves itself into the cgroup, then execs the rest."""
        if not self.dirs:
            return []
        moves = " && ".join(f"echo $$ > {d / 'cgroup.procs'}" for d in self.dirs)
        return ["/bin/sh", "-c", f'{moves} && exec "$@"', "sh"]

    def close(self):
        for d in self.dirs:
            procs = d / "cgroup.procs"
            for _ in range(50):
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
            try:
                d.rmdir()
            except OSError:
                pass


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first `limit` bytes (so a flood cannot block or fill memory)."""

    def __init__(self, stream, limit: int):
        super().__init__(daemon=True)
        self.stream, self.limit, self.kept, self.dropped = stream, limit, bytearray(), 0
        self.start()

    def run(self):
        try:
            while chunk := self.stream.read(65536):
                room = self.limit - len(self.kept)
                self.kept += chunk[:max(room, 0)]
                self.dropped += max(len(chunk) - max(room, 0), 0)
        except (OSError, ValueError):  # closed under us when the sandbox is torn down
            pass


class Sandbox:
    """One sandboxed worker process holding a submission's code; restartable after a failure."""

    def __init__(self, cells, limits: Limits = Limits(), isolate: bool = None):
        self.cells = [{"index": c.index, "label": c.label, "source": c.source, "solution": c.solution}
                      for c in cells]
        self.limits = limits
        self.isolate = have_bwrap() if isolate is None else isolate
        if not self.isolate:
            warnings.warn(WEAK_ISOLATION, stacklevel=2)
        self.proc = None
        self.problems = []
        self._next_id = 0

    # ---- lifecycle ----

    def start(self, timeout: float = None) -> list:
        """Start the worker and run the submission's code; return its load problems (cell errors)."""
        self.close()
        self.dir = Path(tempfile.mkdtemp(prefix="lesson20-sandbox-"))
        (self.dir / "io").mkdir()
        shutil.copy(HERE / "sandbox_worker.py", self.dir / "worker.py")
        shutil.copy(HERE / "checks" / "probes.py", self.dir / "probes.py")
        (self.dir / "cells.json").write_text(json.dumps(self.cells))
        self.uid = self._pick_uid()
        if self.uid is not None:  # readable by the sandbox's uid only (it is mounted read-only there)
            for path in (self.dir, *self.dir.iterdir()):
                os.chown(path, self.uid, self.uid)
        self.cgroup = _Cgroup(self.limits) if self.isolate and os.geteuid() == 0 else None
        read_fd, write_fd = os.pipe()
        cmd, workdir = self._command(write_fd)
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "MPLCONFIGDIR": "/tmp", "MPLBACKEND": "Agg",
               "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONDONTWRITEBYTECODE": "1",
               "LESSON20_CONTROL_FD": str(write_fd), "LESSON20_LIMITS": json.dumps(self._rlimits())}
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            pass_fds=(write_fd,), env=env, cwd=str(self.dir) if not self.isolate else "/",
            start_new_session=True)
        os.close(write_fd)
        self.control = os.fdopen(read_fd, "rb", buffering=0)
        self._buffer = b""
        self.out = _Drain(self.proc.stdout, self.limits.max_output_kb * 1024)
        self.err = _Drain(self.proc.stderr, self.limits.max_output_kb * 1024)
        hello = self._wait_line(timeout or self.limits.cpu_seconds, "loading your notebook's code")
        if not hello.get("ready"):
            self._fail("protocol", "the sandbox did not start properly")
        self.problems = hello.get("problems", [])
        self.workdir = workdir
        return self.problems

    def close(self):
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)  # bwrap dies, and with it its whole PID namespace
            except OSError:
                pass
            self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr, self.control):
                try:
                    stream.close()
                except OSError:
                    pass
            self.proc = None
        if getattr(self, "cgroup", None):
            self.cgroup.close()
            self.cgroup = None
        if getattr(self, "dir", None):
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- requests ----

    def request(self, probe: str, spec: dict, timeout: float) -> dict:
        """Run one probe in the sandbox; return its plain-data answer, or raise SandboxError."""
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        self._next_id += 1
        rid = self._next_id
        spec_file = self.dir / "io" / f"spec-{rid}.pt"
        torch.save(spec, spec_file)
        if self.uid is not None:
            os.chown(spec_file, self.uid, self.uid)
        line = json.dumps({"id": rid, "probe": probe, "spec_file": f"{self.workdir}/io/spec-{rid}.pt",
                           "cpu_seconds": int(timeout) + 1}) + "\n"
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except OSError:
            self._fail("crashed", self._death_message())
        reply = self._wait_line(timeout, f"running {probe}")
        if reply.get("id") != rid:
            self._fail("protocol", "the sandbox answered out of turn")
        answer = self.dir / "io" / f"answer-{rid}.pt"  # our own path: never one the sandbox names
        if not answer.is_file() or answer.is_symlink():
            self._fail("protocol", "the sandbox wrote no answer")
        if answer.stat().st_size > self.limits.max_answer_mb * 2**20:
            self._fail("protocol", "the answer was too large to read back")
        try:
            data = torch.load(answer, weights_only=True)  # plain data only: no object the student made
        except Exception as exc:
            self._fail("protocol", f"the answer could not be read as plain data ({type(exc).__name__})")
        finally:
            answer.unlink(missing_ok=True)
            spec_file.unlink(missing_ok=True)
        if not isinstance(data, dict) or "status" not in data:
            self._fail("protocol", "the answer had the wrong shape")
        return data

    # ---- internals ----

    def _pick_uid(self):
        """Root runs submissions under an unprivileged uid of their own (per grading process)."""
        if os.geteuid() != 0 or not shutil.which("setpriv"):
            return None
        return 61000 + os.getpid() % 4000

    def _rlimits(self) -> dict:
        mb = 2**20
        return {"AS": self.limits.memory_mb * mb, "FSIZE": self.limits.tmp_mb * mb, "CORE": 0,
                "NPROC": self.limits.max_processes if self.uid is not None else None}

    def _command(self, control_fd: int):
        python = [sys.executable, "-I"]
        if not self.isolate:
            return python + [str(self.dir / "worker.py"), str(self.dir)], str(self.dir)
        box = "/sandbox"
        cmd = ["bwrap", *_ro_binds(),
               "--ro-bind", str(self.dir), box, "--bind", str(self.dir / "io"), f"{box}/io",
               "--proc", "/proc", "--dev", "/dev",
               "--perms", "1777", "--size", str(self.limits.tmp_mb * 2**20), "--tmpfs", "/tmp",
               "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
               "--die-with-parent", "--new-session", "--chdir", "/tmp"]
        if os.geteuid() != 0:
            cmd.append("--unshare-user")
        if self.uid is not None:
            cmd += ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups", "--no-new-privs"]
        prefix = self.cgroup.enter_command() if self.cgroup else []
        return prefix + cmd + python + [f"{box}/worker.py", box], box

    def _wait_line(self, timeout: float, doing: str) -> dict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail("timeout", f"took longer than {timeout:g} s while {doing}")
            ready, _, _ = select.select([self.control], [], [], min(left, 1.0))
            if ready:
                chunk = self.control.read(65536)
                if not chunk:
                    self._fail("crashed", self._death_message(doing))
                self._buffer += chunk
                if len(self._buffer) > 2**20:
                    self._fail("protocol", "the sandbox flooded its control channel")
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            return json.loads(line)
        except ValueError:
            self._fail("protocol", "the sandbox sent an unreadable message")

    def _death_message(self, doing: str = "running your code") -> str:
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            code = None
        tail = bytes(self.err.kept[-600:]).decode(errors="replace").strip().splitlines()[-1:] if self.err else []
        why = {-9: "it was killed (out of memory, or past its CPU time)", -24: "it ran past its CPU time",
               -11: "it crashed (segmentation fault)", -25: "it wrote a file that was too large"}.get(code)
        text = why or (f"it exited with code {code}" if code is not None else "it stopped answering")
        return f"the Python process running your code ended while {doing}: {text}" + (
            f". Last message: {tail[0][:200]}" if tail and why is None else "")

    def _fail(self, reason: str, message: str):
        if os.environ.get("LESSON20_SANDBOX_DEBUG") and self.proc is not None:
            print(bytes(self.err.kept).decode(errors="replace"), file=sys.stderr)
        self.close()
        raise SandboxError(reason, message)


class SandboxStudent:
    """The checks' `student` backend during grading: probes run in the sandbox, with a time budget per item."""

    context = "sandbox"

    def __init__(self, sandbox: Sandbox, seconds_per_item: float):
        self.sandbox = sandbox
        self.seconds_per_item = seconds_per_item
        self.item = None
        self.spent = {}
        self.failures = {}  # item -> CheckFailure that ended it (timeout, crash): later checks fail fast

    def begin_item(self, item_id: str):
        self.item = item_id

    def run(self, probe: str, **spec) -> dict:
        item = self.item
        if item in self.failures:
            raise self.failures[item]
        left = self.seconds_per_item - self.spent.get(item, 0.0)
        started = time.monotonic()
        try:
            obs = self.sandbox.request(probe, spec, timeout=max(left, 0.5))
        except SandboxError as exc:
            hint = {"timeout": f"This exercise has {self.seconds_per_item:g} s in all: look for an endless loop.",
                    "crashed": "Look for os._exit, sys.exit, or a very large allocation.",
                    }.get(exc.reason, "")
            failure = CheckFailure(f"{probe.replace('_', ' ')}: {exc} {hint}".strip(), exc.reason)
            if exc.reason == "timeout":
                self.failures[item] = failure
            raise failure from None
        finally:
            self.spent[item] = self.spent.get(item, 0.0) + time.monotonic() - started
        if obs["status"] != "ok":
            raise probe_failure(obs, self.context)
        return obs
