"""The reference's code that stands in for other exercises' code while one exercise is graded.

The grader sends an item's fork only the stand-ins that item may use: the exercises before it that its code
uses, never its own (grading.stand_ins decides which). Each is compiled alone, into a namespace of its own
that holds the solution notebooks' imports and the stand-ins it needs (DynamicLossScaler's namespace holds
StaticLossScaler, its base), and nothing else: what a stand-in's __globals__ leads to is only that.

Only the standard library: worker.py loads this file by path inside the sandbox.
"""
import builtins


def source_label(item: str) -> str:
    """The file name a stand-in is compiled under (tracebacks skip what ends in "'s code>", as they skip the
    probes')."""
    return f"<{item}: the reference's code>"


def compile_stand_ins(imports: str, units: list, exec_=exec) -> dict:
    """{name: object} of every unit's names. units: [{"item", "names", "source", "needs"}], each after the
    ones it needs; a unit whose code fails (the notebook broke what it imports) is left out, with every unit
    that needs it."""
    done, objects = {}, {}
    for unit in units:
        item = str(unit.get("item", ""))
        needs = [str(n) for n in unit.get("needs") or []]
        if any(n not in done for n in needs):
            continue
        namespace = {"__name__": f"lesson20_standin_{item}", "__builtins__": builtins}
        try:
            exec_(compile(str(imports), source_label(item), "exec"), namespace)
            for need in needs:
                namespace.update(done[need])
            exec_(compile(str(unit.get("source", "")), source_label(item), "exec"), namespace)
        except BaseException:  # noqa: BLE001 - whatever it raised, the student's own code is used instead
            continue
        names = [str(n) for n in unit.get("names") or [] if str(n) in namespace]
        done[item] = {name: namespace[name] for name in names}
        objects.update(done[item])
    return objects


def bind_stand_ins(namespace: dict, stand_ins: dict, names: list):
    """Put the reference's `names` (from `stand_ins`) in the notebook's namespace for one request; return
    the function that puts the notebook's own back.

    The student's code looks these names up when it runs, so a step that calls model_grads_to_master_grads
    calls the reference's. A class of the notebook whose base is one of them (DynamicLossScaler deriving
    from the notebook's StaticLossScaler) derives from the reference's for the request: what it inherits is
    graded in its own item. Only plain classes (metaclass `type`) are touched, through type's own
    descriptors, so no code of the student's runs here.
    """
    missing = object()
    saved = {name: namespace.get(name, missing) for name in names if name in stand_ins}
    replaced = {id(old): stand_ins[name] for name, old in saved.items() if old is not missing}
    bases = type.__dict__["__bases__"]
    rebased = []
    for value in list(namespace.values()):
        if type(value) is not type or any(value is stand_ins.get(name) for name in saved):
            continue
        old = bases.__get__(value)
        new = tuple(replaced.get(id(b), b) for b in old)
        if any(a is not b for a, b in zip(new, old)):
            try:
                bases.__set__(value, new)
                rebased.append((value, old))
            except TypeError:  # a layout the reference's class cannot stand in for: leave it as it is
                pass
    for name in saved:
        namespace[name] = stand_ins[name]

    def restore():
        for value, old in rebased:
            try:
                bases.__set__(value, old)
            except TypeError:
                pass
        for name, old in saved.items():
            if old is missing:
                namespace.pop(name, None)
            else:
                namespace[name] = old
    return restore
