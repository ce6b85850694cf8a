"""`python -m autograder report`: one HTML page on how a graded class did, for its instructor.

Read from what grading keeps (state.py's records, and the gradebook through gradebook.collect, so a score
given in formgrader shows without an export first), in three steps that each stand alone:

1. `gather`: the records, the grades.json document and the written answers still to grade; a folder
   that holds no graded class stops here, with a message that names what is missing;
2. the summaries, plain functions of the records: `pass_rates` (each behaviour across the class, worst
   first) and `message_groups` (what a failing behaviour's checks said, grouped by their wording with the
   numbers stripped, so "off by 1.8e-01" and "off by 3.2e-02" are one mistake);
3. `render`: the page. Every text that came from a student (a folder name, a reason, a message that
   quotes their code) is escaped; the plots are inline SVG drawn by matplotlib on the Agg canvas; there
   is no script, and the page's Content-Security-Policy forbids one and any request, so it opens as it
   is, from a file, without a network.
"""
import html
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from ..rubric import behaviours
from ..text import (NO_MESSAGE, all_pass, REPORT_HEADINGS, gradebook_unreadable, no_gradebook, no_graded_class,
                    no_such_folder, report_intro, report_summary, students_said, unreadable_record)
from . import report_sections
from .files import write_atomic
from .gradebook import class_students, collect, normalise_db_url, waiting_for_hand
from .settings import Settings
from .state import read_state, state_path

REPORT = "report.html"
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
    return data


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
    """Any text for the page, escaped: it may be a student's (a folder name, a reason, a message)."""
    return html.escape(str(value), quote=True)


def histogram_svg(values: list, top: float, title: str, bins: int, name: str) -> str:
    """A histogram of scores from 0 to `top`, as inline SVG (no XML prolog or metadata; every id starts with
    `name`, so several plots on one page share none)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name, "font.size": 9}):  # text as text
        fig = Figure(figsize=(6.4, 2.4) if bins > 10 else (3.6, 2.0))
        FigureCanvasAgg(fig)
        ax = fig.add_subplot()
        top = top or 1.0
        shown = [min(max(v, 0.0), top) for v in values]  # a full score summed in floats may pass the top by 1e-16
        ax.hist(shown, bins=bins, range=(0, top), color="#3b6ea5", edgecolor="white")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("points")
        ax.set_ylabel("students")
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.spines[["top", "right"]].set_visible(False)
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None, "Creator": None})
    svg = buf.getvalue()
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg[svg.index("<svg"):], flags=re.S)
    # one page, several plots: each plot's ids (and what refers to them) get its name in front
    return re.sub(r'\b(id="|url\(#|href="#)', lambda m: f"{m.group(1)}{name}-", svg)


def _graded_rows(doc: dict) -> dict:
    return {s: r for s, r in doc["students"].items() if r["status"] != "error"}


def _plots(doc: dict) -> tuple:
    """(the totals' histogram, each item's), from the grades.json document."""
    rows = _graded_rows(doc)
    totals = [r["total"] for r in rows.values()]
    top = max([r["max_total"] for r in rows.values()] or [float(sum(i.points for i in AUTO_ITEMS))])
    total = histogram_svg(totals, top, f"total, out of {top:g}", max(10, min(30, int(top + 0.999))), "total")
    items = []
    for item in ITEMS:
        scores = [r["items"][item.id]["score"] for r in rows.values() if item.id in r["items"]]
        if scores:
            items.append(histogram_svg(scores, float(item.points), f"{item.id} (of {item.points:g})", 10, item.id))
    return total, items


def _student_list(students: list) -> str:
    return ", ".join(f"<span class='student'>{e(s)}</span>" for s in students)


def _rate_row(r: Rate) -> str:
    central = " <span class='central'>central</span>" if r.behaviour.central else ""
    colour = "#2e7d32" if r.rate >= 0.9 else "#ef6c00" if r.rate >= 0.6 else "#c62828"
    text = e(r.behaviour.text)
    if r.failing:  # to what its failing checks said
        text = f"<a href='#{_anchor(r)}'>{text}</a>"
    return (f"<tr><td class='rate'><span class='bar'><span style='width:{100 * r.rate:.0f}%;background:{colour}'>"
            f"</span></span> {100 * r.rate:.0f}%</td><td>{r.passed} of {r.judged}</td>"
            f"<td><code>{e(r.item)}</code></td><td>{text}{central}</td></tr>")


def _anchor(r: Rate) -> str:
    return e(f"failing-{r.item}-{r.behaviour.id}")


def _rates_table(rates: list) -> str:
    """The behaviours that fail for someone, worst first; those that pass for everyone folded away below them."""
    head = "<thead><tr><th>pass rate</th><th>students</th><th>item</th><th>behaviour</th></tr></thead>"
    failing, passing = [r for r in rates if r.failing], [r for r in rates if not r.failing]
    table = f"<table class='rates'>{head}<tbody>{''.join(map(_rate_row, failing))}</tbody></table>" if failing else ""
    if passing:
        table += (f"<details><summary>{e(all_pass(len(passing)))}</summary><table class='rates'>{head}<tbody>"
                  f"{''.join(map(_rate_row, passing))}</tbody></table></details>")
    return table


def _messages_section(records: dict, rates: list) -> str:
    blocks = []
    for r in rates:
        if not r.failing:
            continue
        central = " <span class='central'>central</span>" if r.behaviour.central else ""
        groups = "".join(f"<li><b>{e(students_said(g.count, g.wording))}</b><div class='who'>"
                         f"{_student_list(g.students)}</div></li>"
                         for g in message_groups(records, r.item, r.behaviour.id))
        blocks.append(f"<div class='failing' id='{_anchor(r)}'>"
                      f"<h3><code>{e(r.item)}</code> {e(r.behaviour.text)}{central} "
                      f"<span class='count'>fails for {len(r.failing)} of {r.judged}</span></h3>"
                      f"<ul>{groups}</ul></div>")
    return "".join(blocks) or f"<p>{e(REPORT_HEADINGS['none_failing'])}</p>"


def _table(head: list, rows: list, empty: str, cls: str = "") -> str:
    if not rows:
        return f"<p class='empty'>{e(empty)}</p>"
    header = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table class='{cls}'><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def render(data: ClassData) -> str:
    """The report's HTML page."""
    doc, records = data.doc, data.records
    rows = doc["students"]
    rates = pass_rates(records)
    total_svg, item_svgs = _plots(doc)
    not_graded = [(s, r) for s, r in sorted(rows.items()) if r["status"] in NOT_GRADED or s in data.unreadable]
    review = [(s, i, flags, rows.get(s, {}).get("overridden", {}).get(i) is not None)
              for s, rec in sorted(records.items()) for i, flags in sorted(rec.review.items())]
    graded_totals = [r["total"] for r in _graded_rows(doc).values()]
    counts = {}
    for r in rows.values():
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    summary = report_summary(len(rows), counts, graded_totals, len(review), len({s for s, *_ in review}),
                             sum(map(len, data.waiting.values())), len(data.waiting))
    h = REPORT_HEADINGS

    status_rows = [[f"<span class='student'>{e(s)}</span>", f"<span class='status-{e(r['status'])}'>{e(r['status'])}"
                    "</span>", e(unreadable_record(data.unreadable[s]) if s in data.unreadable else r["reason"])]
                   for s, r in not_graded]
    review_rows = [[f"<span class='student'>{e(s)}</span>", f"<code>{e(i)}</code>", e("; ".join(map(str, flags))),
                    e(h["scored_by_hand"] if done else h["waiting"])] for s, i, flags, done in review]
    waiting_rows = [[f"<span class='student'>{e(s)}</span>", ", ".join(f"<code>{e(i)}</code>" for i in items),
                     e(rows.get(s, {}).get("status", ""))] for s, items in sorted(data.waiting.items())]
    per_item = {}
    for items in data.waiting.values():
        for i in items:
            per_item[i] = per_item.get(i, 0) + 1
    waiting_items = " · ".join(f"<code>{e(i)}</code>: {n}" for i, n in per_item.items())
    slow_rows = [[f"<span class='student'>{e(r.student)}</span>", f"{r.seconds:.1f} s", e(r.status),
                  f"{rows.get(r.student, {}).get('total', 0):g}"] for r in slowest(records)]

    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">
<title>{e(ASSIGNMENT)}: class report</title>
<style>{STYLE}</style></head>
<body>
<h1>{e(ASSIGNMENT)}: class report</h1>
<p class="summary" id="summary">{e(summary)} {e(report_sections.summary(doc))}</p>
<p class="intro">{e(report_intro(VARIES))}</p>
<nav>{" · ".join(f'<a href="#{k}">{e(h[k])}</a>' for k in SECTIONS)}</nav>
<section id="totals"><h2>{e(h['totals'])}</h2><div class="plot">{total_svg}</div></section>
<section id="behaviours"><h2>{e(h['behaviours'])}</h2>{_rates_table(rates) if rates else
    f"<p class='empty'>{e(h['no_rubric'])}</p>"}</section>
<section id="messages"><h2>{e(h['messages'])}</h2>{_messages_section(records, rates)}</section>
<section id="items"><h2>{e(h['items'])}</h2><div class="plots">{''.join(f'<div class="plot">{s}</div>'
    for s in item_svgs)}</div></section>
<section id="statuses"><h2>{e(h['statuses'])}</h2>{_table(['student', 'status', 'reason'], status_rows,
    h['all_graded'], 'statuses')}</section>
{report_sections.sections(doc)}
<section id="review"><h2>{e(h['review'])}</h2>{_table(['student', 'item', 'what was caught', 'score'], review_rows,
    h['none_set_aside'], 'review')}</section>
<section id="written"><h2>{e(h['written'])}</h2>{f'<p>{waiting_items}</p>' if waiting_items else ''}
{_table(['student', 'written answers without a score', 'status'], waiting_rows, h['none_waiting'], 'written')}</section>
<section id="slowest"><h2>{e(h['slowest'])}</h2>{_table(['student', 'grading took', 'status', 'total'], slow_rows,
    h['no_times'], 'slowest')}</section>
</body></html>
"""


SECTIONS = ("totals", "behaviours", "messages", "items", "statuses", "review", "written", "slowest")

STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1200px; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; }
h3 { font-size: 1em; margin: 1em 0 0.3em; }
.summary { font-size: 1.1em; } .intro, .empty, .who, .count { color: #555; }
nav a { color: #3b6ea5; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 0.25em 0.6em; text-align: left;
  vertical-align: top; border-bottom: 1px solid #eee; }
.rate { white-space: nowrap; } .bar { display: inline-block; width: 90px; height: 0.8em; background: #eee;
  vertical-align: middle; } .bar span { display: block; height: 100%; }
.central { font-size: 0.8em; background: #fde2e2; color: #a00; padding: 0 0.4em; border-radius: 3px; }
.plots { display: flex; flex-wrap: wrap; gap: 0.5em; } .plot svg { max-width: 100%; height: auto; }
.failing ul { margin: 0.2em 0; } .who { font-size: 0.9em; }
.status-failed, .status-error, .status-timeout { font-weight: bold; color: #c62828; }
.student { font-family: ui-monospace, monospace; }
"""


def write_report(out, db_url: str = None, sources=(), settings: Settings = None) -> Path:
    """Write OUT/report.html; returns its path (ReportError when `out` holds no graded class). `settings`: the
    course's (settings.py), for each submission's lateness."""
    out = Path(out).resolve()
    data = gather(out, db_url, sources, settings)
    path = out / REPORT
    write_atomic(path, render(data))
    return path

