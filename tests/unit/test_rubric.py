"""autograder.rubric: a behaviour earns its points only when every check marked with it passes; unchecked
behaviours scale the rest up; a failing central behaviour caps the item at half (tests/test_rubric.py holds
the rubric to the checks' markers and the corpus). Scores are compared with a sum written out here."""
import pytest

from autograder.items import get_item
from autograder.rubric import RUBRIC, WHY_CENTRAL, behaviours, judge, score
from autograder.runner import Outcome

ITEM = get_item("accumulate_gradients")


def outcomes(failing=(), unchecked=()):
    """One passing outcome per behaviour, a failing one added for each behaviour in `failing`."""
    found = [Outcome(b.id, True, behaviour=b.id) for b in behaviours(ITEM.id) if b.id not in unchecked]
    return found + [Outcome(f"{b} fails", False, "wrong", behaviour=b) for b in failing]


def test_every_behaviour_passing_earns_the_items_points():
    assert score(ITEM, judge(ITEM, outcomes())) == ITEM.points


def test_a_failing_side_behaviour_costs_its_points_only():
    side = next(b for b in behaviours(ITEM.id) if not b.central)
    assert score(ITEM, judge(ITEM, outcomes([side.id]))) == pytest.approx(ITEM.points - side.points)


def test_a_failing_central_behaviour_caps_the_item_at_half():
    central = next(b for b in behaviours(ITEM.id) if b.central)
    expected = min(ITEM.points - central.points, ITEM.points / 2)
    assert score(ITEM, judge(ITEM, outcomes([central.id]))) == pytest.approx(expected)


def test_unchecked_behaviours_scale_the_checked_ones_up_to_the_items_points():
    side = [b for b in behaviours(ITEM.id) if not b.central]
    judged = judge(ITEM, outcomes([side[0].id], unchecked=[side[1].id]))
    assert next(b for b in judged if b["id"] == side[1].id)["earned"] is None
    checked = sum(b.points for b in behaviours(ITEM.id)) - side[1].points
    assert score(ITEM, judged) == round(ITEM.points * (checked - side[0].points) / checked, 4)  # to 4 places


def test_a_failure_that_belongs_to_no_behaviour_counts_against_every_one():
    judged = judge(ITEM, outcomes() + [Outcome("your code ran", False, "it did not")])
    assert all(b["earned"] == 0 for b in judged) and score(ITEM, judged) == 0


def test_every_items_points_are_split_and_its_central_behaviours_say_why():
    for item_id, found in RUBRIC.items():
        assert sum(b.points for b in found) == pytest.approx(get_item(item_id).points)
        assert any(b.central for b in found) and WHY_CENTRAL[item_id]
    with pytest.raises(KeyError, match="items with one"):
        behaviours("practice_q1")


def test_a_behaviour_not_checked_earns_nothing_and_caps_nothing():
    central = next(b for b in behaviours(ITEM.id) if b.central)
    found = outcomes() + [Outcome("memory", False, "no cgroup", reason="not_checked", behaviour=central.id)]
    judged = judge(ITEM, found)
    entry = next(b for b in judged if b["id"] == central.id)
    assert entry["not_checked"] and entry["earned"] == 0.0
    assert score(ITEM, judged) == pytest.approx(ITEM.points - central.points)  # withheld, not capped at half
    # a real failure beside it is a failure: then the cap holds
    failing = judge(ITEM, found + [Outcome("values", False, "wrong", behaviour=central.id)])
    assert not next(b for b in failing if b["id"] == central.id)["not_checked"]
    assert score(ITEM, failing) <= ITEM.points / 2
