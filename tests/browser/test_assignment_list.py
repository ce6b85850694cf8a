"""One student's side of the exchange in JupyterLab: nbgrader's Assignment List, in the student's own server.

The instructor has released lesson20 into an exchange; the student fetches it from the list, opens it,
fills in one stub, validates it from the list and submits it.
"""
import os
import re
import subprocess
import sys
import time

import pytest
from playwright.sync_api import expect

from autograder.items import ASSIGNMENT
from tests.helpers import ROOT, read
from tests.submissions import make_submission

pytestmark = pytest.mark.browser
FILLED = "underflow_fraction"  # the stub the student fills in
NOT_YET = "static_loss_scaler"  # one they leave for later


def stub_answer(grade_id: str) -> str:
    return next(c.source for c in make_submission("reference").cells
                if c.metadata.get("nbgrader", {}).get("grade_id") == f"{grade_id}_solution")


def handed_in_files(exchange, seconds=30) -> list:
    """The submitted notebooks in the exchange's inbound folder, once there are any (or after `seconds`)."""
    deadline = time.monotonic() + seconds
    while True:
        found = sorted((exchange / ASSIGNMENT / "inbound").glob(f"*+{ASSIGNMENT}+*/{ASSIGNMENT}.ipynb"))
        if found or time.monotonic() > deadline:
            return found
        time.sleep(0.5)


def test_fetch_open_fill_validate_submit(jupyter, page, tmp_path):
    exchange = tmp_path / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "release_assignment", ASSIGNMENT,
                           f"--Exchange.root={exchange}", f"--course={ASSIGNMENT}"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    # the student's own submission cache (nbgrader lists "Submitted assignments" from it): by default it is
    # in the user's Jupyter data folder, shared with anything else this user ran
    cache = tmp_path / "student-cache"
    config = tmp_path / "student-config"  # the student's nbgrader configuration: the exchange and the course
    config.mkdir()
    (config / "nbgrader_config.py").write_text(
        f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n"
        f"c.Exchange.cache = {str(cache)!r}\nc.CourseDirectory.course_id = {ASSIGNMENT!r}\n")
    home = tmp_path / "student"
    home.mkdir()
    server = jupyter("lab", root_dir=home, env={**os.environ, "JUPYTER_CONFIG_PATH": str(config)})

    # the list shows the released assignment; Fetch moves it to "Downloaded assignments"
    page.goto(server.url("lab"))
    page.get_by_role("menuitem", name="Nbgrader", exact=True).click()
    page.get_by_role("menuitem", name="Assignment List", exact=True).click()
    released = page.locator("#released_assignments_list .list_item").filter(has_text=ASSIGNMENT)
    expect(released).to_have_count(1, timeout=30_000)
    released.get_by_role("button", name="Fetch").click()
    fetched = page.locator("#fetched_assignments_list")
    expect(fetched.locator(".list_item").filter(has_text=ASSIGNMENT).first).to_be_visible(timeout=30_000)
    expect(page.locator("#released_assignments_list_placeholder")).to_be_visible()
    notebook = home / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    assert notebook.is_file()

    # open it from the list, replace the stub's body with working code, save
    fetched.locator("a.assignment-notebooks-link").click()  # expands the assignment's notebooks
    fetched.get_by_role("link", name=ASSIGNMENT, exact=True).click()
    cell = page.locator(".jp-Notebook .jp-CodeCell").filter(has_text="def underflow_fraction(")
    expect(cell).to_have_count(1, timeout=60_000)
    expect(cell).to_contain_text("raise NotImplementedError")
    cell.locator(".cm-content").click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(stub_answer(FILLED))
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    expect(page.locator(".jp-StatusBar-Widget").filter(has_text="Saving completed")).to_be_visible(timeout=20_000)
    saved = {c.metadata["nbgrader"]["grade_id"]: c.source for c in read(notebook).cells
             if c.metadata.get("nbgrader", {}).get("solution")}
    assert saved[f"{FILLED}_solution"] == stub_answer(FILLED)
    assert "raise NotImplementedError" in saved[f"{NOT_YET}_solution"]

    # Validate from the list: the dialog names the exercises still to do, not the one filled in
    page.get_by_role("tab", name="Assignments").click()
    fetched.get_by_role("button", name="Validate").click()
    dialog = page.locator(".jp-Dialog").filter(has_text="Validation Results")
    expect(dialog).to_be_visible(timeout=240_000)  # it runs the whole notebook: over 90 s at load 8 on 2 cores
    body = dialog.locator("#validation-message")
    expect(body).to_contain_text(f'check("{NOT_YET}"')
    expect(body).not_to_contain_text(f'check("{FILLED}"')
    dialog.get_by_role("button", name="Ok").click()
    expect(fetched.get_by_role("button", name="Validate")).to_have_class(re.compile(r"\bbtn-danger\b"))  # red: work left to do

    # Submit: the list shows the submission, and it is in the exchange's inbound folder
    fetched.get_by_role("button", name="Submit").click()
    submitted = page.locator("#submitted_assignments_list .list_item").filter(has_text=ASSIGNMENT)
    expect(submitted).to_have_count(1, timeout=30_000)
    inbound = handed_in_files(exchange)
    assert len(inbound) == 1, f"inbound: {inbound}; the server's log ends:\n{server.log()[-3000:]}"
    handed_in = {c.metadata["nbgrader"]["grade_id"]: c.source for c in read(inbound[0]).cells
                 if c.metadata.get("nbgrader", {}).get("solution")}
    assert handed_in == saved
