"""The class report as an instructor opens it: OUT/report.html of a small class graded by
`python -m autograder grade`, in Chromium, from the file itself (no server, no network)."""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import expect

from autograder.items import MANUAL_ITEMS
from tests.browser.conftest import ARTIFACTS
from tests.submissions import write_class

REPO = Path(__file__).resolve().parents[2]
HOSTILE_ID = "<img src=x onerror=alert(1)>"  # a folder name: refused for grading, and shown as text
# student id -> the corpus variant they hand in
CLASS = {"ada": "reference", "bob": "step_no_loss_scaling", "cy": "step_no_loss_scaling", "dan": "stub",
         HOSTILE_ID: "reference"}
BUGGY = ["bob", "cy"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory, browser_type_launch_args):
    """OUT of `python -m autograder grade` on CLASS; skips before grading where Chromium is missing."""
    base = tmp_path_factory.mktemp("report")
    submitted, out = base / "submitted", base / "out"
    write_class(submitted, list(CLASS.values()), list(CLASS))
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(submitted), "--out", str(out),
                           "--jobs", "2", "--timeout", "30"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Class report: {out / 'report.html'}" in done.stdout
    return out


def test_the_report_shows_the_class_to_its_instructor(page, graded_class):
    grades = json.loads((graded_class / "grades.json").read_text())["students"]
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    page.goto((graded_class / "report.html").as_uri())

    expect(page.locator("h1")).to_have_text("lesson20: class report")
    expect(page.locator("#summary")).to_contain_text(f"{len(CLASS)} students: 1 failed, {len(CLASS) - 1} graded.")
    expect(page.locator("#totals svg")).to_have_count(1)
    expect(page.locator("#items svg")).to_have_count(8)

    # worst first; the step's loss scaling fails for the two buggy students and the stub, and is central
    rows = page.locator("#behaviours > table.rates tbody tr")
    rates = [int(re.search(r"(\d+)%", t).group(1)) for t in rows.locator("td.rate").all_inner_texts()]
    assert rates and rates == sorted(rates) and max(rates) < 100, rates
    scaling = rows.filter(has_text="The loss is multiplied by the scale before backward()")
    expect(scaling).to_contain_text("1 of 4")  # the refused id's code was not graded
    expect(scaling).to_contain_text("central")

    # what its checks said: the buggy pair's messages, each once with both names; the stub's, once
    block = page.locator(".failing").filter(has_text="The loss is multiplied by the scale before backward()")
    pair = block.locator("li").filter(has_text="2 students:")
    expect(pair.first).to_contain_text("scaler.scale")  # the variant's cause (tests/submissions/buggy.py)
    for i in range(pair.count()):
        expect(pair.nth(i).locator(".who")).to_have_text(", ".join(BUGGY))
    expect(block.locator("li").filter(has_text="1 student: Not implemented yet").locator(".who")).to_have_text("dan")

    not_graded = page.locator("#statuses tbody tr")
    expect(not_graded).to_have_count(1)
    expect(not_graded).to_contain_text(HOSTILE_ID)  # as text: no element was made of it
    expect(not_graded).to_contain_text("not a usable student id")
    expect(page.locator("img")).to_have_count(0)

    assert not any(row.get("review") for row in grades.values())
    expect(page.locator("#review")).to_contain_text("No item is set aside for review.")

    waiting = page.locator("#written tbody tr")
    expect(waiting).to_have_count(len(CLASS) - 1)  # the refused id has no submission in the gradebook
    expect(waiting.filter(has_text="ada")).to_contain_text(", ".join(i.id for i in MANUAL_ITEMS))

    slow = page.locator("#slowest tbody tr")
    expect(slow).to_have_count(len(CLASS))
    seconds = [float(t.split()[0]) for t in slow.locator("td:nth-child(2)").all_inner_texts()]
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 1, seconds

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "test_report.png"), full_page=True)
    assert not problems, problems
