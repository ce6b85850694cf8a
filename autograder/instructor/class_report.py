"""`python -m autograder report`: one HTML page on how a graded class did, for its instructor.

Read from what grading keeps (state.py's records, and the gradebook through gradebook.collect, so a score
given in formgrader shows without an export first), in three steps that each stand alone:

1. `gather`: the records, the grades.json document and the written answers still to grade; a folder
   that holds no graded class stops here, with a message that names what is missing;
2. the summaries, plain functions of the records: `pass_rates` (each behaviour across the class, worst
   first) and `message_groups` (what a failing behaviour's checks said, grouped by their wording with the
   numbers stripped, so "off by 1.8e-01" and "off by 3.2e-02" are one mistake);
3. `page_data`, everything the page shows as plain data (report_sections.py builds its tables), and `render`,
   which lays it out with the Jinja2 template templates/class_report.html.j2. Jinja2 escapes every text (a
   folder name, a reason, a message that quotes a student's code); only the plots, inline SVG drawn by
   matplotlib (report_plots.py), go in as they are. There is no script, and the page's Content-Security-Policy
   forbids one and any request, so it opens as it is, from a file, without a network.
"""
import html
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from ..rubric import behaviours
from markupsafe import Markup

from ..text import NOT_IMPLEMENTED
from .messages import NO_MESSAGE, REPORT_HEADINGS, all_pass, gradebook_unreadable, no_gradebook, no_graded_class, no_such_folder, report_intro, report_summary, students, unreadable_record
from . import report_plots, report_sections
from .course import feedback_page
from .files import write_atomic
from .gradebook import class_students, collect, normalise_db_url, waiting_for_hand
from .settings import Settings
from .state import read_state, state_path

REPORT = "report.html"
TEMPLATES = Path(__file__).parent / "templates"
TEMPLATE = "class_report.html.j2"
NOT_GRADED = ("failed", "timeout", "error")  # the statuses whose students the report lists with their reasons
SLOWEST = 10       # submissions in the table of the slowest
NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?![\w])")  # not the 16 of fp16
VARIES = "#"       # where the numbers of one wording differ between students
# no script, no request: the page opens from a file as it is (similarity_page.py uses the same)
CONTENT_SECURITY_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


class ReportError(Exception):
    """What stops a report: the folder holds no graded class, or its gradebook cannot be read."""


@dataclass
class ClassData:
    doc: dict                                        # the grades.json document (gradebook.collect)
    records: dict = field(default_factory=dict)      # student -> state.StudentRecord, those that could be read
    unreadable: dict = field(default_factory=dict)   # student -> why their record cannot be read
    waiting: dict = field(default_factory=dict)      # student -> written answers without a manual score
    pages: dict = field(default_factory=dict)        # student -> their feedback page, relative to the report


# ---- 1. What grading kept ----

def gather(out, db_url: str = None, sources=(), settings: Settings = None) -> ClassData:
    """The class graded into `out` (and the shards' folders `sources`): records, grades and written answers."""
    out = Path(out)
    for folder in [out, *map(Path, sources)]:
        if not folder.is_dir():
            raise ReportError(no_such_folder(folder))
    students = class_students(out, sources)
    if not students:
        raise ReportError(no_graded_class(out, (out / "state").is_dir()))
    db_url = normalise_db_url(db_url or f"sqlite:///{out / 'gradebook.db'}")
    if db_url.startswith("sqlite:///") and not Path(db_url[len("sqlite:///"):]).is_file():
        raise ReportError(no_gradebook(db_url[len("sqlite:///"):]))
    data = ClassData(doc={})
    for student in students:
        record, problem = _newest_readable(out, sources, student)
        if record is None:
            data.unreadable[student] = problem
        else:
            data.records[student] = record
    try:
        data.doc = collect(out, db_url, students, sources, settings)
        data.waiting = waiting_for_hand(db_url, students)
    except Exception as exc:  # not a gradebook, or one nbgrader cannot read
        raise ReportError(gradebook_unreadable(_shown_url(db_url), exc)) from None
    data.pages = feedback_pages(out, sources, students)
    return data


def feedback_pages(out: Path, sources, students) -> dict:
    """student -> the link to their feedback page from OUT/report.html: OUT's own (export --from copies the
    shards' pages there), else the newest a shard holds; students without a page are left out."""
    from urllib.parse import quote
    pages = {}
    for student in students:
        found = [p for p in (feedback_page(Path(f), student) for f in [out, *sources]) if p.is_file()]
        if found:
            page = found[0] if found[0].is_relative_to(out) else max(found, key=lambda p: p.stat().st_mtime)
            pages[student] = quote(os.path.relpath(page, out))
    return pages


def _shown_url(db_url: str) -> str:
    """The gradebook's URL without its password, to name it in a message."""
    from sqlalchemy.engine import make_url
    try:
        return make_url(db_url).render_as_string(hide_password=True)
    except Exception:
        return "the gradebook's URL"


def _newest_readable(out: Path, sources, student: str):
    """(the newest record of `student` that can be read, or None; why the others cannot)."""
    found, problems = [], []
    for folder in [Path(out), *map(Path, sources)]:
        path = state_path(folder, student)
        if path.is_file():
            try:
                found.append((path.stat().st_mtime, read_state(folder, student)))
            except (OSError, ValueError) as exc:
                problems.append(str(exc))
    if found:
        return max(found, key=lambda f: f[0])[1], ""
    return None, "; ".join(problems)


# ---- 2. The summaries ----

@dataclass
class Rate:
    item: str
    behaviour: object             # rubric.Behaviour
    passed: int
    judged: int
    failing: list                 # the students it fails for

    @property
    def rate(self) -> float:
        return self.passed / self.judged if self.judged else 1.0


def judged_items(records: dict):
    """(student, item id, the item's record) for each item graded on a student's code: not set aside for review."""
    for student, record in sorted(records.items()):
        for item_id, item in record.items.items():
            if item.get("rubric") and item_id not in record.review:
                yield student, item_id, item


def passes(entry: dict) -> bool:
    return float(entry.get("score", 0.0)) >= float(entry.get("max_score", 0.0)) - 1e-9


def pass_rates(records: dict) -> list:
    """Each behaviour of each autograded item: how many of the students graded on it pass, worst first (then
    central before the rest, then in the lesson's order)."""
    rates = {(i.id, b.id): Rate(i.id, b, 0, 0, []) for i in AUTO_ITEMS for b in behaviours(i.id)}
    for student, item_id, item in judged_items(records):
        for behaviour_id, entry in item["rubric"].items():
            rate = rates.get((item_id, behaviour_id))
            if rate is None:  # a behaviour the rubric no longer has (a record older than the rubric)
                continue
            rate.judged += 1
            if passes(entry):
                rate.passed += 1
            else:
                rate.failing.append(student)
    order = list(rates)
    return sorted((r for r in rates.values() if r.judged),
                  key=lambda r: (r.rate, not r.behaviour.central, order.index((r.item, r.behaviour.id))))


@dataclass
class Group:
    wording: str                  # the messages' common wording, VARIES where their numbers differ
    students: list                # who got it, sorted

    @property
    def count(self) -> int:
        return len(self.students)


def without_numbers(message: str) -> str:
    """The wording of a message: every number, as a word of its own, replaced by VARIES."""
    return NUMBER.sub(VARIES, message)


def common_wording(messages: list) -> str:
    """The wording of messages that differ at most in their numbers: the numbers they share, VARIES elsewhere."""
    words = NUMBER.split(messages[0])  # the text between the numbers, the same in every message
    numbers = zip(*(NUMBER.findall(m) for m in messages))  # position by position
    kept = [values[0] if len(set(values)) == 1 else VARIES for values in numbers]
    return "".join(w + n for w, n in zip(words, kept + [""]))


def message_groups(records: dict, item_id: str, behaviour_id: str) -> list:
    """What the failing checks of one behaviour said across the class: one Group per wording, most students first."""
    said = {}  # wording without numbers -> {student: [messages]}
    for student, this_item, item in judged_items(records):
        entry = item["rubric"].get(behaviour_id) if this_item == item_id else None
        if entry is None or passes(entry):
            continue
        for message in item.get("messages", {}).get(behaviour_id) or [NO_MESSAGE]:
            said.setdefault(without_numbers(message), {}).setdefault(student, []).append(message)
    groups = [Group(common_wording([m for ms in by.values() for m in ms]), sorted(by)) for by in said.values()]
    return sorted(groups, key=lambda g: (-g.count, g.wording))


def slowest(records: dict, n: int = SLOWEST) -> list:
    """The `n` records whose grading took longest (records without a time are left out)."""
    timed = [r for r in records.values() if isinstance(r.seconds, (int, float))]
    return sorted(timed, key=lambda r: (-r.seconds, r.student))[:n]


# ---- 3. The page ----

def e(value) -> str:
    """Any text for an HTML page written without a template, escaped (similarity_page.py's)."""
    return html.escape(str(value), quote=True)


def stub_groups(records: dict) -> list:
    """Each item some students left as the stub: {"item", "students"}, once per item rather than once per behaviour."""
    stubs = {}
    for student, item_id, item in judged_items(records):
        if any(NOT_IMPLEMENTED in m for ms in item.get("messages", {}).values() for m in ms):
            stubs.setdefault(item_id, []).append(student)
    return [{"item": i.id, "students": stubs[i.id]} for i in ITEMS if i.id in stubs]


def failing_blocks(records: dict, rates: list) -> list:
    """What each failing behaviour's checks said, stubs left out (stub_groups counts them once per item)."""
    blocks = []
    for r in rates:
        if not r.failing:
            continue
        groups = [g for g in message_groups(records, r.item, r.behaviour.id) if NOT_IMPLEMENTED not in g.wording]
        if groups:
            blocks.append({"rate": r, "anchor": f"failing-{r.item}-{r.behaviour.id}", "groups": groups})
    return blocks


def page_data(data: ClassData) -> dict:
    """Everything the page shows, as plain data (the template, templates/class_report.html.j2, only lays it out)."""
    doc, records = data.doc, data.records
    rows = doc["students"]
    rates = pass_rates(records)
    judged = {}  # student -> {item: its rubric}, the items graded on their code (as pass_rates counts them)
    for student, item_id, item in judged_items(records):
        judged.setdefault(student, {})[item_id] = item["rubric"]
    not_graded = [(s, r) for s, r in sorted(rows.items()) if r["status"] in NOT_GRADED or s in data.unreadable]
    review = [(s, i, flags, rows.get(s, {}).get("overridden", {}).get(i) is not None)
              for s, rec in sorted(records.items()) for i, flags in sorted(rec.review.items())]
    counts = {}
    for r in rows.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    per_item = {}
    for items in data.waiting.values():
        for i in items:
            per_item[i] = per_item.get(i, 0) + 1
    total_svg, item_svgs = report_plots.plots(doc)
    h = REPORT_HEADINGS
    return {
        "title": f"{ASSIGNMENT}: class report", "students_n": students, "csp": CONTENT_SECURITY_POLICY, "h": h, "sections": SECTIONS,
        "summary": " ".join(filter(None, [
            report_summary(len(rows), counts, [r["total"] for r in report_plots.graded_rows(doc).values()],
                           len(review), len({s for s, *_ in review}), sum(map(len, data.waiting.values())),
                           len(data.waiting)), report_sections.summary(doc)])),
        "intro": report_intro(VARIES),
        "items": report_sections.item_columns(),
        "students": report_sections.student_rows(doc, {s: r.review for s, r in records.items()}, data.pages),
        "total_svg": Markup(total_svg), "item_svgs": [Markup(s) for s in item_svgs],
        "concepts": report_sections.concepts(rates, judged),
        "quiz": report_sections.quiz_letters(list(judged_items(records))), "quiz_item": report_sections.QUIZ_ITEM,
        "failing": [r for r in rates if r.failing], "passing": [r for r in rates if not r.failing],
        "all_pass": all_pass(sum(1 for r in rates if not r.failing)), "any_rates": bool(rates),
        "stubs": stub_groups(records), "blocks": failing_blocks(records, rates),
        "not_graded": [[s, r["status"], unreadable_record(data.unreadable[s]) if s in data.unreadable else r["reason"]]
                       for s, r in not_graded],
        "around": report_sections.around(doc),
        "review": [[s, i, "; ".join(map(str, flags)), h["scored_by_hand"] if done else h["waiting"]]
                   for s, i, flags, done in review],
        "waiting_items": per_item,
        "waiting": [[s, ", ".join(items), rows.get(s, {}).get("status", "")] for s, items in sorted(data.waiting.items())],
        "slowest": [[r.student, f"{r.seconds:.1f} s", r.status, f"{rows.get(r.student, {}).get('total', 0):g}"]
                    for r in slowest(records)],
    }


def _environment():
    """The report's Jinja2 environment: every value escaped unless marked safe (only the plots, drawn here)."""
    from jinja2 import Environment, FileSystemLoader, StrictUndefined
    return Environment(loader=FileSystemLoader(TEMPLATES), autoescape=True, undefined=StrictUndefined,
                       trim_blocks=True, lstrip_blocks=True)


def render(data: ClassData) -> str:
    """The report's HTML page."""
    return _environment().get_template(TEMPLATE).render(page_data(data))


SECTIONS = ("totals", "students", "concepts", "behaviours", "messages", "quiz", "items", "statuses", "review",
            "written", "slowest")


def write_report(out, db_url: str = None, sources=(), settings: Settings = None) -> Path:
    """Write OUT/report.html; returns its path (ReportError when `out` holds no graded class). `settings`: the
    course's (settings.py), for each submission's lateness."""
    out = Path(out).resolve()
    data = gather(out, db_url, sources, settings)
    path = out / REPORT
    write_atomic(path, render(data))
    return path

