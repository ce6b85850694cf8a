"""autograder.instructor.report_plots: inline SVG histograms with no prolog, no metadata and ids of their own, one
for the totals and one per item that has scores."""
import re

from autograder.instructor.report_plots import histogram_svg, plots
from autograder.items import AUTO_ITEMS


def test_a_histogram_is_inline_svg_whose_ids_carry_its_name():
    svg = histogram_svg([0.0, 0.5, 1.0 + 1e-16, 1.0], 1.0, "an item (of 1)", 10, "plot-a")
    assert svg.startswith("<svg") and "<?xml" not in svg and "<metadata>" not in svg
    ids = re.findall(r'\bid="([^"]+)"', svg)
    assert ids and all(i.startswith("plot-a-") for i in ids)
    assert "an item (of 1)" in svg  # text as text, not as paths
    other = histogram_svg([0.0], 1.0, "another", 10, "plot-b")
    assert not set(ids) & set(re.findall(r'\bid="([^"]+)"', other))  # two plots on one page share no id


def test_the_totals_and_each_item_with_scores_are_plotted():
    items = {i.id: {"score": 0.0, "max_score": float(i.points)} for i in AUTO_ITEMS}
    rows = {"ada": {"status": "graded", "items": items, "total": 0.0, "max_total": 14.0},
            "bob": {"status": "error", "items": {}, "total": 0.0, "max_total": 0.0}}  # the grader's fault: left out
    total, each = plots({"students": rows})
    assert "total, out of 14" in total and len(each) == len(AUTO_ITEMS)
    assert plots({"students": {}})[1] == []
