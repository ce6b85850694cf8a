"""autograder.sandbox.standins: each stand-in compiled alone, with only its imports and what it needs."""
from autograder.instructor.reference import stand_in_units
from autograder.sandbox.standins import bind_stand_ins, compile_stand_ins, source_label

UNITS = stand_in_units()
BY_ITEM = {u["item"]: u for u in UNITS["units"]}


def test_a_stand_ins_globals_hold_its_imports_and_what_it_needs_only():
    objects = compile_stand_ins(UNITS["imports"], [BY_ITEM["static_loss_scaler"], BY_ITEM["dynamic_loss_scaler"],
                                                   BY_ITEM["master_weights"]])
    assert set(objects) == {"StaticLossScaler", "DynamicLossScaler", "make_master_params",
                            "model_grads_to_master_grads", "master_params_to_model_params"}
    update = objects["DynamicLossScaler"].update
    contract = {n for u in UNITS["units"] for n in u["names"]}
    assert contract & set(update.__globals__) == {"StaticLossScaler", "DynamicLossScaler"}
    assert contract & set(objects["make_master_params"].__globals__) == set(BY_ITEM["master_weights"]["names"])
    assert update.__code__.co_filename == source_label("dynamic_loss_scaler")
    assert objects["DynamicLossScaler"].__mro__[1] is objects["StaticLossScaler"]


def test_a_unit_that_fails_is_left_out_with_what_needs_it():
    broken = {**BY_ITEM["static_loss_scaler"], "source": "raise ImportError('the notebook broke torch')"}
    objects = compile_stand_ins(UNITS["imports"], [broken, BY_ITEM["dynamic_loss_scaler"], BY_ITEM["underflow_fraction"]])
    assert set(objects) == {"underflow_fraction"}


def test_binding_rebases_the_notebooks_subclass_and_puts_everything_back():
    class StaticLossScaler:
        pass

    class DynamicLossScaler(StaticLossScaler):
        pass
    namespace = {"StaticLossScaler": StaticLossScaler, "DynamicLossScaler": DynamicLossScaler}
    objects = compile_stand_ins(UNITS["imports"], [BY_ITEM["static_loss_scaler"]])
    restore = bind_stand_ins(namespace, objects, ["StaticLossScaler"])
    assert namespace["StaticLossScaler"] is objects["StaticLossScaler"]
    assert DynamicLossScaler.__bases__ == (objects["StaticLossScaler"],)
    restore()
    assert namespace["StaticLossScaler"] is StaticLossScaler and DynamicLossScaler.__bases__ == (StaticLossScaler,)
