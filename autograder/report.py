"""Student-facing reports of check outcomes, as plain text and as HTML."""
import html


def _summary(result) -> str:
    total = len(result.outcomes)
    return (f"{result.item.id}: {result.passed} of {total} checks pass, "
            f"{result.score:g} of {result.item.points:g} points")


NOT_IMPLEMENTED = ("Not implemented yet: your code (or code it uses from an earlier exercise) still raises "
                   "NotImplementedError. Replace each "
                   "`raise NotImplementedError(...)` line with your code, run that cell, then run this check again.")


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


def item_text(result) -> str:
    lines = [_summary(result)]
    if not result.outcomes:
        return lines[0] + "\n  no checks ran"
    reason = _single_reason(result)
    if reason:
        return lines[0] + "\n  " + reason
    previous = None
    for o in result.outcomes:
        tag = "PASS" if o.passed else "FAIL"
        lines.append(f"  {tag}  {o.name}{' (hidden check)' if o.hidden else ''}")
        if not o.passed:
            lines.append("        " + ("same problem as above" if o.message == previous else o.message))
            previous = o.message
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
        for o in result.outcomes:
            sign = "&#10003;" if o.passed else "&#10007;"
            detail = "" if o.passed else f"<div style='margin-left:1.5em'>{html.escape(o.message)}</div>"
            rows.append(f"<li style='list-style:none'>{sign} {html.escape(o.name)}{detail}</li>")
        body = f"<ul style='margin:0.3em 0;padding-left:0.5em'>{''.join(rows)}</ul>"
    status = "pass" if ok else "fail"
    return (f"<div class='lesson20-check lesson20-check-{status}' "
            f"style='border-left:4px solid {colour};padding:0.4em 0.8em'>{head}{body}</div>")
