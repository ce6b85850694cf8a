"""The class report of a class of 300, in Chromium, from the file itself: it loads in under 2 s and stays readable.

The class is generated as data (state records and their grades.json rows, seeded), not graded: what is measured is
the page, not the grader. Each student fails a few behaviours drawn at random with messages whose numbers differ,
some left an exercise as the stub, answered the quiz with any letter, or submitted late.
"""
import random
import time

import pytest
from playwright.sync_api import expect

from autograder.instructor.class_report import ClassData, render
from autograder.instructor.course import feedback_page
from autograder.instructor.quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK
from autograder.instructor.report_sections import concept_of
from autograder.instructor.state import StudentRecord
from autograder.items import AUTO_ITEMS, ITEMS
from autograder.rubric import behaviours
from autograder.text import NOT_IMPLEMENTED

pytestmark = pytest.mark.browser
CLASS_SIZE = 300
LOAD_SECONDS = 2.0


def generated_class(n: int, seed: int = 20) -> tuple:
    """(grades.json's document, {student: StudentRecord}) of `n` students graded at random."""
    rng = random.Random(seed)
    records, rows = {}, {}
    for k in range(n):
        student = f"student{k:03d}"
        stub = rng.choice([None] * 9 + [i.id for i in AUTO_ITEMS])
        items = {}
        for item in AUTO_ITEMS:
            rubric, messages = {}, {}
            for b in behaviours(item.id):
                fails = item.id == stub or rng.random() < 0.12
                rubric[b.id] = {"score": 0.0 if fails else b.points, "max_score": b.points, "central": b.central}
                if fails:
                    messages[b.id] = [NOT_IMPLEMENTED if item.id == stub else
                                      f"{b.text}: off by {rng.random():.1e} after {rng.randint(2, 9)} calls."]
            if item.id == "q5_answer" and item.id != stub:
                letter = rng.choice("aabccd")
                right = letter == PRACTICE_5_ANSWER
                rubric["right_letter"]["score"] = 0.9 if right else 0.0
                messages = {} if right else {"right_letter": [
                    f"Q5_ANSWER is {letter!r}, which is not the right answer. {PRACTICE_5_FEEDBACK[letter]}"]}
            items[item.id] = {"score": round(sum(r["score"] for r in rubric.values()), 4),
                              "max_score": float(item.points), "rubric": rubric, "messages": messages}
        review = {"accumulate_gradients": ["it read the reference's frames"]} if k % 97 == 5 else {}
        records[student] = StudentRecord(student, "f", "graded", "", items, review, rng.uniform(4, 60))
        late = rng.choice([0.0] * 8 + [1980.0, None])
        rows[student] = {"status": "graded", "reason": "",
                         "items": {i: {"score": v["score"], "max_score": v["max_score"]} for i, v in items.items()},
                         "total": round(sum(v["score"] for v in items.values()), 4),
                         "max_total": float(sum(i.points for i in AUTO_ITEMS)),
                         "submission": {"time": "2026-12-10T06:03:00Z", "due": "2026-12-10T05:30:00Z",
                                        "late_seconds": late, "penalty": 0.0,
                                        "flags": [] if late is not None else ["lateness unknown"]}}
    return {"assignment": "lesson20", "students": rows}, records


def test_the_report_of_300_students_loads_in_under_2_s_and_reads(page, tmp_path):
    doc, records = generated_class(CLASS_SIZE)
    pages = {}
    for student in records:  # each student's feedback page, where `grade` writes it
        path = feedback_page(tmp_path, student)
        path.parent.mkdir(parents=True)
        path.write_text(f"<!DOCTYPE html><title>{student}</title><h1>feedback of {student}</h1>")
        pages[student] = str(path.relative_to(tmp_path))
    report = tmp_path / "report.html"
    started = time.perf_counter()
    report.write_text(render(ClassData(doc, records, pages=pages)))
    built = time.perf_counter() - started
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type in ("error", "warning")
            else None)
    page.on("pageerror", lambda exc: problems.append(f"page error: {exc}"))
    page.on("requestfailed", lambda r: problems.append(f"failed request: {r.url}"))

    started = time.perf_counter()
    page.goto(report.as_uri(), wait_until="load")
    loaded = time.perf_counter() - started
    timing = page.evaluate("() => { const t = performance.getEntriesByType('navigation')[0];"
                           " return [t.domContentLoadedEventEnd, t.loadEventEnd]; }")
    print(f"\nclass report of {CLASS_SIZE} students: {report.stat().st_size / 1e6:.2f} MB, built in {built:.2f} s; "
          f"Chromium: DOMContentLoaded {timing[0] / 1000:.3f} s, load {timing[1] / 1000:.3f} s "
          f"(goto to load {loaded:.3f} s)")
    assert loaded < LOAD_SECONDS, f"the report of {CLASS_SIZE} students took {loaded:.2f} s to load"

    rows = page.locator("#students tbody tr")
    expect(rows).to_have_count(CLASS_SIZE)
    expect(page.locator("#students thead th")).to_have_count(3 + len(ITEMS) + 2)
    late = sum(1 for r in doc["students"].values() if r["submission"]["late_seconds"])
    expect(page.locator("#students tbody td:nth-last-child(2)", has_text="33 min")).to_have_count(late)

    # the lesson's ideas: each one's share, as counted from the records by hand here
    for concept in page.locator("#concepts summary").all_inner_texts():
        assert " of 300 students" in concept, concept
    micro = [(item, b.id) for item in AUTO_ITEMS for b in behaviours(item.id)
             if concept_of(item.id, b.id) == "micro_batches"]
    passing = sum(all(records[s].items[i.id]["rubric"][b]["score"] > 0 for i, b in micro
                      if i.id not in records[s].review) for s in records)
    expect(page.locator("#concepts summary", has_text="weighting micro-batches")).to_contain_text(
        f"{passing} of {CLASS_SIZE} students")

    # the quiz's letters: every graded answer counted once
    counts = [int(t) for t in page.locator("#quiz tbody td.num").all_inner_texts()]
    quizzed = sum(1 for s, r in records.items() if "q5_answer" not in r.review)
    assert sum(counts) == quizzed, counts
    expect(page.locator("#quiz tbody tr", has_text="(right)")).to_contain_text(PRACTICE_5_ANSWER)

    # messages: plain weight, counts first, names folded; the stub once per item
    expect(page.locator("#messages b, #messages strong")).to_have_count(0)
    assert page.locator("#messages details.who[open]").count() == 0
    weight = page.locator("#messages li").first.evaluate("e => getComputedStyle(e).fontWeight")
    assert weight == "400", weight
    assert page.get_by_text("Not implemented yet").count() == 1

    page.screenshot(path=str(tmp_path / "report-300.png"))  # the first screen, as an instructor opens it
    page.locator("#concepts details").first.evaluate("e => e.open = true")
    page.locator("#concepts").screenshot(path=str(tmp_path / "report-300-concepts.png"))
    print(f"screenshots: {tmp_path / 'report-300.png'}, {tmp_path / 'report-300-concepts.png'}")

    first = rows.first.locator("a")
    first.click()
    expect(page.locator("h1")).to_have_text(f"feedback of {sorted(records)[0]}")
    assert not problems, problems
