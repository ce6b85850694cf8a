"""The rubric of each auto-graded item: the behaviours its exercise asks for, and their points.

An instructor changes how an item's points are split in the exercise's declaration,
autograder/exercises/<id>/__init__.py; this module reads them and scores. A behaviour earns
its points only if every check marked with it passes, visible and hidden, every parametrised
case included. A central behaviour is what the exercise is about: when it fails, the item
keeps at most half its points, whatever else passes.

Each check names the behaviour it decides beside its code, `@pytest.mark.behaviour(id)` in
`exercises/<item>/test_<item>.py` (visible) and `instructor/exercises/<item>/test_<item>.py` (hidden, not
shipped to students), so this table names no check. A check whose marker is missing or names no behaviour
here stops the run at collection (runner.behaviour).
"""
from .exercise import Behaviour  # noqa: F401  (rubric.Behaviour: the type of RUBRIC's entries)
from .exercises import EXERCISES


# behaviours of each auto-graded item, and why its central ones are its exercise's point (a central failure caps
# the item at half): read from the exercises' declarations (autograder/exercises/<id>/)
RUBRIC = {e.id: e.behaviours for e in EXERCISES}
WHY_CENTRAL = {e.id: e.why_central for e in EXERCISES}


def behaviours(item_id: str) -> tuple:
    """The behaviours of an auto-graded item, or a KeyError that lists the items that have some."""
    try:
        return RUBRIC[item_id]
    except KeyError:
        raise KeyError(f"no rubric for {item_id!r}; items with one: {', '.join(RUBRIC)}") from None


def judge(item, outcomes) -> list:
    """Per behaviour of `item`, as plain data: its points, what it earned, and its failing checks.

    A behaviour no check ran on (the notebook runs no hidden check) earns None. A failing outcome
    that belongs to no check (the grader's "your code ran", when the submission could not start)
    counts against every behaviour. A behaviour that a check could not check on this grading machine
    (reason "not_checked": a protection it needs is missing) and that fails nothing else earns 0, is marked
    "not_checked", and caps nothing: it is neither passed nor failed.
    """
    mine = {b.id: [] for b in behaviours(item.id)}
    against_all = []
    for o in outcomes:
        if o.behaviour in mine:
            mine[o.behaviour].append(o)
        elif not o.passed:
            against_all.append(o)
    results = []
    for b in behaviours(item.id):
        ran = mine[b.id] + against_all
        failing = [o for o in ran if not o.passed]
        unchecked = bool(failing) and all(o.reason == "not_checked" for o in failing)
        results.append({
            "id": b.id, "description": b.text, "points": b.points, "central": b.central, "not_checked": unchecked,
            "earned": None if not ran else 0.0 if failing else float(b.points),
            "passed": len(ran) - len(failing), "total": len(ran),
            "failures": [{"name": o.name, "message": o.message, "hidden": o.hidden, "reason": o.reason}
                         for o in failing],
        })
    return results


def score(item, judged: list) -> float:
    """The item's score from `judge`: the points of the behaviours that pass, scaled up to the item's
    points when some were not checked, and at most half when a central one fails."""
    checked = [b for b in judged if b["earned"] is not None]
    possible = sum(b["points"] for b in checked)
    if not possible:
        return 0.0
    earned = item.points * sum(b["earned"] for b in checked) / possible
    if capped(judged):
        earned = min(earned, item.points / 2)
    return round(earned, 4)


def capped(judged: list) -> bool:
    """Whether a central behaviour failed, which leaves the item at most half its points."""
    return any(b["central"] and b["earned"] == 0 and not b.get("not_checked") for b in judged)


def not_checked(judged: list) -> list:
    """The behaviours that could not be checked on this grading machine (see judge)."""
    return [b["id"] for b in judged if b.get("not_checked")]
