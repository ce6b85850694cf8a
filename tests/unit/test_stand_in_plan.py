"""autograder.stand_in_plan: an item's fork holds only exercises before it that its code uses, never its own."""
from autograder import stand_in_plan as stand_in
from autograder.instructor.reference import stand_in_units
from autograder.items import AUTO_ITEMS

UNITS = stand_in_units()
EVERY = ["\n".join(u["names"]) for u in UNITS["units"]]  # code that uses every exercise's names


def test_no_fork_holds_its_own_item_or_a_later_one():
    order = [item.id for item in AUTO_ITEMS]
    for item in AUTO_ITEMS:
        held = stand_in.held(item.id, UNITS)
        assert item.id not in held and all(order.index(h) < order.index(item.id) for h in held), (item.id, held)
    assert stand_in.held("underflow_fraction", UNITS) == []


def test_a_unit_comes_with_what_it_needs_and_is_bound_by_name():
    setup = stand_in.plan("mixed_precision_train_step", ["x = 1"], ["x = 1"], UNITS)  # uses nothing but `given`
    assert [u["item"] for u in setup["units"]] == ["static_loss_scaler", "dynamic_loss_scaler"]
    assert setup["bind"] == ["StaticLossScaler", "DynamicLossScaler"] and "import torch" in setup["imports"]


def test_only_what_the_items_code_uses_is_sent_followed_through_its_helpers():
    helper = "def _sync(model, masters):\n    master_params_to_model_params(model.parameters(), masters)"
    step = "def mixed_precision_train_step(*args):\n    return _sync(*args)"
    setup = stand_in.plan("mixed_precision_train_step", [step], [helper, step], UNITS)
    assert [u["item"] for u in setup["units"]] == ["static_loss_scaler", "dynamic_loss_scaler", "master_weights"]
    assert stand_in.plan("accumulate_gradients", ["def accumulate_gradients(): pass"], EVERY, UNITS) == {}


def test_a_later_exercise_named_in_an_earlier_one_is_never_sent():
    """A StaticLossScaler that derives from the notebook's DynamicLossScaler gets no stand-in for it: the
    reference's DynamicLossScaler derives from the reference's StaticLossScaler, the answer itself."""
    cheat = "class StaticLossScaler(DynamicLossScaler):\n    pass"
    assert stand_in.plan("static_loss_scaler", [cheat], [cheat], UNITS) == {}
    assert stand_in.plan("dynamic_loss_scaler", ["class DynamicLossScaler(StaticLossScaler): pass"], [],
                         UNITS)["bind"] == ["StaticLossScaler"]


def test_the_design_doc_says_what_each_fork_may_hold():
    from autograder.instructor import doc_tables
    from autograder.items import ROOT
    assert stand_in.table(UNITS) in (ROOT / doc_tables.DOC).read_text(), f"{doc_tables.DOC}'s stand-in table is stale"
    assert doc_tables.stand_ins_table() == stand_in.table(UNITS)