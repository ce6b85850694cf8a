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
               zygote_alive=None, trusted=None) -> list:
    """Run the notebook's cells in order, statement by statement; return the errors they raised, as plain data.

    As in Jupyter, a cell stops at its first error and the next cell still runs; a cell that runs
    past `cell_seconds` is stopped (IPython's transform of magics included: it runs here, on the
    cell's own clock, not in the grader). An import the sandbox lacks is skipped rather than
    stopping the cell: the student's kernel had it. zygote_alive: whether the zygote still runs. `trusted`: the audit hook's permission to read
    frames, for finding the failing line.
    """
    problems = []
    trusted = trusted if trusted is not None else _Untrusted()

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
        if zygote_alive is not None and not zygote_alive():  # it killed the zygote, so the sandbox goes down: say where
            os.write(2, f"\ncell {cell['index']} killed the other processes of the sandbox\n".encode())
            os._exit(70)
    signal.signal(signal.SIGALRM, previous)
    return problems[:50]


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


class _Untrusted:
    """No permission to lift: where there is no audit hook, reading frames needs none."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False
