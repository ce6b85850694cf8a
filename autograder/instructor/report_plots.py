"""The class report's plots: histograms of the totals and of each item's scores, as inline SVG drawn by
matplotlib on the Agg canvas (no XML prolog or metadata, so the page needs no request to show them)."""
import io
import re

from ..items import AUTO_ITEMS, ITEMS


def histogram_svg(values: list, top: float, title: str, bins: int, name: str) -> str:
    """A histogram of scores from 0 to `top`, as inline SVG (every id starts with `name`, so several plots on one
    page share none)."""
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


def graded_rows(doc: dict) -> dict:
    """grades.json's rows of the students whose grading ended (any status but the grader's own "error")."""
    return {s: r for s, r in doc["students"].items() if r["status"] != "error"}


def plots(doc: dict) -> tuple:
    """(the totals' histogram, each item's), from the grades.json document."""
    rows = graded_rows(doc)
    totals = [r["total"] for r in rows.values()]
    top = max([r["max_total"] for r in rows.values()] or [float(sum(i.points for i in AUTO_ITEMS))])
    total = histogram_svg(totals, top, f"total, out of {top:g}", max(10, min(30, int(top + 0.999))), "total")
    items = []
    for item in ITEMS:
        scores = [r["items"][item.id]["score"] for r in rows.values() if item.id in r["items"]]
        if scores:
            items.append(histogram_svg(scores, float(item.points), f"{item.id} (of {item.points:g})", 10, item.id))
    return total, items
