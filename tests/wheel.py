"""The wheel and a student's own install of it, built once for the whole run (a plugin of tests/conftest.py).

`dist` (tests/integration/test_wheel.py, tests/browser/test_first_run.py) and `student_venv`
(test_first_run.py) are session fixtures: pytest runs a module's browser tests apart from its other tests
(pytest-playwright parametrizes them by browser), so a module fixture would be built again for each group,
and a fixture imported into a second module is built again there.
"""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import ROOT


def fresh_shell_env() -> dict:
    """The environment of `make lesson` typed at a shell: not a sub-make of `make test`."""
    return {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}


def student_env() -> dict:
    """A student's shell: nothing that would point Python at the repository or at this venv."""
    return {k: v for k, v in fresh_shell_env().items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}


def source_tree(dest: Path) -> Path:
    """The files a fresh clone would have, plus uncommitted work: never the venv or old builds."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True)
    if listed.returncode == 0:
        for name in filter(None, listed.stdout.decode().split("\0")):
            if (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:  # not a git checkout
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "test-artifacts"))
    return dest


@pytest.fixture(scope="session")
def dist(tmp_path_factory):
    """{"wheel": path, "sdist": path} built by `python -m build` from a copy of the repository."""
    pytest.importorskip("build", reason="the `build` package is needed: pip install build")
    base = tmp_path_factory.mktemp("wheel")
    src = source_tree(base / "src")
    out = base / "dist"
    attempts = [[], ["--no-isolation", "--skip-dependency-check"]]  # the second needs no package index
    for extra in attempts:
        done = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), *extra, str(src)],
                              capture_output=True, text=True, timeout=600)
        if done.returncode == 0:
            break
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return {"wheel": next(out.glob("*.whl")), "sdist": next(out.glob("*.tar.gz")), "base": base}


@pytest.fixture(scope="session")
def student_venv(dist):
    """docs/instructors.md, "Handing out the course": a fresh venv, `pip install torch==2.13.0`, then the wheel.

    torch==2.13.0 exactly: on the course machines that is a local CPU wheel; any other request
    downloads a CUDA build of several GB."""
    python3 = shutil.which("python3") or sys.executable
    venv = dist["base"] / "lesson20-venv"
    env = student_env()
    for step in ([python3, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "torch==2.13.0"],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(dist["wheel"])]):
        done = subprocess.run(step, env=env, cwd=dist["base"], capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{' '.join(step)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return venv
