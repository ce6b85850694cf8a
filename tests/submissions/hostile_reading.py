"""Submissions that read the sandbox's process for the answer: every route the fourth round of attacks
took (a stand-in's __globals__, frames up to the child's locals, the garbage collector, closures,
sys.modules, a class moved onto the answer), in one thief that every stub calls.

Held by the design, not by the audit hook: tests/integration/test_reading_earns_nothing.py grades them with the hook
off, where every route is open, and they must earn nothing; its control plants the reference's source in
the notebook, where the same thief then earns full marks. With the hook on (tests/integration/test_submissions.py)
they are denied, flagged, and earn nothing either.
"""
from autograder.items import AUTO_ITEMS

from . import NewCell, Replace, Variant
from .hostile import hostile

# one thief for every contract name: anything callable of that name that the notebook did not compile, or
# any text that defines it, reached from the frames, the garbage collector, sys.modules, a function's
# __globals__ and closure, a class's __dict__ and __mro__
THIEF = '''
import gc as _gc
import sys as _sys

_STOLEN = {}


def _ours(obj):
    for candidate in (obj, *(vars(obj).values() if isinstance(obj, type) else ())):
        code = getattr(candidate, "__code__", None)
        if code is not None:
            return code.co_filename.startswith("<cell ")
    return True


def _inside(obj):
    yield obj
    for name in ("__globals__", "__dict__"):
        try:
            yield from list(dict(getattr(obj, name)).values())
        except Exception:
            pass
    for cell in getattr(obj, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:
            pass
    if isinstance(obj, type):
        yield from obj.__mro__
    if isinstance(obj, dict):
        yield from list(obj.values())[:10000]
    if isinstance(obj, (list, tuple)):
        yield from list(obj)[:10000]


def _roots():
    frame = _sys._getframe(1)
    while frame is not None:
        yield frame.f_locals
        yield frame.f_globals
        frame = frame.f_back
    yield from list(_sys.modules.values())
    yield from _gc.get_objects()


def _from_source(text, name):
    import math
    namespace = {"torch": torch, "nn": torch.nn, "F": torch.nn.functional, "math": math}
    try:
        exec(text, namespace)
    except Exception:
        return None
    found = namespace.get(name)
    return found if found is not None and not _ours(found) else None


def _steal(name):
    if name in _STOLEN:
        return _STOLEN[name]
    seen = set()
    for root in _roots():
        for level_one in _inside(root):
            for obj in _inside(level_one):
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                if isinstance(obj, str):
                    if ("def " + name + "(" in obj or "class " + name in obj) and "_steal(" not in obj \\
                            and "NotImplementedError" not in obj:
                        found = _from_source(obj, name)
                        if found is not None:
                            _STOLEN[name] = found
                            return found
                elif getattr(obj, "__name__", None) == name and callable(obj) and not _ours(obj):
                    _STOLEN[name] = obj
                    return obj
    raise NotImplementedError(f"no answer to steal for {name}")
'''


def stub(name: str, cls: bool = False) -> str:
    if cls:
        return f'''
class {name}:
    def __new__(cls, *args, **kwargs):
        return _steal("{name}")(*args, **kwargs)
'''
    return f'''
def {name}(*args, **kwargs):
    return _steal("{name}")(*args, **kwargs)
'''


# every code item's contract names, from the exercises' declarations (a class's name is capitalised): a new
# exercise is attacked by the thief too
CONTRACT = tuple((item.id, name, name[:1].isupper()) for item in AUTO_ITEMS if item.code for name in item.names)
CODE_ITEMS = tuple(dict.fromkeys(item for item, _, _ in CONTRACT))


def thief_edits() -> tuple:
    """Every contract definition replaced by a stub that steals, the thief defined before the first."""
    return (NewCell("cell-01", THIEF),
            *(Replace(item, name, stub(name, cls)) for item, name, cls in CONTRACT))


# The fourth round's third route: a StaticLossScaler derived from a name the grader bound in, which the
# grader then moved onto the reference's class (whose MRO held the reference's StaticLossScaler).
REBASE = '''
class DynamicLossScaler:  # a placeholder base; the real one comes in Exercise 3's cell
    pass


class StaticLossScaler(DynamicLossScaler):
    def __init__(self, scale: float = 1024.0):
        super().__init__(scale)
'''

HOSTILE_READING = [
    hostile("reading_thief_every_route", *thief_edits(), expect={item: 0.0 for item in CODE_ITEMS}, flagged="*",
            doc="every stub steals its answer from whatever the process holds: the stand-ins' __globals__, the "
                "frames up to the child's locals, the garbage collector's objects, closures, sys.modules, and "
                "any text that defines the name"),
    hostile("reading_rebased_onto_the_answer", Replace("static_loss_scaler", "StaticLossScaler", REBASE),
            expect={"static_loss_scaler": 0.0}, rest="any",
            doc="a StaticLossScaler with only an __init__ calling super(), derived from a placeholder named "
                "DynamicLossScaler, hoping to be moved onto the reference's DynamicLossScaler"),
]


def planted(source: str) -> Variant:
    """The control: the thief, with the reference's code planted in the notebook as a string."""
    return Variant("reading_control_planted", "hostile",
                   (NewCell("cell-01", f"_PLANTED = {source!r}\n"), *thief_edits()),
                   doc="the thief, with the reference's code left in the notebook as text: it must find it")
