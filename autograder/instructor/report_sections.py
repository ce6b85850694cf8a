"""The class report's tables, as plain data from the grades.json document and the records: one row per student,
the lesson's ideas across the class, the graded quiz's letters, and what around grading needs a person (the
behaviours a missing protection left unchecked, the submissions set aside, each late or uncertain submission).
class_report.page_data gathers them; the template (templates/class_report.html.j2) escapes every text.
"""
from ..exercise import CONCEPTS
from ..exercises import EXERCISES
from ..items import ITEMS
from ..text import NOT_IMPLEMENTED, duration
from .quiz_key import PRACTICE_5_ANSWER, PRACTICE_5_FEEDBACK

QUIZ_ITEM = "q5_answer"
NOT_A_LETTER = "not a letter a to d"
LETTER_UNKNOWN = "a wrong letter (which one, the record does not say)"
STUBBED = "still the stub"


def concept_of(item_id: str, behaviour_id: str) -> str:
    """The lesson's idea (exercise.CONCEPTS) a behaviour checks, from its exercise's declaration."""
    exercise = next(e for e in EXERCISES if e.id == item_id)
    return exercise.concept_of(next(b for b in exercise.behaviours if b.id == behaviour_id))


def concepts(rates: list, judged: dict) -> list:
    """Each of the lesson's ideas across the class, in the lesson's order: its behaviours' pass rates, and the
    students who pass every behaviour of it that they were graded on. `judged`: student -> {item: rubric}."""
    rows = []
    for concept, label in CONCEPTS.items():
        mine = [r for r in rates if concept_of(r.item, r.behaviour.id) == concept]
        if not mine:
            continue
        graded = passing = 0
        for rubric in judged.values():
            entries = [rubric[r.item][r.behaviour.id] for r in mine
                       if r.behaviour.id in rubric.get(r.item, {})]
            if entries:
                graded += 1
                passing += all(_passes(e) for e in entries)
        rows.append({"id": concept, "label": label, "passing": passing, "graded": graded,
                     "share": passing / graded if graded else 1.0,
                     "behaviours": sorted(mine, key=lambda r: r.rate)})
    return rows


def _passes(entry: dict) -> bool:
    return float(entry.get("score", 0.0)) >= float(entry.get("max_score", 0.0)) - 1e-9


def quiz_letter(item: dict) -> str:
    """The letter a student's graded quiz answer was taken as, from its record: the right one when it passes,
    else the letter whose feedback its failing check quotes (quiz_key.PRACTICE_5_FEEDBACK)."""
    rubric, said = item.get("rubric", {}), item.get("messages", {})
    if any(NOT_IMPLEMENTED in m for ms in said.values() for m in ms):
        return STUBBED
    if "a_letter" in rubric and not _passes(rubric["a_letter"]):
        return NOT_A_LETTER
    if "right_letter" in rubric and _passes(rubric["right_letter"]):
        return PRACTICE_5_ANSWER
    for letter, feedback in PRACTICE_5_FEEDBACK.items():
        if letter != PRACTICE_5_ANSWER and any(feedback[:120] in m for m in said.get("right_letter", [])):
            return letter
    return LETTER_UNKNOWN


def quiz_letters(judged_items: list) -> list:
    """The graded quiz's letters across the class: [{"letter", "count", "right", "students"}], a to d first.
    `judged_items`: (student, item id, item record) as class_report.judged_items gives them."""
    chosen = {}
    for student, item_id, item in judged_items:
        if item_id == QUIZ_ITEM:
            chosen.setdefault(quiz_letter(item), []).append(student)
    order = [*PRACTICE_5_FEEDBACK, NOT_A_LETTER, LETTER_UNKNOWN, STUBBED]
    return [{"letter": letter, "count": len(chosen.get(letter, [])), "right": letter == PRACTICE_5_ANSWER,
             "students": sorted(chosen.get(letter, []))} for letter in order
            if letter in PRACTICE_5_FEEDBACK or chosen.get(letter)]


def short_title(title: str) -> str:
    """An item's column heading: "Ex 5" for "Exercise 5: gradient accumulation", "Q 5" for "Practice question 5"."""
    head = title.split(":")[0]
    return head.replace("Exercise", "Ex").replace("Practice question", "Q")


def item_columns() -> list:
    """The per-student table's item columns: {"id", "heading", "title", "points"}, in the lesson's order."""
    return [{"id": i.id, "heading": short_title(i.title), "title": f"{i.title} ({i.id}, {i.points:g} points)"}
            for i in ITEMS]


def lateness(block: dict) -> str:
    """A submission's lateness in words: "" when on time, "unknown" when its time is not known."""
    late = block.get("late_seconds", 0.0)
    return "unknown" if late is None else duration(late) if late else ""


def student_rows(doc: dict, review: dict, pages: dict) -> list:
    """One row per student: status, total, each item's score, lateness, what was set aside, their page's link.
    `review`: student -> {item: why set aside}; `pages`: student -> the feedback page, relative to the report."""
    rows = []
    for student, row in sorted(doc["students"].items()):
        aside = sorted(review.get(student, {}))
        if row.get("set_aside"):
            aside.append(f"{len(row['set_aside'])} submission(s) not theirs")
        rows.append({"student": student, "status": row["status"], "total": row["total"],
                     "max_total": row["max_total"], "page": pages.get(student, ""),
                     "items": [row["items"].get(i.id, {}).get("score") for i in ITEMS],
                     "late": lateness(row.get("submission", {})), "set_aside": ", ".join(aside)})
    return rows


def not_checked_rows(doc: dict) -> list:
    return [[s, item, ", ".join(behaviours), ", ".join(row.get("weaker_isolation", []))]
            for s, row in sorted(doc["students"].items())
            for item, behaviours in sorted(row.get("not_checked", {}).items())]


def set_aside_rows(doc: dict) -> list:
    entries = [(s, entry) for s, row in sorted(doc["students"].items()) for entry in row.get("set_aside", [])]
    entries += [("", entry) for entry in doc.get("set_aside", [])]
    return [[s or "(no usable student id)", entry.get("folder", ""), entry.get("owner", ""), entry.get("time") or "",
             entry.get("reason", "")] for s, entry in entries]


def late_rows(doc: dict) -> list:
    rows = []
    for s, row in sorted(doc["students"].items()):
        block = row.get("submission", {})
        late, flags = block.get("late_seconds"), block.get("flags", [])
        if not late and late is not None and not flags:
            continue
        rows.append([s, block.get("time") or "not recorded", block.get("due") or "", lateness(block) or "on time",
                     f"{block.get('penalty', 0):g}", "; ".join(flags), block.get("source", "")])
    return rows


# the sections on the course around grading: (id, heading, columns, rows, what an empty one says)
AROUND = (
    ("not_checked", "Not checked on this grading machine", ["student", "item", "behaviours not checked",
                                                           "protections missing"], not_checked_rows,
     "Every behaviour was checked: the sandbox had every protection."),
    ("set_aside", "Submissions set aside", ["named student", "exchange folder", "owner", "time", "why"],
     set_aside_rows, "No submission was set aside."),
    ("late", "Late or uncertain submissions", ["student", "counts as submitted", "due", "late by", "penalty",
                                                "flags", "time from"], late_rows,
     "No submission is late, and every submission's time is known."),
)


def around(doc: dict) -> list:
    """The sections on the course around grading, each {"id", "heading", "head", "rows", "empty"}."""
    return [{"id": key, "heading": heading, "head": head, "rows": rows(doc), "empty": empty}
            for key, heading, head, rows, empty in AROUND]


def summary(doc: dict) -> str:
    """A sentence for the report's first line: what around grading needs a person ("" when nothing does)."""
    unchecked = sum(len(row.get("not_checked", {})) for row in doc["students"].values())
    aside = len(set_aside_rows(doc))
    unknown = sum(1 for row in doc["students"].values() if row.get("submission", {}).get("late_seconds", 0) is None)
    parts = [f"{unchecked} items with behaviours not checked" if unchecked else "",
             f"{aside} submissions set aside" if aside else "",
             f"{unknown} submissions of unknown lateness" if unknown else ""]
    parts = [p for p in parts if p]
    return ("Needs a person: " + ", ".join(parts) + ".") if parts else ""
