"""autograder.sandbox.notebook: the cells as a kernel runs them (the child itself runs in tests/unit/sandbox/test_session.py)."""
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
