"""Real-browser fixtures: a private Jupyter server per test, Debian's Chromium, a screenshot per test.

Each test gets `jupyter(...)`, which starts JupyterLab or Notebook 7 on 127.0.0.1 with its own token,
root folder and config, and `page` (pytest-playwright) in a fresh browser context. At teardown the
page is saved to test-artifacts/browser/<test name>.png (the server's log beside it), then the
servers are stopped by PID. Playwright's own browser download does not work on the course machines,
so the tests drive Debian's Chromium, and skip where it is not installed.
"""
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.system_packages import CHROMIUM, chromium_present

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "browser"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ISOLATED_DIRS = ("JUPYTER_CONFIG_DIR", "JUPYTER_RUNTIME_DIR", "JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR")
# user settings every server starts with: no news pop-up, no update check (there is no network)
SETTINGS = {"@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False}}


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    """Debian's Chromium, with the flags that work headless as root in a container."""
    if not chromium_present():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium) "
                    "to run the browser tests")
    return {**browser_type_launch_args, "executable_path": str(CHROMIUM), "args": CHROMIUM_ARGS}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args):
    return {**browser_context_args, "viewport": {"width": 1400, "height": 1000}}


@pytest.fixture(scope="session")
def student_notebook() -> Path:
    return REPO / "lessons" / "lesson20" / "lesson20.ipynb"


@pytest.fixture(scope="session")
def instructor_notebook() -> Path:
    """The student notebook with the reference code and model answers filled in."""
    return REPO / "solutions" / "lesson20" / "lesson20.ipynb"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def jupyter_command(app: str):
    """The command of a plain test server: `command(port, token, root_dir)` -> argv."""
    module = {"lab": "jupyterlab", "notebook": "notebook"}[app]
    return lambda port, token, root_dir: [
        sys.executable, "-m", module, "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root_dir}"]


class JupyterServer:
    """One JupyterLab (app="lab") or Notebook 7 (app="notebook") server, private to a test.

    `command(port, token, root_dir)` starts it some other way (`make lesson`, a student's venv); the
    server runs in a process group of its own, which `stop` ends, wrappers such as make included."""

    def __init__(self, app: str, root_dir: Path, cwd: Path, home: Path, log_path: Path, command=None, env=None):
        self.root_dir, self.log_path = Path(root_dir), Path(log_path)
        self.port, self.token = free_port(), secrets.token_hex(16)
        env = dict(os.environ if env is None else env)
        for name in ISOLATED_DIRS:
            env[name] = str(home / name.lower())
            os.makedirs(env[name], exist_ok=True)
        for plugin, values in SETTINGS.items():
            path = Path(env["JUPYTERLAB_SETTINGS_DIR"]) / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        argv = (command or jupyter_command(app))(self.port, self.token, self.root_dir)
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "w") as log:
            self.process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True)
        self._wait_ready()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}/{path}?token={self.token}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def _wait_ready(self, timeout: float = 60.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter exited with {self.process.returncode}:\n{self.log()[-3000:]}")
            try:
                with urllib.request.urlopen(self.url("api/status"), timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"jupyter did not answer /api/status within {timeout:.0f} s:\n{self.log()[-3000:]}")

    def stop(self):
        """SIGTERM to its process group (the server shuts its kernels down), SIGKILL if it hangs."""
        group = self.process.pid
        if self.process.poll() is None:
            os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while self._group_alive(group) and time.monotonic() < deadline:
            time.sleep(0.1)
        if self._group_alive(group):
            os.killpg(group, signal.SIGKILL)
        self.process.wait()

    def _group_alive(self, group: int) -> bool:
        self.process.poll()  # reap the leader, or its zombie would count
        try:
            os.killpg(group, 0)
            return True
        except ProcessLookupError:
            return False


@pytest.fixture
def jupyter_server(tmp_path: Path, request):
    """Start a server: `jupyter_server("lab", notebooks={"lesson20.ipynb": source_path})`; no browser needed.

    The notebooks are copied into a fresh root (running a notebook changes it, and Lab autosaves).
    `root_dir` and `cwd` serve an existing folder instead (the instructor's grading output).
    `command` and `env` start it another way (see JupyterServer). Servers stop at teardown.
    """
    servers = []

    def start(app: str = "lab", notebooks: dict = None, root_dir: Path = None, cwd: Path = None,
              command=None, env: dict = None) -> JupyterServer:
        if root_dir is None:
            root_dir = tmp_path / f"root{len(servers)}"
            root_dir.mkdir()
            for name, source in (notebooks or {}).items():
                shutil.copyfile(source, root_dir / name)
        home = tmp_path / f"jupyter-home{len(servers)}"
        log = ARTIFACTS / f"{request.node.originalname}.server{len(servers)}.log"
        server = JupyterServer(app, root_dir, cwd or root_dir, home, log, command=command, env=env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def jupyter(page: Page, jupyter_server, request):
    """`jupyter_server` for a browser test: it saves a screenshot of the page before the servers stop.

    Depends on `page` so that a missing browser skips the test before any server starts.
    """
    yield jupyter_server
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{request.node.originalname}.png"))


class NotebookUI:
    """Drives one notebook in JupyterLab 4 or Notebook 7 (they share the notebook widgets and menus)."""

    def __init__(self, page: Page, server: JupyterServer, app: str = "lab"):
        self.page, self.server, self.app = page, server, app

    def open(self, name: str):
        path = f"lab/tree/{name}" if self.app == "lab" else f"notebooks/{name}"
        self.page.goto(self.server.url(path))
        expect(self.page.locator(".jp-Notebook .jp-Cell").first).to_be_visible(timeout=60_000)
        # Trap: for ~2 s after loading the indicator says idle while the kernel is still "No Kernel".
        self.page.wait_for_function(
            """() => {
                const name = document.querySelector('.jp-Toolbar-kernelName');
                const status = document.querySelector('.jp-Notebook-ExecutionIndicator');
                return Boolean(name && status) && name.textContent.trim() !== ''
                    && !name.textContent.includes('No Kernel') && status.dataset.status === 'idle';
            }""", timeout=60_000)
        return self

    def cells(self):
        return self.page.locator(".jp-Notebook .jp-Cell")

    def run_all(self, timeout_s: float = 240):
        """Run > Run All Cells, then wait until every code cell has run, or a cell failed and the rest were skipped."""
        self.page.get_by_role("menuitem", name="Run", exact=True).click()
        self.page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        self.page.wait_for_function(
            """() => {
                const prompts = [...document.querySelectorAll('.jp-Notebook .jp-CodeCell .jp-InputArea-prompt')]
                    .map(p => p.textContent.trim());
                if (prompts.length && prompts.every(p => /^\\[\\d+\\]:$/.test(p))) return true;
                const failed = [...document.querySelectorAll(
                    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
                    .some(o => o.textContent.includes('Traceback'));
                return failed && !prompts.some(p => p.includes('*'));
            }""", timeout=timeout_s * 1000, polling=250)

    def problems(self) -> list:
        """Code cells that did not run, and cells whose output is a traceback: (cell index, first line)."""
        return self.page.evaluate(
            """() => [...document.querySelectorAll('.jp-Notebook .jp-Cell')].flatMap((cell, i) => {
                if (!cell.classList.contains('jp-CodeCell')) return [];
                const line = (cell.querySelector('.cm-line') || {textContent: ''}).textContent;
                const prompt = cell.querySelector('.jp-InputArea-prompt').textContent.trim();
                const traceback = [...cell.querySelectorAll(
                    '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]')]
                    .some(o => o.textContent.includes('Traceback'));
                if (!/^\\[\\d+\\]:$/.test(prompt)) return [[i, 'not run (' + prompt + '): ' + line]];
                if (traceback) return [[i, 'traceback: ' + line]];
                return [];
            })""")


@pytest.fixture
def open_notebook(page: Page):
    """`open_notebook(server, "lesson20.ipynb")`: open it and wait for its kernel; returns a NotebookUI."""
    def open_(server: JupyterServer, name: str, app: str = "lab") -> NotebookUI:
        return NotebookUI(page, server, app).open(name)
    return open_
