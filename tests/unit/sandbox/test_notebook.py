"""autograder.sandbox.notebook: the cells as a kernel runs them (the child itself runs in tests/unit/sandbox/test_session.py)."""
import pytest

from autograder.sandbox.notebook import ipython_source


def test_the_sandbox_transforms_magics_itself():
    """IPython's transform runs in the sandbox, on the cell's clock, not in the grader."""
    assert ipython_source("%matplotlib inline\nx = 1").splitlines() == [
        "get_ipython().run_line_magic('matplotlib', 'inline')", "x = 1"]


def run_cells(tmp_path, monkeypatch, *sources):
    """The cells, run as the child runs them (IPython's transform, the stand-in shell), in tmp_path."""
    import sys

    from autograder.sandbox.notebook import kernel_namespace, load_cells
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    namespace = kernel_namespace({})
    cells = [{"index": i, "label": f"<cell {i}>", "source": s} for i, s in enumerate(sources)]
    problems = load_cells(cells, namespace, lambda exc: {"type": type(exc).__name__, "message": str(exc), "where": ""},
                          shell=namespace["get_ipython"].shell)
    return namespace, problems


def test_magics_that_change_what_later_cells_see_run_as_in_ipython(tmp_path, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "helper_script.py").write_text("RAN = 42\n")
    namespace, problems = run_cells(
        tmp_path, monkeypatch,
        "%%writefile mp_utils_lesson20.py\nSCALE = 1024.0\n",
        "import mp_utils_lesson20\nscale = mp_utils_lesson20.SCALE",
        "%%capture out\nprint('hidden')",
        "%%bash\necho from-bash > from_bash.txt",
        "text = open('from_bash.txt').read().strip()",
        "%env LESSON20_TEST_VAR=on\nimport os\nenv = os.environ['LESSON20_TEST_VAR']",
        "%run helper_script.py",
        "%time timed = 3",
        "%cd sub\nimport os\nwhere = os.path.basename(os.getcwd())")
    assert problems == [], problems
    assert namespace["scale"] == 1024.0 and namespace["text"] == "from-bash" and namespace["env"] == "on"
    assert namespace["RAN"] == 42 and namespace["timed"] == 3 and namespace["where"] == "sub"
    assert "hidden" in str(namespace["out"])


def test_shell_lines_and_installs_are_skipped_and_said(tmp_path, monkeypatch):
    namespace, problems = run_cells(tmp_path, monkeypatch, "!pip install tqdm\nx = 1", "%pip install numpy",
                                    "%matplotlib inline\ny = 2", "files = !ls")
    assert namespace["x"] == 1 and namespace["y"] == 2 and namespace["files"] == []
    said = [(p["cell"], p["type"], p["message"].split(" was not run")[0]) for p in problems]
    assert said == [(0, "MagicSkipped", "!pip install tqdm"), (1, "MagicSkipped", "%pip install numpy"),
                    (3, "MagicSkipped", "!ls")], problems
    assert "installing packages" in problems[1]["message"]


def test_magics_are_blanked_keeping_line_numbers():
    from autograder.sandbox.notebook import strip_magics
    assert strip_magics("%%time\nx = 1\n%matplotlib inline\n!pip list") == "\nx = 1\n\n"


IPYTHON_RUNNER = """
import json, sys
from IPython.core.interactiveshell import InteractiveShell
cells, names, out = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
shell = InteractiveShell.instance()
errors = []
for source in cells:
    result = shell.run_cell(source, store_history=True)
    error = result.error_before_exec or result.error_in_exec
    errors.append(type(error).__name__ if error is not None else None)
json.dump({"errors": errors, "values": {n: repr(shell.user_ns.get(n)) for n in names}}, open(out, "w"))
"""


def in_ipython(tmp_path, cells, names) -> dict:
    """What IPython's own run_cell makes of the cells (the oracle): each cell's error type, and the names' reprs."""
    import json
    import subprocess
    import sys
    out = tmp_path / "ipython.json"
    subprocess.run([sys.executable, "-c", IPYTHON_RUNNER, json.dumps(cells), json.dumps(names), str(out)],
                   cwd=tmp_path, check=True, capture_output=True, timeout=120)
    return json.loads(out.read_text())


def in_the_grader(tmp_path, monkeypatch, cells, names) -> dict:
    namespace, problems = run_cells(tmp_path, monkeypatch, *cells)
    raised = {p["cell"]: p["type"] for p in problems}
    return {"errors": [raised.get(i) for i in range(len(cells))],
            "values": {n: repr(namespace.get(n)) for n in names}}


FUTURE_CELLS = [
    "from __future__ import annotations\nimport torch",
    # an annotation naming what was never imported: only postponed evaluation lets the def run
    "def unscale_(params: Iterable[torch.Tensor]) -> bool:\n    return True\nann = dict(unscale_.__annotations__)",
    "class Scaler:\n    def copy(self) -> Scaler:\n        return Scaler()\nann_method = dict(Scaler.copy.__annotations__)",
    "%%time\ndef timed(x: NotDefinedEither): pass\nann_magic = dict(timed.__annotations__)",
]


def test_a_future_import_holds_for_later_cells_as_in_ipython(tmp_path, monkeypatch):
    """IPython's CachingCompiler keeps the flags of `from __future__ import annotations` for every later cell; so
    does the grader: annotations stay strings, and a name they use need not exist."""
    names = ["ann", "ann_method", "ann_magic"]
    want = in_ipython(tmp_path, FUTURE_CELLS, names)
    assert want["errors"] == [None] * len(FUTURE_CELLS), want  # the oracle ran them all
    assert in_the_grader(tmp_path, monkeypatch, FUTURE_CELLS, names) == want


def test_a_future_import_holds_from_its_own_statement_on(tmp_path, monkeypatch):
    """Within a cell, statement by statement as IPython runs it: a def above the import is evaluated eagerly."""
    cells = ["def eager_above(a: Missing): pass\nfrom __future__ import annotations",
             "before = 1\nfrom __future__ import annotations\ndef late(b: Missing): pass\nann = dict(late.__annotations__)"]
    names = ["before", "ann"]
    want = in_ipython(tmp_path, cells, names)
    assert want["errors"] == ["NameError", None], want
    assert in_the_grader(tmp_path, monkeypatch, cells, names) == want


@pytest.mark.parametrize("cells, error", [
    (["1 + 1", "shown = _"], "NameError"),                                         # no output history
    (["async def three():\n    return 3", "got = await three()"], "SyntaxError"),  # no autoawait
])
def test_the_differences_from_ipython_the_readme_lists(tmp_path, monkeypatch, cells, error):
    """What docs/grading-design.md says the cell runner still does differently from IPython's run_cell: IPython runs these."""
    assert in_ipython(tmp_path, cells, [])["errors"] == [None, None]
    assert in_the_grader(tmp_path, monkeypatch, cells, [])["errors"] == [None, error]
