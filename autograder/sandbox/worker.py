"""The processes that run submissions' code, inside the sandbox.

A *zygote* imports torch once, then forks one *child* per submission when the grader asks.
The child runs the submission's cells and answers probe requests over four pipes that the
grader made for that submission alone and passed in (requests, replies, stdout, stderr).
Between submissions the zygote kills every other process in the sandbox and empties /tmp,
so nothing of one submission is left for the next. The zygote itself never runs student
code, holds the only channel to the grader that outlives a submission, and is not dumpable,
so a child (same uid) cannot trace it or read its memory.

Protocol (JSON lines; raw torch.save bytes follow a header that gives their size):
  grader -> zygote (unix seqpacket socket): {"cmd": "spawn"} + 4 fds -> {"pid": n}
                                            {"cmd": "reap"} -> {"clean": true, "status": code or null}
  grader -> child (requests pipe): {"cells": [...], "cell_seconds": n} (one line),
                                   then {"id", "probe", "size", "cpu_seconds"} + spec
  child -> grader (replies pipe):  {"cell": i} as each cell starts, {"ready": true, "problems": [...]},
                                   then {"id", "size"} + answer

Imports only the standard library, torch, probes.py (next to this file) and, for the notebook's
own cells, what the student package offers (autograder without its instructor part, made
importable from the folder given). It decides nothing: the grader loads each answer with
weights_only=True and judges it.
"""
import __future__
import ast
import ctypes
import io
import json
import os
import resource
import shutil
import signal
import socket
import sys
import time
import traceback

PR_SET_DUMPABLE = 4


def apply_limits():
    """Lower this process's limits before any student code runs (inherited, and never raised back)."""
    for name, value in json.loads(os.environ.pop("LESSON20_LIMITS", "{}")).items():
        if value is not None:
            resource.setrlimit(getattr(resource, f"RLIMIT_{name}"), (value, value))


def set_dumpable(flag: bool):
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, int(flag), 0, 0, 0)
    except (OSError, AttributeError):
        pass


class Reader:
    """Lines and exact byte counts from a pipe, with no buffer shared with anything else."""

    def __init__(self, fd: int):
        self.fd, self.buffer = fd, b""

    def line(self):
        while b"\n" not in self.buffer:
            chunk = os.read(self.fd, 1 << 20)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return line

    def exact(self, n: int):
        while len(self.buffer) < n:
            chunk = os.read(self.fd, max(1 << 16, n - len(self.buffer)))
            if not chunk:
                return None
            self.buffer += chunk
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data


def write_all(fd: int, data: bytes):
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class CellTimeout(BaseException):
    """Raised into a cell that ran past its time, as nbgrader interrupts one; the next cell still runs."""


def _stop_cell(signum, frame):
    raise CellTimeout()


def load_cells(cells, namespace, describe_exception, cell_seconds=0, progress=lambda index: None,
               zygote=None) -> list:
    """Run the notebook's cells in order, statement by statement; return the errors they raised, as plain data.

    As in Jupyter, a cell stops at its first error and the next cell still runs; a cell that runs
    past `cell_seconds` is stopped. An import the sandbox lacks is skipped rather than stopping
    the cell: the student's kernel had it.
    """
    problems = []

    def record(cell, exc):
        if isinstance(exc, CellTimeout):
            info = {"type": "CellTimeout", "message": f"it ran for more than {cell_seconds:g} s and was stopped",
                    "where": ""}
        else:
            info = describe_exception(exc)
        if isinstance(exc, SyntaxError):  # the parser's own frames say nothing to the student
            info["where"] = f"line {exc.lineno}: {(exc.text or '').strip()}"[:300]
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == cell["label"]]
        line = frames[-1].lineno if frames else getattr(exc, "lineno", None)
        problems.append({"cell": cell["index"], "line": line if isinstance(line, int) else None, **info})

    previous = signal.signal(signal.SIGALRM, _stop_cell)
    for cell in cells:
        progress(cell["index"])
        try:
            tree = ast.parse(cell["source"], cell["label"])
        except SyntaxError as exc:
            record(cell, exc)
            continue
        flags = 0
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                for alias in node.names:
                    flags |= getattr(__future__, alias.name).compiler_flag if hasattr(__future__, alias.name) else 0
        signal.setitimer(signal.ITIMER_REAL, cell_seconds or 0)
        try:
            for node in tree.body:
                try:
                    exec(compile(ast.Module([node], []), cell["label"], "exec", flags=flags, dont_inherit=True),
                         namespace)
                except ImportError:
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        continue
                    raise
        except BaseException as exc:  # the student's SystemExit too: record it, go on with the next cell
            record(cell, exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if zygote is not None and not alive(zygote):  # it killed the zygote, so the sandbox goes down: say where
            os.write(2, f"\ncell {cell['index']} killed the other processes of the sandbox\n".encode())
            os._exit(70)
    signal.signal(signal.SIGALRM, previous)
    return problems[:50]


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


class Shell:
    """Stands in for IPython's shell behind get_ipython(): line magics and !shell commands do nothing (the
    grader neither installs packages nor runs commands); a Python cell magic (%%time) runs its cell."""

    PYTHON_CELL_MAGICS = {"time", "timeit", "capture", "prun"}

    def __init__(self, namespace: dict):
        self.user_ns = namespace

    def run_cell_magic(self, name, line, cell):
        if name in self.PYTHON_CELL_MAGICS:
            exec(compile(cell, f"<%%{name} cell>", "exec"), self.user_ns)

    def getoutput(self, *args, **kwargs):
        return []

    def __getattr__(self, name):  # run_line_magic, system, and whatever else a cell asks of it
        return lambda *args, **kwargs: None


def kernel_namespace() -> dict:
    """What a Jupyter kernel's user namespace starts with: __main__, get_ipython() and display()."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    shell = Shell(namespace)
    namespace["get_ipython"] = lambda: shell
    try:
        from IPython.display import display
        namespace["display"] = display
    except ImportError:
        pass
    return namespace


def child(fds, torch, probes_code):
    """One submission: load its cells, then answer probe requests until the grader closes the pipe."""
    requests, replies, out, err = fds
    zygote = os.getppid()
    for fd, target in ((requests, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    set_dumpable(True)  # for itself and its own children; the zygote stays undumpable
    # keep our own references: student code may rebind torch.save, torch.load, json.dumps or os.write
    save, load, dumps, loads, exec_, getrusage = torch.save, torch.load, json.dumps, json.loads, exec, resource.getrusage
    reader = Reader(0)

    def fresh_probes() -> dict:
        """A new copy of probes.py for each request: whatever the code patched at load time, it was another copy."""
        namespace = {"__name__": "lesson20_probes"}
        exec_(probes_code, namespace)
        return namespace

    sys.stdin = io.StringIO()  # input() gets EOFError, as in a kernel without stdin; fd 0 is the requests pipe
    notebook = loads(reader.line() or b"{}")
    namespace = kernel_namespace()

    def progress(index):  # the grader names the cell that was running if time runs out
        write_all(replies, (dumps({"cell": index}) + "\n").encode())

    problems = load_cells(notebook.get("cells", []), namespace, fresh_probes()["describe_exception"],
                          notebook.get("cell_seconds", 0), progress, zygote)
    write_all(replies, (dumps({"ready": True, "problems": problems}) + "\n").encode())
    while True:
        header = reader.line()
        if header is None:
            return
        request = loads(header)
        data = reader.exact(int(request["size"]))
        if data is None:
            return
        budget = request.get("cpu_seconds")
        if budget:  # CPU time for this request on top of what was used so far
            usage = getrusage(resource.RUSAGE_SELF)
            want = int(usage.ru_utime + usage.ru_stime + budget) + 1
            soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
            try:
                resource.setrlimit(resource.RLIMIT_CPU, (want if hard == resource.RLIM_INFINITY else min(want, hard), hard))
            except (ValueError, OSError):
                pass
        spec = load(io.BytesIO(data), weights_only=True)
        answer = fresh_probes()["run"](namespace, request["probe"], spec)
        if not alive(zygote):  # the code killed the zygote: the sandbox is going down, and this probe did it
            os._exit(70)
        buffer = io.BytesIO()
        save(answer, buffer)
        payload = buffer.getvalue()
        write_all(replies, (dumps({"id": request["id"], "size": len(payload)}) + "\n").encode() + payload)


def reap(isolated: bool, children: dict):
    """Kill every process but this one and the sandbox's init, empty /tmp.

    Returns the exit codes of our children, and whether nothing else is left running."""
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
        if not isolated:
            break
        others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, me)]
        if not others:
            break
        time.sleep(0.005)
    if isolated:
        for entry in os.listdir("/tmp"):
            path = os.path.join("/tmp", entry)
            try:
                shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.unlink(path)
            except OSError:
                pass
        if shutil.which("ipcrm"):  # SysV shared memory, semaphores and queues outlive their processes
            os.spawnv(os.P_WAIT, shutil.which("ipcrm"), ["ipcrm", "--all"])
    return status, not others


# what the lesson's cells import: paid for once, here, rather than by every submission
PRELOADED = ("numpy", "matplotlib", "matplotlib.pyplot", "tqdm.auto", "sklearn.datasets", "IPython.display",
             "ipywidgets", "autograder.lesson", "autograder.plots", "autograder.quiz", "autograder.selfcheck")


def warm_up(torch, probes_code):
    """Pay once, here, for what every submission would otherwise pay for (torch._dynamo comes with optim)."""
    import importlib
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    try:  # the first call pays for scikit-learn's lazy imports and file reads (0.7 s); library code only
        importlib.import_module("sklearn.datasets").load_digits(return_X_y=True)
    except Exception:
        pass
    namespace = {"__name__": "lesson20_probes"}
    exec(probes_code, namespace)
    p = torch.ones(2, requires_grad=True)
    torch.optim.SGD([p], lr=0.1).step()
    torch.optim.Adam([p], lr=0.1)
    torch.nn.utils.clip_grad_norm_([p], 1.0)


def prefer_for_oom_killer():
    """When memory runs out, the OOM killer takes the sandbox (and every child it forks) before the grader."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def zygote(workdir: str, lib: str):
    prefer_for_oom_killer()
    apply_limits()
    sys.path.insert(0, lib)  # the student package (autograder, without its instructor part), as students have it
    import torch
    torch.set_num_threads(1)
    path = os.path.join(workdir, "probes.py")
    with open(path) as f:
        probes_code = compile(f.read(), path, "exec")
    warm_up(torch, probes_code)
    isolated = os.environ.pop("LESSON20_ISOLATED", "") == "1"
    sock = socket.socket(fileno=int(os.environ.pop("LESSON20_ZYGOTE_FD")))
    set_dumpable(False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader ends us with SIGKILL, when it wants to
    children = {}
    sock.send(json.dumps({"ready": True}).encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)  # the grader is gone
        command = json.loads(message).get("cmd")
        if command == "spawn" and len(fds) == 4:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    if not isolated:
                        os.setpgid(0, 0)  # so that reap can kill it and what it starts, and nothing else
                    child(fds, torch, probes_code)
                finally:
                    os._exit(0)
            children[pid] = True
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"pid": pid}).encode())
        elif command == "reap":
            for fd in fds:
                os.close(fd)
            status, clean = reap(isolated, children)
            codes = [status[p] for p in children if p in status]
            children.clear()
            sock.send(json.dumps({"clean": clean, "status": codes[-1] if codes else None}).encode())
        else:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"unknown command {command!r}"}).encode())


if __name__ == "__main__":
    zygote(sys.argv[1], sys.argv[2])
