"""Submissions that carry the reference's code out through the messages (issue 44, point 5).

While an item is graded, its fork holds the reference's code for the earlier exercises its code uses (stand-ins,
docs/grading-design.md "No fork holds its own item's reference"). Each variant here reaches those stand-ins by name, with no
tampering, and raises them, encoded, from the item's own function: the check's message then quotes them, and
without scrub.py they reached the feedback page. tests/integration/test_reference_leak.py grades them through
`grade` and searches every feedback page for the reference's code in each encoding; the corpus holds their scores
(the attacked item loses its points, but for raising ValueError where a batch has no counted token).
"""
from . import Replace
from .hostile import hostile

# the earlier exercises' code this item's fork holds while it is graded (all of them are named here, so all are
# handed over), encoded by `how`, raised with as much as a message keeps
LEAK = '''
def {name}(*args, **kwargs):
    import base64 as _b64
    import dis as _dis
    import types as _types
    held = [accumulate_gradients, mixed_precision_train_step, make_master_params, model_grads_to_master_grads,
            master_params_to_model_params, underflow_fraction, StaticLossScaler, DynamicLossScaler]
    codes = []
    for obj in held:
        for candidate in (obj, *vars(obj).values()) if isinstance(obj, type) else (obj,):
            if isinstance(getattr(candidate, "__code__", None), _types.CodeType):
                codes.append(candidate.__code__)
    how = {how!r}
    if how == "hex":
        text = " ".join(c.co_code.hex() for c in codes)
    elif how == "base64":
        text = " ".join(_b64.b64encode(c.co_code).decode() for c in codes)
    elif how == "repr":
        text = " ".join(repr(c.co_code) for c in codes)
    elif how == "numbers":
        text = " ".join(str(list(c.co_code)) for c in codes)
    elif how == "dis":
        text = "\\n".join(_dis.Bytecode(c).dis() for c in codes)
    else:  # names and constants
        text = " ".join(repr((c.co_names, c.co_varnames, c.co_consts)) for c in codes)
    raise ValueError(text[:{offset}] if {offset} < 0 else text[{offset}:])
'''
ENCODINGS = ("hex", "base64", "repr", "numbers", "dis", "names")
ITEM, NAME = "token_accumulation", "accumulate_token_gradients"  # the last exercise: its fork holds the most


def leak(how: str, offset: int = 0) -> str:
    return LEAK.format(name=NAME, how=how, offset=offset)


HOSTILE_LEAK = [
    hostile(f"leak_reference_{how}" + (f"_from_{offset}" if offset else ""), Replace(ITEM, NAME, leak(how, offset)), expect={ITEM: "less"},
            doc=f"the token item's function raises the stand-ins' code ({how}{f', from character {offset}' if offset else ''}) "
                "that its fork holds for the earlier exercises, so that the checks' messages quote it")
    for how in ENCODINGS for offset in ((0, 300) if how != "names" else (0,))
]
