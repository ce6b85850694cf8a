"""OUT/similarity.html: the pairs of students whose solution code is most alike, for an instructor to read.

The class report's conventions (class_report.py): every text that came from a student (a folder name, their
code) is escaped, there is no script, and the same Content-Security-Policy forbids one and any request, so
the page opens from a file without a network. Each pair shows the two cells side by side with the shared
parts marked (<mark>); what was left out before comparing (stub, reference, the class's common code) is not.
"""
from pathlib import Path

from ..items import ASSIGNMENT
from .messages import SIMILARITY, similarity_intro
from .class_report import CONTENT_SECURITY_POLICY, e
from .files import write_atomic
from .similarity import Cells, Pair

PAGE = "similarity.html"
TOP_PAIRS = 30      # pairs shown in full, those to review first
TOP_PER_ITEM = 10   # pairs listed under each exercise


def marked(source: str, spans) -> str:
    """The cell's code, escaped, with each shared span in <mark>."""
    parts, at = [], 0
    for start, end in sorted(spans):
        start, end = max(start, at), min(end, len(source))
        if start >= end:
            continue
        parts += [e(source[at:start]), f"<mark>{e(source[start:end])}</mark>"]
        at = end
    return "".join(parts + [e(source[at:])])


def _share(value: float) -> str:
    return f"{100 * value:.0f}%"


def _pair_rows(pairs: list, shown: dict) -> str:
    rows = []
    for place, p in enumerate(pairs, start=1):
        items = ", ".join(f"<code>{e(i)}</code> {_share(min(m.share_a, m.share_b))}–{_share(max(m.share_a, m.share_b))}"
                          for i, m in sorted(p.matches.items()))
        rows.append(f"<tr><td>{place}</td><td><a href='#{shown[p.a, p.b]}'><span class='student'>{e(p.a)}</span> · "
                    f"<span class='student'>{e(p.b)}</span></a></td><td>{p.best}</td><td>{p.shared}</td>"
                    f"<td>{items}</td></tr>")
    head = "".join(f"<th>{e(h)}</th>" for h in SIMILARITY["pair_columns"])
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _item_section(item: str, matches: list, shown: dict) -> str:
    if not matches:
        return f"<h3><code>{e(item)}</code></h3><p class='empty'>{e(SIMILARITY['no_match'])}</p>"
    rows = []
    for place, m in enumerate(matches[:TOP_PER_ITEM], start=1):
        who = f"<span class='student'>{e(m.a)}</span> · <span class='student'>{e(m.b)}</span>"
        if (m.a, m.b) in shown:
            who = f"<a href='#{shown[m.a, m.b]}'>{who}</a>"
        rows.append(f"<tr><td>{place}</td><td>{who}</td><td>{m.shared}</td><td>{_share(m.share_a)}</td>"
                    f"<td>{_share(m.share_b)}</td></tr>")
    head = "".join(f"<th>{e(h)}</th>" for h in SIMILARITY["item_columns"])
    return (f"<h3><code>{e(item)}</code></h3><table><thead><tr>{head}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def _pair_detail(pair: Pair, cells: Cells, anchor: str) -> str:
    blocks = []
    for item, m in sorted(pair.matches.items()):
        sides = [(m.a, m.share_a, m.spans_a), (m.b, m.share_b, m.spans_b)]
        columns = "".join(f"<div><p class='who'><span class='student'>{e(s)}</span>: {_share(share)} "
                          f"{e(SIMILARITY['shared'])}</p><pre>{marked(cells.code[item][s], spans)}</pre></div>"
                          for s, share, spans in sides)
        blocks.append(f"<h4><code>{e(item)}</code></h4><div class='sides'>{columns}</div>")
    return (f"<section class='pair' id='{anchor}'><h3><span class='student'>{e(pair.a)}</span> · "
            f"<span class='student'>{e(pair.b)}</span></h3>{''.join(blocks)}</section>")


def render(cells: Cells, matches: dict, pairs: list) -> str:
    """The page's HTML."""
    top = pairs[:TOP_PAIRS]
    shown = {(p.a, p.b): f"pair-{place}" for place, p in enumerate(top, start=1)}
    skipped = "".join(f"<li><span class='student'>{e(s)}</span>: {e(why)}</li>" for s, why in sorted(cells.skipped.items()))
    students = len({s for code in cells.code.values() for s in code})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">
<title>{e(ASSIGNMENT)}: {e(SIMILARITY['title'])}</title>
<style>{STYLE}</style></head>
<body>
<h1>{e(ASSIGNMENT)}: {e(SIMILARITY['title'])}</h1>
<p class="intro">{e(similarity_intro(students, len(pairs)))}</p>
<section id="pairs"><h2>{e(SIMILARITY['pairs'])}</h2>{_pair_rows(top, shown) if top else
    f"<p class='empty'>{e(SIMILARITY['no_match'])}</p>"}</section>
<section id="items"><h2>{e(SIMILARITY['items'])}</h2>{''.join(_item_section(i, m, shown) for i, m in matches.items())}
</section>
<section id="side-by-side"><h2>{e(SIMILARITY['side_by_side'])}</h2>{''.join(_pair_detail(p, cells, shown[p.a, p.b]) for p in top)}
</section>
{f"<section id='skipped'><h2>{e(SIMILARITY['skipped'])}</h2><ul>{skipped}</ul></section>" if skipped else ""}
</body></html>
"""


STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em 2em; color: #222; max-width: 1400px; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 1.6em; } h3, h4 { margin: 1em 0 0.3em; }
.intro, .empty, .who { color: #555; }
table { border-collapse: collapse; margin: 0.5em 0; } td, th { padding: 0.25em 0.6em; text-align: left;
  vertical-align: top; border-bottom: 1px solid #eee; }
.student { font-family: ui-monospace, monospace; }
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
.sides pre { background: #f7f7f7; padding: 0.5em; overflow-x: auto; white-space: pre-wrap; font-size: 12px; }
mark { background: #ffe08a; }
"""


def write_page(out, cells: Cells, matches: dict, pairs: list) -> Path:
    """Write OUT/similarity.html; returns its path."""
    path = Path(out) / PAGE
    write_atomic(path, render(cells, matches, pairs))
    return path
