"""A newcomer's first run: `make lesson` as written, and a student's own install as docs/instructors.md hands it out.

`make lesson` runs here with a copy of the lesson in a temporary folder and its own port and token
(make variables LESSON and LAB_ARGS), as whichever user runs the tests: root in CI. Its log must
show no error, and no critical line but Jupyter's access banner, while the lesson opens and runs.

The student's path ("Handing out the course"): the wheel, a fresh venv with `torch==2.13.0` and the
wheel, then `jupyter lab lesson20.ipynb` from that venv, in a folder without the repository.

The tests without the `browser` marker need no browser and run wherever the rest of the suite does.
"""
import asyncio
import concurrent.futures
import html
import json
import os
import re
import shutil
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path

import nbformat
import pytest
from playwright.sync_api import expect
from tornado.websocket import websocket_connect

from autograder.items import AUTO_ITEMS
from autograder.report import NOT_IMPLEMENTED
from tests.browser.test_student import stub_ids
from tests.helpers import ROOT, STUDENT_NB
from tests.wheel import fresh_shell_env, student_env

BANNER = re.compile(r"^\[C [^\]]*\]\s*$")  # Jupyter's access banner: an empty critical line, then the URL
PROBLEM = re.compile(r"^\[[EC] \d{4}-")
CELL_TIMEOUT = 180  # seconds a cell of the lesson may run in `jupyter execute` (seconds alone, a minute on a busy machine)


def log_problems(log: str) -> list:
    """Error lines, and critical lines other than the access banner, of a Jupyter server's log."""
    return [line for line in log.splitlines() if PROBLEM.match(line) and not BANNER.match(line)]


def lab_args(port: int, token: str) -> list:
    """What a test adds to a student's command: no browser of its own, loopback, its port, its token."""
    return ["--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}"]


def make_lesson(name: str = "lesson20.ipynb"):
    """`make lesson` on the copy `name` in the server's temporary root, with this interpreter's venv as VENV."""
    if not shutil.which("make"):
        pytest.skip("make is not installed (apt-get install -y make)")
    venv = Path(sys.prefix)

    def command(port, token, root_dir):
        # -o: take the venv as set up (it is the one running the tests); never install into it from here
        return ["make", "--no-print-directory", "-C", str(ROOT), "-o", f"{venv}/.installed", "lesson",
                f"VENV={venv}", f"LESSON={root_dir / name}", "LAB_ARGS=" + " ".join(lab_args(port, token))]
    return command


def api(server, method: str, path: str, body: dict = None) -> dict:
    request = urllib.request.Request(server.url(path), method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read() or b"null")


def open_as_a_student(server, name: str, timeout: float = 120) -> dict:
    """What opening the notebook and running its first cell asks of the server: the notebook's contents,
    a session with a kernel, and an execute request over the kernel's websocket. Returns the execute reply."""
    notebook = api(server, "GET", f"api/contents/{name}")["content"]
    first_cell = next(c["source"] for c in notebook["cells"] if c["cell_type"] == "code")
    session = api(server, "POST", "api/sessions", {"path": name, "type": "notebook", "name": name,
                                                   "kernel": {"name": "python3"}})
    url = f"ws://127.0.0.1:{server.port}/api/kernels/{session['kernel']['id']}/channels?token={server.token}"

    async def execute() -> dict:
        socket = await websocket_connect(url)
        request = {"header": {"msg_id": uuid.uuid4().hex, "msg_type": "execute_request", "username": "student",
                              "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
                   "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                   "content": {"code": first_cell, "silent": False, "store_history": True,
                               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}}
        await socket.write_message(json.dumps(request))
        while True:
            message = json.loads(await socket.read_message())
            if message["msg_type"] == "execute_reply" and \
                    message["parent_header"].get("msg_id") == request["header"]["msg_id"]:
                socket.close()
                return message["content"]

    # in a thread of its own: after a Playwright test, this thread's event loop is Playwright's, still running,
    # and asyncio.run() refuses to start a second one in it
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(lambda: asyncio.run(asyncio.wait_for(execute(), timeout))).result()


def test_make_lesson_serves_the_lesson_with_a_clean_log(jupyter_server):
    server = jupyter_server("lab", notebooks={"lesson20.ipynb": STUDENT_NB}, command=make_lesson(),
                            env=fresh_shell_env())
    reply = open_as_a_student(server, "lesson20.ipynb")
    assert reply["status"] == "ok", reply
    assert log_problems(server.log()) == [], server.log()[-3000:]


@pytest.mark.browser
def test_make_lesson_runs_the_lesson_in_the_browser(jupyter, open_notebook):
    server = jupyter("lab", notebooks={"lesson20.ipynb": STUDENT_NB}, command=make_lesson(), env=fresh_shell_env())
    ui = open_notebook(server, "lesson20.ipynb")
    ui.run_all()
    assert ui.problems() == []
    assert log_problems(server.log()) == [], server.log()[-3000:]


def student_folder(tmp_path: Path) -> Path:
    """What the student was given, in a folder of their own: the notebook, and no repository."""
    work = tmp_path / "student"
    work.mkdir()
    shutil.copyfile(STUDENT_NB, work / "lesson20.ipynb")
    return work


def assert_stub_reports(reports: dict):
    """exercise id -> the text of its check cell's report: each stub's says "not written yet" in a line or two."""
    stubs = stub_ids(STUDENT_NB)
    assert stubs, "the student notebook has no stubs left to check"
    assert set(reports) == {item.id for item in AUTO_ITEMS}, sorted(reports)
    for exercise_id in stubs:
        text = reports[exercise_id]
        assert NOT_IMPLEMENTED.split(":")[0] in text, f"{exercise_id}: {text}"
        assert len(text) < 600 and len(text.strip().splitlines()) <= 3, f"{exercise_id}: not short:\n{text}"
        assert "Traceback" not in text and 'File "' not in text, text


@pytest.mark.slow
def test_a_student_install_runs_every_cell(student_venv, tmp_path):
    """Every cell, headless, with the kernel of the student's venv: no error, each check a short report."""
    work = student_folder(tmp_path)
    # a cell that hangs fails on its own (nbclient names it, with the kernel's traceback) well before the whole run's
    # limit; the lesson's longest cell takes seconds
    command = [str(student_venv / "bin" / "jupyter"), "execute", "--allow-errors", f"--timeout={CELL_TIMEOUT}",
               "--output", "ran.ipynb", "lesson20.ipynb"]
    try:
        done = subprocess.run(command, cwd=work, env=student_env(), capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired as hung:
        so_far = "".join(o.decode(errors="replace") if isinstance(o, bytes) else o or "" for o in (hung.stdout, hung.stderr))
        pytest.fail(f"`jupyter execute` did not finish in {hung.timeout} s; its output so far:\n{so_far[-6000:]}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    reports, problems = {}, []
    for index, cell in enumerate(nbformat.read(work / "ran.ipynb", as_version=4).cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error" or "Traceback" in output.get("text", ""):
                problems.append((index, cell.source.splitlines()[0], output.get("ename") or output.text[-500:]))
            report = output.get("data", {}).get("text/html", "")
            if "lesson20-check" in report:  # a check cell's report, as the page shows it: one line per <div>
                text = html.unescape(re.sub(r"<[^>]+>", "\n", report))
                text = "\n".join(line.strip() for line in text.splitlines() if line.strip())
                reports[re.search(r"(\w+): \d+ of \d+ behaviours", text).group(1)] = text
    assert problems == []
    assert_stub_reports(reports)


@pytest.mark.slow
@pytest.mark.browser
def test_a_student_install_opens_and_runs_in_jupyterlab(student_venv, jupyter, open_notebook, page, tmp_path):
    """`~/lesson20-venv/bin/jupyter lab lesson20.ipynb` in the student's folder, run in the browser."""
    work = student_folder(tmp_path)
    root_flag = ["--allow-root"] if os.geteuid() == 0 else []

    def command(port, token, root_dir):
        return [str(student_venv / "bin" / "jupyter"), "lab", *root_flag, *lab_args(port, token), "lesson20.ipynb"]
    server = jupyter("lab", root_dir=work, cwd=work, command=command, env=student_env())
    ui = open_notebook(server, "lesson20.ipynb")
    ui.run_all()
    assert ui.problems() == []
    reports = {}
    for item in AUTO_ITEMS:
        report = page.locator(".lesson20-check").filter(has_text=re.compile(rf"^\W*{item.id}:"))
        expect(report, item.id).to_have_count(1)
        report.scroll_into_view_if_needed()  # Lab renders only the cells near the viewport: wait for the text
        expect(report).to_contain_text(re.compile(r"\S"), use_inner_text=True)
        reports[item.id] = report.inner_text()
    assert_stub_reports(reports)
    assert log_problems(server.log()) == [], server.log()[-3000:]
