"""The notebook's cells as a kernel runs them: IPython's transform of magics, a stand-in for IPython's shell,
the kernel's namespace, the files handed in beside the notebook, and the cell loader.

Only the standard library (and IPython, where the sandbox has it): worker.py loads this file by path inside
the sandbox, before any student code.
"""
import __future__
import ast
import base64
import linecache
import os
import signal
import sys
import tempfile
import types


# An exception's traceback and a traceback's frames, read through the C-level descriptors bound now, before any
# student code: an exception class may make __traceback__ a property, and a traceback-like object's tb_frame
# would run its code inside the trusted section that reads it.
_EXCEPTION_TRACEBACK = BaseException.__dict__["__traceback__"].__get__
_TRACEBACK = types.TracebackType
_TB_FRAME, _TB_NEXT, _TB_LINENO = (_TRACEBACK.__dict__[name].__get__ for name in ("tb_frame", "tb_next", "tb_lineno"))
_FRAME_CODE = types.FrameType.__dict__["f_code"].__get__
_CODE_FILENAME, _CODE_NAME = (types.CodeType.__dict__[name].__get__ for name in ("co_filename", "co_name"))


def exception_traceback(exc):
    """The traceback the interpreter set on `exc`, whatever its class says __traceback__ is; None for a
    non-exception."""
    return _EXCEPTION_TRACEBACK(exc) if isinstance(exc, BaseException) else None


def traceback_entries(tb, trusted, limit: int = 200) -> list:
    """(file name, line, function) of each level of a real traceback, outermost first; [] for anything else.
    Reading frames is what the audit hook denies student code, so this runs under `trusted`, where it calls
    only the descriptors above."""
    entries = []
    with trusted:
        while type(tb) is _TRACEBACK and len(entries) < limit:
            code = _FRAME_CODE(_TB_FRAME(tb))
            entries.append((_CODE_FILENAME(code), _TB_LINENO(tb), _CODE_NAME(code)))
            tb = _TB_NEXT(tb)
    return entries


def strip_magics(source: str) -> str:
    """Blank out IPython-only lines (%magic, !shell, %%cell magic), keeping line numbers: the one way the
    project reads a cell as plain Python (here without IPython, and for the reference's cells)."""
    lines = source.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        lines[0] = ""
    return "\n".join("" if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def ipython_source(source: str) -> str:
    """A cell as IPython runs it: magics, `!shell` and `obj?` become get_ipython() calls (IPython's own
    transformer), which the stand-in shell below ignores, but for a Python cell magic (%%time), whose
    body it runs. Without IPython, those lines are blanked (strip_magics)."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:
        return strip_magics(source)
    try:
        return TransformerManager().transform_cell(source)
    except Exception:  # what IPython cannot read either is the student's error to see, as written
        return source


# the compiler flags a `from __future__ import` sets; IPython's CachingCompiler keeps them for every later cell
FUTURE_FLAGS = sum(getattr(__future__, name).compiler_flag for name in __future__.all_feature_names)


class CellTimeout(BaseException):
    """Raised into a cell that ran past its time, as nbgrader interrupts one; the next cell still runs."""


def _stop_cell(signum, frame):
    raise CellTimeout()


def load_cells(cells, namespace, describe_exception, cell_seconds=0, progress=lambda index: None,
               zygote_alive=None, trusted=None, shell=None) -> list:
    """Run the notebook's cells in order, statement by statement; return the errors they raised, as plain data.

    As in Jupyter, a cell stops at its first error and the next cell still runs; a cell that runs
    past `cell_seconds` is stopped (IPython's transform of magics included: it runs here, on the
    cell's own clock, not in the grader). An import the sandbox lacks is skipped rather than
    stopping the cell: the student's kernel had it. zygote_alive: whether the zygote still runs. `trusted`: the audit hook's permission to read
    frames, for finding the failing line. A `from __future__ import` holds for the statements after it and for
    every later cell, as in IPython (its CachingCompiler keeps the flags a compiled statement set).
    """
    problems = []
    flags = 0  # the __future__ flags in force, carried from cell to cell
    trusted = trusted if trusted is not None else _Untrusted()

    def record(cell, exc):
        if isinstance(exc, CellTimeout):
            info = {"type": "CellTimeout", "message": f"it ran for more than {cell_seconds:g} s and was stopped",
                    "where": ""}
        else:
            info = describe_exception(exc)
        if isinstance(exc, SyntaxError):  # the parser's own frames say nothing to the student
            info["where"] = f"line {exc.lineno}: {(exc.text or '').strip()}"[:300]
        lines = [line for name, line, _ in traceback_entries(exception_traceback(exc), trusted) if name == cell["label"]]
        line = lines[-1] if lines else getattr(exc, "lineno", None)
        problems.append({"cell": cell["index"], "line": line if isinstance(line, int) else None, **info})

    previous = signal.signal(signal.SIGALRM, _stop_cell)
    for cell in cells:
        progress(cell["index"])
        if shell is not None:
            shell.cell = cell["index"]
        signal.setitimer(signal.ITIMER_REAL, cell_seconds or 0)
        try:
            source = ipython_source(cell["source"])
            # as a kernel keeps each cell's text: inspect.getsource and tracebacks can quote it
            linecache.cache[cell["label"]] = (len(source), None, source.splitlines(True), cell["label"])
            tree = compile(source, cell["label"], "exec", flags | ast.PyCF_ONLY_AST, dont_inherit=True)
        except BaseException as exc:  # a SyntaxError, or a transform stopped by the cell's timer
            signal.setitimer(signal.ITIMER_REAL, 0)
            record(cell, exc)
            continue
        signal.setitimer(signal.ITIMER_REAL, cell_seconds or 0)
        try:
            for node in tree.body:
                try:
                    code = compile(ast.Module([node], []), cell["label"], "exec", flags=flags, dont_inherit=True)
                    flags |= code.co_flags & FUTURE_FLAGS
                    if shell is not None:
                        shell.flags = flags  # for the Python cell magics (%%time) it runs
                    exec(code, namespace)
                except ImportError:
                    if isinstance(node, (ast.Import, ast.ImportFrom)):
                        continue
                    raise
        except BaseException as exc:  # the student's SystemExit too: record it, go on with the next cell
            record(cell, exc)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if zygote_alive is not None and not zygote_alive():  # it killed the zygote, so the sandbox goes down: say where
            os.write(2, f"\ncell {cell['index']} killed the other processes of the sandbox\n".encode())
            os._exit(70)
    signal.signal(signal.SIGALRM, previous)
    for skipped in (shell.skipped if shell is not None else [])[:20]:
        problems.append({"cell": skipped["cell"], "line": None, "type": "MagicSkipped",
                         "message": f"{skipped['what']} was not run: {skipped['why']}", "where": ""})
    return problems[:50]


class Shell:
    """Stands in for IPython's shell behind get_ipython(), within the sandbox's limits: the magics that change
    what later cells see run as IPython runs them (%%writefile, %%capture, %%bash and %%script, %cd, %env,
    %run, %time and the Python cell magics); `!shell` lines and the magics that need what the sandbox denies
    (installing packages, the network) or that change nothing later cells see are skipped, and each skipped
    one is recorded (`skipped`) for the feedback."""

    PYTHON_CELL_MAGICS = {"time", "timeit", "prun"}
    SHELLS = {"bash": ["/bin/bash"], "sh": ["/bin/sh"], "script": None}
    DENIED = {"pip": "installing packages", "conda": "installing packages", "mamba": "installing packages",
              "system": "running shell commands", "sx": "running shell commands"}
    QUIET = {"matplotlib", "load_ext", "autoreload", "config", "timeit", "who", "whos", "pinfo", "pinfo2",
             "precision", "xmode", "pdb", "debug", "prun", "lsmagic", "magic", "reset_selective", "history"}

    def __init__(self, namespace: dict):
        self.user_ns = namespace
        self.cell, self.skipped = None, []
        self.flags = 0  # the notebook's __future__ flags so far (load_cells keeps them here)

    def _compile(self, source, label):
        return compile(source, label, "exec", flags=self.flags, dont_inherit=True)

    def skip(self, what: str, why: str):
        self.skipped.append({"cell": self.cell, "what": what[:120], "why": why})

    def run_cell_magic(self, name, line, cell):
        if name in self.PYTHON_CELL_MAGICS:
            exec(self._compile(cell, f"<%%{name} cell>"), self.user_ns)
        elif name == "writefile":
            args = line.split()
            append = "-a" in args or "--append" in args
            target = next((a for a in args if not a.startswith("-")), None)
            if target is None:
                raise ValueError("%%writefile needs a file name")
            with open(os.path.expanduser(target.strip("'\"")), "a" if append else "w") as f:
                f.write(cell)
            print(f"{'Appending to' if append else 'Writing'} {target}")
        elif name == "capture":
            self._capture(line, cell)
        elif name in self.SHELLS:
            command = self.SHELLS[name] or line.split()[:1]
            if not command:
                raise ValueError("%%script needs a program, as in %%script bash")
            import subprocess
            done = subprocess.run(command, input=cell, text=True, capture_output=True)
            print(done.stdout, end="")
            print(done.stderr, end="", file=sys.stderr)
        else:
            self.skip(f"%%{name}", "the grader runs no such cell magic")

    def _capture(self, line, cell):
        import contextlib
        import io
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            exec(self._compile(cell, "<%%capture cell>"), self.user_ns)
        name = next((a for a in line.split() if not a.startswith("-")), None)
        if name:
            try:
                from IPython.utils.capture import CapturedIO
                self.user_ns[name] = CapturedIO(out, err, [])
            except ImportError:
                self.user_ns[name] = out.getvalue()

    def run_line_magic(self, name, line, _stack_depth=None):
        if name == "cd":
            os.chdir(os.path.expanduser(line.strip().strip("'\"") or "~"))
        elif name in ("env", "set_env"):
            key, _, value = line.strip().replace("=", " ", 1).partition(" ")
            if key and value:
                os.environ[key] = value.strip()
            return dict(os.environ) if not key else os.environ.get(key)
        elif name == "run":
            self._run(line)
        elif name == "time":
            exec(self._compile(line, "<%time line>"), self.user_ns)
        elif name in self.DENIED:
            self.skip(f"%{name} {line}", f"the grader's sandbox does not allow {self.DENIED[name]}")
        elif name not in self.QUIET:
            self.skip(f"%{name} {line}", "the grader runs no such line magic")

    def _run(self, line):
        """%run [-i] file.py [args]: the file as __main__, then its names in the notebook's namespace."""
        import runpy
        import shlex
        args = shlex.split(line)
        inside = "-i" in args
        args = [a for a in args if not a.startswith("-")]
        if not args:
            raise ValueError("%run needs a file")
        saved = sys.argv
        sys.argv = args
        try:
            if inside:
                with open(args[0]) as f:
                    exec(compile(f.read(), args[0], "exec"), self.user_ns)
            else:
                found = runpy.run_path(args[0], run_name="__main__")
                self.user_ns.update({k: v for k, v in found.items() if not k.startswith("__")})
        finally:
            sys.argv = saved

    def system(self, command, *args, **kwargs):
        self.skip(f"!{command}", "the grader runs no shell commands (and has no network)")

    def getoutput(self, command, *args, **kwargs):
        self.skip(f"!{command}", "the grader runs no shell commands (and has no network)")
        return []

    def __getattr__(self, name):  # whatever else a cell asks of it
        return lambda *args, **kwargs: None


def kernel_namespace(namespace: dict = None) -> dict:
    """What a Jupyter kernel's user namespace starts with: __main__, get_ipython() and display()."""
    namespace = {} if namespace is None else namespace
    namespace.update({"__name__": "__main__", "__builtins__": __builtins__})
    shell = Shell(namespace)
    namespace["get_ipython"] = get_ipython = lambda: shell  # noqa: E731
    get_ipython.shell = shell  # for the cell loader, taken before any student code
    try:
        from IPython.display import display
        namespace["display"] = display
    except ImportError:
        pass
    return namespace


def main_namespace() -> dict:
    """The notebook's namespace, as the __dict__ of a new __main__ module, as in a kernel: the worker
    itself is then not importable by the student's code as __main__."""
    module = type(sys)("__main__")
    sys.modules["__main__"] = module
    return kernel_namespace(module.__dict__)


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


def put_files(files: dict, isolated: bool):
    """The files handed in beside the notebook, read-only, in the notebook's working folder (the sandbox's
    private /tmp; a new temporary folder when the sandbox is not isolated). The working folder comes first on
    sys.path, as "" does in a kernel, so that `import helpers` finds helpers.py beside the notebook, or one a
    %%writefile cell wrote (after a %cd, in the new folder). Nothing is compiled to .pyc."""
    sys.dont_write_bytecode = True
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
    sys.path.insert(0, "")


class _Untrusted:
    """No permission to lift: where there is no audit hook, reading frames needs none."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
