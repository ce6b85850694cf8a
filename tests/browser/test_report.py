"""The class report as an instructor opens it: OUT/report.html of the shared class (tests/graded_class.py)
graded by `python -m autograder grade`, in Chromium, from the file itself (no server, no network)."""
import json
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from autograder.instructor.class_report import SLOWEST
from autograder.instructor.staging import usable_id
from autograder.items import MANUAL_ITEMS
from autograder.rubric import behaviours
from tests.browser.conftest import ARTIFACTS
from tests.graded_class import BUGGY, CLASS, HOSTILE_ID, STUBS

pytestmark = pytest.mark.browser
SCALED = "mixed_precision_train_step"
SCALING = "The loss is multiplied by the scale before backward()"  # the behaviour the two buggy students fail


@pytest.fixture
def graded_report(browser_type_launch_args, graded_class) -> Path:
    """OUT of the shared class (tests/graded_class.py); skips where Chromium is missing."""
    assert f"Class report: {graded_class['out'] / 'report.html'}" in graded_class["resumed"]
    return graded_class["out"]


def test_the_report_shows_the_class_to_its_instructor(page, graded_report):
    grades = json.loads((graded_report / "grades.json").read_text())["students"]
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))
    page.on("dialog", lambda d: problems.append(f"dialog: {d.message}"))
    page.goto((graded_report / "report.html").as_uri())

    expect(page.locator("h1")).to_have_text("lesson20: class report")
    statuses = [row["status"] for row in grades.values()]
    graded = statuses.count("graded")
    expect(page.locator("#summary")).to_contain_text(
        f"{len(CLASS)} students: {statuses.count('failed')} failed, {graded} graded.")
    expect(page.locator("#totals svg")).to_have_count(1)
    expect(page.locator("#items svg")).to_have_count(8)

    # worst first; the step's loss scaling fails for the two buggy students and the stubs, and is central
    rows = page.locator("#behaviours > table.rates tbody tr")
    rates = [int(re.search(r"(\d+)%", t).group(1)) for t in rows.locator("td.rate").all_inner_texts()]
    assert rates and rates == sorted(rates) and max(rates) < 100, rates
    scaling = rows.filter(has_text=SCALING)
    behaviour = next(b for b in behaviours(SCALED) if b.text.startswith(SCALING))
    passed = [s for s, row in grades.items() if row["status"] == "graded"
              and row["rubric"][SCALED][behaviour.id]["score"] == behaviour.points]
    assert not set(passed) & set(BUGGY + STUBS), passed
    expect(scaling).to_contain_text(f"{len(passed)} of {graded}")  # the refused ids' code was not graded
    expect(scaling).to_contain_text("central")

    # what its checks said: the buggy pair's messages, each once with both names; the stub's, once
    block = page.locator(".failing").filter(has_text=SCALING)
    pair = block.locator("li").filter(has=page.locator(".count", has_text="2 students"))
    expect(pair.first).to_contain_text("scaler.scale")  # the variant's cause (tests/submissions/buggy.py)
    for i in range(pair.count()):
        who = pair.nth(i).locator("details.who")
        expect(who).not_to_have_attribute("open", "")  # the names are folded
        expect(who).to_have_text("who" + ", ".join(BUGGY))
    stubs = page.locator("#stubs li").filter(has_text=SCALED)  # a stub's message: once per item
    expect(stubs.locator(".count")).to_have_text(f"{len(STUBS)} students")
    expect(stubs.locator("details.who")).to_have_text("who" + ", ".join(STUBS))
    expect(block).not_to_contain_text("Not implemented yet")

    not_graded = page.locator("#statuses tbody tr")
    expect(not_graded).to_have_count(len(CLASS) - graded)
    refused = not_graded.filter(has_text=HOSTILE_ID)  # as text: no element was made of it
    expect(refused).to_have_count(1)
    expect(refused).to_contain_text("not a usable student id")
    expect(page.locator("img")).to_have_count(0)

    assert not any(row.get("review") for row in grades.values())
    expect(page.locator("#review")).to_contain_text("No item is set aside for review.")

    waiting = page.locator("#written tbody tr")
    expect(waiting).to_have_count(sum(map(usable_id, CLASS)))  # a refused id has no submission in the gradebook
    expect(waiting.filter(has_text="ada")).to_contain_text(", ".join(i.id for i in MANUAL_ITEMS))

    slow = page.locator("#slowest tbody tr")
    expect(slow).to_have_count(min(len(CLASS), SLOWEST))
    seconds = [float(t.split()[0]) for t in slow.locator("td:nth-child(2)").all_inner_texts()]
    assert seconds == sorted(seconds, reverse=True) and seconds[0] > 1, seconds

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "test_report.png"), full_page=True)
    assert not problems, problems
