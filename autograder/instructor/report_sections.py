"""The class report's sections on the course around grading, from the grades.json document: the behaviours a
missing protection left unchecked, the submissions set aside as not the named student's, and each late or
uncertain submission. class_report.render puts them after the submissions not graded; every text is escaped.
"""
import html

from ..text import duration

HEADINGS = {
    "not_checked": "Not checked on this grading machine",
    "set_aside": "Submissions set aside",
    "late": "Late or uncertain submissions",
}
EMPTY = {
    "not_checked": "Every behaviour was checked: the sandbox had every protection.",
    "set_aside": "No submission was set aside.",
    "late": "No submission is late, and every submission's time is known.",
}


def e(value) -> str:
    return html.escape(str(value), quote=True)


def _table(head: list, rows: list, empty: str) -> str:
    if not rows:
        return f"<p class='empty'>{e(empty)}</p>"
    header = "".join(f"<th>{e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def _who(student: str) -> str:
    return f"<span class='student'>{e(student)}</span>"


def not_checked_rows(doc: dict) -> list:
    return [[_who(s), f"<code>{e(item)}</code>", ", ".join(f"<code>{e(b)}</code>" for b in behaviours),
             e(", ".join(row.get("weaker_isolation", [])))]
            for s, row in sorted(doc["students"].items())
            for item, behaviours in sorted(row.get("not_checked", {}).items())]


def set_aside_rows(doc: dict) -> list:
    entries = [(s, entry) for s, row in sorted(doc["students"].items()) for entry in row.get("set_aside", [])]
    entries += [("", entry) for entry in doc.get("set_aside", [])]
    return [[_who(s) if s else e("(no usable student id)"), e(entry.get("folder", "")), e(entry.get("owner", "")),
             e(entry.get("time") or ""), e(entry.get("reason", ""))] for s, entry in entries]


def late_rows(doc: dict) -> list:
    rows = []
    for s, row in sorted(doc["students"].items()):
        block = row.get("submission", {})
        late, flags = block.get("late_seconds"), block.get("flags", [])
        if not late and late is not None and not flags:
            continue
        lateness = "unknown" if late is None else duration(late) if late else "on time"
        rows.append([_who(s), e(block.get("time") or "not recorded"), e(block.get("due") or ""), e(lateness),
                     f"{block.get('penalty', 0):g}", e("; ".join(flags)), e(block.get("source", ""))])
    return rows


def sections(doc: dict) -> str:
    """The three sections' HTML."""
    tables = {
        "not_checked": _table(["student", "item", "behaviours not checked", "protections missing"],
                              not_checked_rows(doc), EMPTY["not_checked"]),
        "set_aside": _table(["named student", "exchange folder", "owner", "time", "why"], set_aside_rows(doc),
                            EMPTY["set_aside"]),
        "late": _table(["student", "counts as submitted", "due", "late by", "penalty", "flags", "time from"],
                       late_rows(doc), EMPTY["late"]),
    }
    return "".join(f"<section id='{key}'><h2>{e(HEADINGS[key])}</h2>{tables[key]}</section>" for key in HEADINGS)


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
