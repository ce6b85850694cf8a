"""Student-facing reports of check outcomes, as plain text and as HTML: the item's rubric, each
behaviour with its points, and under a failing behaviour what its failing checks said."""
import html

from .rubric import capped
from .text import (CAPPED, CAUSE_FOUND, CENTRAL, HIDDEN_CHECK, NO_CHECKS, NOT_CHECKED_HERE, NOT_IMPLEMENTED, SAME_PROBLEM,
                   UNCHECKED, partial_summary, summary)


def verified(result) -> tuple:
    """(points earned, points checked, points waiting) of the behaviours the checks that ran decide; the
    waiting ones are checked only when the notebook is graded (hidden checks). The earned points are capped
    at half the item's when a central behaviour fails, as the score is."""
    judged = result.behaviours()
    checked = [b for b in judged if b["earned"] is not None]
    earned = sum(b["earned"] for b in checked)
    if capped(judged):
        earned = min(earned, result.item.points / 2)
    return (earned, sum(b["points"] for b in checked), sum(b["points"] for b in judged if b["earned"] is None))


def _summary(result) -> str:
    """The header: how many behaviours (the bullets below it) pass, and the points they earn; where some are
    checked only when the notebook is graded, the points verified here and the points still waiting."""
    judged = result.behaviours()
    checked = [b for b in judged if b["earned"] is not None]
    passing = sum(1 for b in checked if b["earned"])
    if len(checked) == len(judged):
        return summary(result.item.id, passing, len(judged), result.score, result.item.points)
    earned, possible, waiting = verified(result)
    return partial_summary(result.item.id, passing, len(checked), earned, possible, waiting)


def _single_reason(result):
    """One message for the whole item when every check failed the same way, else None."""
    if not result.outcomes or result.passed:
        return None
    if all(o.reason == "not_implemented" for o in result.outcomes):
        return NOT_IMPLEMENTED
    messages = {o.message for o in result.outcomes}
    reasons = {o.reason for o in result.outcomes}
    if len(messages) == 1 or (len(reasons) == 1 and reasons.pop() in ("missing", "timeout", "crashed")):
        return result.outcomes[0].message
    return None


def _rows(result):
    """(mark, points, text, failing checks as (title, message or "same problem as above")) per behaviour."""
    previous = None
    for b in result.behaviours():
        text = b["description"] + (CENTRAL if b["central"] else "")
        if b["earned"] is None:
            yield "·", f"–/{b['points']:g}", f"{text} ({UNCHECKED})", []
            continue
        failures = []
        for f in b["failures"]:
            title = f["name"] + (HIDDEN_CHECK if f["hidden"] else "")
            failures.append((title, SAME_PROBLEM if f["message"] == previous else f["message"]))
            previous = f["message"]
        if b.get("not_checked"):
            yield "?", f"–/{b['points']:g}", f"{text} ({NOT_CHECKED_HERE})", failures
            continue
        yield ("✓" if b["earned"] else "✗"), f"{b['earned']:g}/{b['points']:g}", text, failures


def first_failure(result) -> str:
    """The first thing the item's report says went wrong: its one reason, the cause its diagnosis found, or its
    first failing check's message; "" when nothing failed."""
    if not result.outcomes:
        return NO_CHECKS
    reason = _single_reason(result) or result.diagnosis
    if reason:
        return reason
    return next((f["message"] for b in result.behaviours() if b["earned"] is not None for f in b["failures"]), "")


def item_text(result) -> str:
    lines = [_summary(result)]
    if not result.outcomes:
        return lines[0] + "\n  " + NO_CHECKS
    reason = _single_reason(result)
    if reason:
        return lines[0] + "\n  " + reason
    if result.diagnosis:
        lines.append("  " + CAUSE_FOUND + result.diagnosis)
    for mark, points, text, failures in _rows(result):
        lines.append(f"  {mark} {points:<9} {text}")
        for title, message in failures:
            lines += [f"        FAIL  {title}", f"              {message}"]
    if capped(result.behaviours()):
        lines.append("  " + CAPPED)
    return "\n".join(lines)


def item_html(result) -> str:
    ok = result.outcomes and result.passed == len(result.outcomes)
    colour = "#2e7d32" if ok else "#c62828"
    mark = "&#10003;" if ok else "&#10007;"
    head = f"<div style='font-weight:bold;color:{colour}'>{mark} {html.escape(_summary(result))}</div>"
    reason = _single_reason(result)
    if reason:
        body = f"<div>{html.escape(reason)}</div>"
    else:
        rows = []
        for sign, points, text, failures in _rows(result):
            checks = "".join(f"<li style='list-style:none'>&#10007; {html.escape(title)}"
                             f"<div style='margin-left:1.5em'>{html.escape(message)}</div></li>"
                             for title, message in failures)
            detail = f"<ul style='margin:0.2em 0;padding-left:1.5em'>{checks}</ul>" if checks else ""
            rows.append(f"<li style='list-style:none'>{html.escape(sign)} <b>{html.escape(points)}</b> "
                        f"{html.escape(text)}{detail}</li>")
        cap = f"<div>{html.escape(CAPPED)}</div>" if capped(result.behaviours()) else ""
        cause = f"<div><b>{html.escape(CAUSE_FOUND + result.diagnosis)}</b></div>" if result.diagnosis else ""
        body = f"{cause}<ul style='margin:0.3em 0;padding-left:0.5em'>{''.join(rows)}</ul>{cap}"
    status = "pass" if ok else "fail"
    return (f"<div class='lesson20-check lesson20-check-{status}' "
            f"style='border-left:4px solid {colour};padding:0.4em 0.8em'>{head}{body}</div>")
