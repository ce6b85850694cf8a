"""The processes that run submissions' code, inside the sandbox.

A *zygote* imports torch once, then forks one *child* per submission when the grader asks.
The child runs the submission's cells and answers probe requests over four pipes that the
grader made for that submission alone and passed in (requests, replies, stdout, stderr).
Between submissions the zygote kills every other process in the sandbox and empties /tmp,
so nothing of one submission is left for the next. The zygote itself never runs student
code, holds the only channel to the grader that outlives a submission, and is not dumpable,
so a child (same uid) cannot trace it or read its memory.

Protocol (JSON lines; raw torch.save bytes follow a header that gives their size; the framing is
protocol.py's, which is next to this file in the sandbox too):
  grader -> zygote (unix seqpacket socket): {"cmd": "spawn"} + 4 fds -> {"pid": n}
                                            {"cmd": "reap"} -> {"clean": true, "status": code or null}
  grader -> child (requests pipe): {"cells": [...], "cell_seconds": n} (one line),
                                   then {"id", "probe", "size", "cpu_seconds"} + spec
  child -> grader (replies pipe):  {"cell": i} as each cell starts, {"ready": true, "problems": [...]},
                                   then {"id", "size"} + answer

Imports only the standard library, torch, the probes' files (checks/harness.py and probes.py), guard.py and
protocol.py (next to this file)
and, for the notebook's own cells, what the student package offers (autograder without its
instructor part, made importable from the folder given). It decides nothing: the grader loads each answer with
weights_only=True and judges it.
"""
import __future__
import ast
import base64
import contextlib
import ctypes
import hashlib
import hmac
import io
import json
import linecache
import os
import resource
import shutil
import signal
import socket
import sys
import tempfile
import time

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


def write_all(fd: int, data: bytes, write=os.write):
    view = memoryview(data)
    while view:
        view = view[write(fd, view):]


def _tracebacks(tb):
    """The levels of a traceback, outermost first."""
    while tb is not None:
        yield tb
        tb = tb.tb_next


def ipython_source(source: str) -> str:
    """A cell as IPython runs it: magics, `!shell` and `obj?` become get_ipython() calls (IPython's own
    transformer), which the stand-in shell below ignores, but for a Python cell magic (%%time), whose
    body it runs. Without IPython, those lines are blanked, keeping line numbers."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        lines = source.split("\n")
        if lines and lines[0].lstrip().startswith("%%"):
            lines[0] = ""
        return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # what IPython cannot read either is the student's error to see, as written
        return source


class CellTimeout(BaseException):
    """Raised into a cell that ran past its time, as nbgrader interrupts one; the next cell still runs."""


def _stop_cell(signum, frame):
    raise CellTimeout()


def load_cells(cells, namespace, describe_exception, cell_seconds=0, progress=lambda index: None,
               zygote=None, trusted=None) -> list:
    """Run the notebook's cells in order, statement by statement; return the errors they raised, as plain data.

    As in Jupyter, a cell stops at its first error and the next cell still runs; a cell that runs
    past `cell_seconds` is stopped (IPython's transform of magics included: it runs here, on the
    cell's own clock, not in the grader). An import the sandbox lacks is skipped rather than
    stopping the cell: the student's kernel had it. `trusted`: the audit hook's permission to read
    frames, for finding the failing line.
    """
    problems = []
    trusted = trusted if trusted is not None else contextlib.nullcontext()

    def record(cell, exc):
        if isinstance(exc, CellTimeout):
            info = {"type": "CellTimeout", "message": f"it ran for more than {cell_seconds:g} s and was stopped",
                    "where": ""}
        else:
            info = describe_exception(exc)
        if isinstance(exc, SyntaxError):  # the parser's own frames say nothing to the student
            info["where"] = f"line {exc.lineno}: {(exc.text or '').strip()}"[:300]
        with trusted:
            lines = [tb.tb_lineno for tb in _tracebacks(exc.__traceback__) if tb.tb_frame.f_code.co_filename == cell["label"]]
        line = lines[-1] if lines else getattr(exc, "lineno", None)
        problems.append({"cell": cell["index"], "line": line if isinstance(line, int) else None, **info})

    previous = signal.signal(signal.SIGALRM, _stop_cell)
    for cell in cells:
        progress(cell["index"])
        signal.setitimer(signal.ITIMER_REAL, cell_seconds or 0)
        try:
            source = ipython_source(cell["source"])
            # as a kernel keeps each cell's text: inspect.getsource and tracebacks can quote it
            linecache.cache[cell["label"]] = (len(source), None, source.splitlines(True), cell["label"])
            tree = ast.parse(source, cell["label"])
        except BaseException as exc:  # a SyntaxError, or a transform stopped by the cell's timer
            signal.setitimer(signal.ITIMER_REAL, 0)
            record(cell, exc)
            continue
        signal.setitimer(signal.ITIMER_REAL, 0)
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


def kernel_namespace(namespace: dict = None) -> dict:
    """What a Jupyter kernel's user namespace starts with: __main__, get_ipython() and display()."""
    namespace = {} if namespace is None else namespace
    namespace.update({"__name__": "__main__", "__builtins__": __builtins__})
    shell = Shell(namespace)
    namespace["get_ipython"] = lambda: shell
    try:
        from IPython.display import display
        namespace["display"] = display
    except ImportError:
        pass
    return namespace


def guarded_namespaces(torch) -> dict:
    """What the probes and the child's replies rely on: a submission that rebinds any of it is flagged."""
    import io as io_module
    import json.encoder
    import pickle
    import torch.serialization
    return {"builtins": vars(__builtins__) if not isinstance(__builtins__, dict) else __builtins__,
            "sys.modules": sys.modules, "torch": vars(torch), "torch.Tensor": torch.Tensor,
            "torch.nn.Module": torch.nn.Module, "torch.nn.Parameter": torch.nn.Parameter,
            "torch.optim.Optimizer": torch.optim.Optimizer, "torch.serialization": vars(torch.serialization),
            "pickle": vars(pickle), "io": vars(io_module), "os": vars(os), "json": vars(json),
            "json.encoder": vars(json.encoder), "json.JSONEncoder": json.JSONEncoder}


def main_namespace() -> dict:
    """The notebook's namespace, as the __dict__ of a new __main__ module, as in a kernel: the worker
    itself is then not importable by the student's code as __main__."""
    module = type(sys)("__main__")
    sys.modules["__main__"] = module
    return kernel_namespace(module.__dict__)


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


def child(fds, torch, guard, protocol, library_roots, internal_files, isolated=True):
    """One submission: load its cells, then answer probe requests until the grader closes the pipe.

    The grader's first line gives the cells, each cell's time, the probes' files and their SHA-256, a nonce
    and an HMAC key; every message is signed with the key and every reply carries its request's nonce,
    so what the student's code writes to the reply pipe cannot pass for an answer. Before the first cell, an audit hook (guard.py) closes the side doors to
    the grader's code, and a snapshot is taken of what the probes rely on; the probes themselves are
    compiled after the cells have run, from the read-only files whose hashes the grader sent.
    """
    requests, replies, out, err = fds
    zygote = os.getppid()
    for fd, target in ((requests, 0), (out, 1), (err, 2)):
        os.dup2(fd, target)
        os.close(fd)
    for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    set_dumpable(True)  # for itself and its own children; the zygote stays undumpable
    # our own references, taken before any student code: it may rebind module attributes and builtins
    save, load, dumps, loads, exec_ = torch.save, torch.load, json.dumps, json.loads, exec
    getrusage, read, write, sha256 = resource.getrusage, os.read, os.write, hashlib.sha256
    hmac_digest = hmac_function()
    malloc_trim = heap_trimmer()
    reader = protocol.Reader(lambda: read(0, 1 << 20) or None)  # the requests pipe, on fd 0 now
    signed = protocol.signed

    key = [b""]  # the grader's key for this run of the notebook, from its first line
    changed = [lambda: []]  # the integrity check, once the snapshot is taken
    str_, int_ = str, int

    def plain_line(header: dict) -> bytes:
        """The header, without json (which the student's code may have rebound): our own values only, and
        the flag that says why."""
        parts = []
        for name in ("cell", "id"):
            if name in header:
                parts.append('"' + name + '": ' + str_(int_(header[name])))
        if "ready" in header:
            parts.append('"ready": true, "problems": []')
        if "id" in header:
            parts.append('"size": 0')
        parts.append('"nonce": "' + str_(header.get("nonce", "")) + '"')
        parts.append('"flags": ["rebinding what the grader\'s replies rely on"]')
        return ("{" + ", ".join(parts) + "}").encode()

    def send(header: dict, payload: bytes = b""):
        # signed with the grader's key, which no student code can read (see protocol.py)
        if changed[0]():
            line, payload = plain_line(header), b""
        else:
            line = dumps(header).encode()
        write_all(replies, signed(key[0], line, payload, hmac_digest), write)

    sys.stdin = io.StringIO()  # input() gets EOFError, as in a kernel without stdin; fd 0 is the requests pipe
    notebook = loads(reader.line() or b"{}")
    nonce = str(notebook.get("nonce", ""))
    key[0] = bytes.fromhex(notebook.pop("key", ""))
    probes_code = []  # the probes' files, in order (isolation.PROBE_FILES), each as the grader hashed it
    paths, hashes = list(notebook.get("probes") or []), list(notebook.get("probes_sha256") or [])
    for path, digest in zip(paths, hashes):
        with open(path, "rb") as f:
            source = f.read()
        if sha256(source).hexdigest() != digest:
            break
        probes_code.append(compile(source, path, "exec"))
    if not paths or len(probes_code) != len(paths) or len(hashes) != len(paths):
        send({"ready": False, "nonce": nonce, "error": "the probes' files do not match the grader's"})
        return
    put_files(notebook.pop("files", None) or {}, isolated)
    # the reference's definitions of the contract names, bound in for the checks of items whose code calls
    # or is handed another exercise's code (see bind_components)
    components_code = compile(str(notebook.pop("components", "")), COMPONENTS_FILE, "exec")

    def fresh_probes(trusted=None) -> dict:
        """A new copy of the probes for each request, with the objects they hand out from a second copy."""
        props, namespace = {"__name__": "lesson20_props"}, {"__name__": "lesson20_probes"}
        for code in probes_code:
            exec_(code, props)
        for code in probes_code:
            exec_(code, namespace)
        namespace["PROPS"] = props
        if trusted is not None:
            namespace["TRUSTED"] = props["TRUSTED"] = trusted
        return namespace

    namespace = main_namespace()
    trusted, take_flags, checking = guard.install(library_roots, internal_files)
    changed[0] = guard.integrity_check(guarded_namespaces(torch))
    describe = fresh_probes(trusted)["describe_exception"]

    def flags() -> list:
        try:
            return take_flags() + [f"rebinding {name}, which the grader relies on" for name in changed[0]()]
        except BaseException:  # the check itself was broken: that too is tampering
            return ["breaking the grader's own checks"]

    def progress(index):  # the grader names the cell that was running if time runs out
        send({"cell": index})

    problems = load_cells(notebook.get("cells", []), namespace, describe, notebook.get("cell_seconds", 0),
                          progress, zygote, trusted)
    with trusted:  # freed heap memory goes back to the system: the grader's memory baseline holds no cache
        malloc_trim()
    checking()  # the grader's probes run from now on: reading frames or the garbage collector is flagged
    send({"ready": True, "nonce": nonce, "problems": problems, "flags": flags()})
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
        probes = fresh_probes(trusted)
        components = {"__name__": "lesson20_reference"}
        bind = [str(name) for name in request.get("bind") or []]
        if bind:
            try:
                exec_(components_code, components)
            except BaseException:  # the notebook broke what the reference imports: its own code is used
                bind = []
        restore = bind_components(namespace, components, bind)
        try:
            answer = probes["run"](namespace, request["probe"], spec)
        finally:
            restore()
        if not alive(zygote):  # the code killed the zygote: the sandbox is going down, and this probe did it
            os._exit(70)
        reply = {"id": request["id"], "nonce": str(request.get("nonce", "")), "flags": flags()}
        if reply["flags"]:  # what would write the answer may be the student's now: send no answer
            send({**reply, "size": 0})
            continue
        buffer = io.BytesIO()
        save(answer, buffer)
        payload = buffer.getvalue()
        del answer, buffer
        with trusted:
            malloc_trim()
        send({**reply, "size": len(payload)}, payload)


def put_files(files: dict, isolated: bool):
    """The files handed in beside the notebook, read-only, in the notebook's working folder (the sandbox's
    private /tmp; a new temporary folder when the sandbox is not isolated), which goes first on sys.path so
    that `import helpers` finds helpers.py, as in a kernel started beside it. Nothing is compiled to .pyc."""
    sys.dont_write_bytecode = True
    if not files:
        return
    folder = os.getcwd() if isolated else tempfile.mkdtemp(prefix="lesson20-files-")
    for name, encoded in files.items():
        parts = str(name).split("/")
        if any(part in ("", ".", "..") for part in parts):
            continue
        path = os.path.join(folder, *parts)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        if os.path.lexists(path):
            os.unlink(path)
        with open(path, "wb") as f:
            f.write(base64.b64decode(encoded))
        os.chmod(path, 0o444)
    os.chdir(folder)
    sys.path.insert(0, folder)


COMPONENTS_FILE = "<the reference's code>"  # tracebacks skip its lines, as they skip the probes'


def bind_components(namespace: dict, components: dict, names: list):
    """Put the reference's `names` (from `components`) in the notebook's namespace for one request; return
    the function that puts the notebook's own back.

    The student's code looks these names up when it runs, so a step that calls model_grads_to_master_grads
    calls the reference's. A class of the notebook whose base is one of them (DynamicLossScaler deriving
    from the notebook's StaticLossScaler) derives from the reference's for the request: what it inherits is
    graded in its own item. Only plain classes (metaclass `type`) are touched, through type's own
    descriptors, so no code of the student's runs here.
    """
    missing = object()
    saved = {name: namespace.get(name, missing) for name in names if name in components}
    replaced = {id(old): components[name] for name, old in saved.items() if old is not missing}
    bases = type.__dict__["__bases__"]
    rebased = []
    for value in list(namespace.values()):
        if type(value) is not type or any(value is components.get(name) for name in saved):
            continue
        old = bases.__get__(value)
        new = tuple(replaced.get(id(b), b) for b in old)
        if any(a is not b for a, b in zip(new, old)):
            try:
                bases.__set__(value, new)
                rebased.append((value, old))
            except TypeError:  # a layout the reference's class cannot stand in for: leave it as it is
                pass
    for name in saved:
        namespace[name] = components[name]

    def restore():
        for value, old in rebased:
            try:
                bases.__set__(value, old)
            except TypeError:
                pass
        for name, old in saved.items():
            if old is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = old
    return restore


# where a submission could leave something for the next one: the private /tmp (also the notebook's
# working folder) and /dev/shm; everything else in the sandbox is read-only to it
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
        if shutil.which("ipcrm"):  # SysV shared memory, semaphores and queues outlive their processes
            os.spawnv(os.P_WAIT, shutil.which("ipcrm"), ["ipcrm", "--all"])
        others = others or leftovers(keep)
    return status, not others


# what the lesson's cells import: paid for once, here, rather than by every submission
PRELOADED = ("numpy", "matplotlib", "matplotlib.pyplot", "tqdm.auto", "sklearn.datasets", "IPython.display",
             "ipywidgets", "autograder.lesson", "autograder.plots", "autograder.quiz", "autograder.selfcheck",
             "IPython.core.inputtransformer2", "pickle", "torch.serialization")


def warm_up(torch, probe_paths: list):
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
    for path in probe_paths:
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), namespace)
    ipython_source("%time x = 1")
    p = torch.ones(2, requires_grad=True)
    torch.optim.SGD([p], lr=0.1).step()
    torch.optim.Adam([p], lr=0.1)
    torch.nn.utils.clip_grad_norm_([p], 1.0)


def load_module(path: str, name: str):
    """A file of the grader's (guard.py, protocol.py) as a module object of its own, kept out of
    sys.modules: no student code finds it by name (see guard.py)."""
    module = type(sys)(name)
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    return module


def prefer_for_oom_killer():
    """When memory runs out, the OOM killer takes the sandbox (and every child it forks) before the grader."""
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass


def zygote(probe_paths: list, guard_path: str, lib: str):
    prefer_for_oom_killer()
    apply_limits()
    sys.path.insert(0, lib)  # the student package (autograder, without its instructor part), as students have it
    import torch
    torch.set_num_threads(1)
    warm_up(torch, probe_paths)
    guard = load_module(guard_path, "lesson20_guard")
    protocol_path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "protocol.py")
    protocol = load_module(protocol_path, "lesson20_protocol")
    library_roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr/lib", "/usr/local/lib",
                     os.path.join(lib, "autograder")]
    internal_files = [*probe_paths, guard_path, protocol_path, os.path.abspath(__file__)]
    isolated = os.environ.pop("LESSON20_ISOLATED", "") == "1"
    keep = mounts_within(WRITABLE) if isolated else frozenset()
    if isolated:  # what warming up wrote (matplotlib's cache) is not there for the first submission either
        for folder in WRITABLE:
            empty(folder, keep)
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
                    child(fds, torch, guard, protocol, library_roots, internal_files, isolated)
                finally:
                    os._exit(0)
            children[pid] = True
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"pid": pid}).encode())
        elif command == "reap":
            for fd in fds:
                os.close(fd)
            status, clean = reap(isolated, children, keep)
            codes = [status[p] for p in children if p in status]
            children.clear()
            sock.send(json.dumps({"clean": clean, "status": codes[-1] if codes else None}).encode())
        else:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"unknown command {command!r}"}).encode())


if __name__ == "__main__":
    zygote(sys.argv[1].split(os.pathsep), sys.argv[2], sys.argv[3])
