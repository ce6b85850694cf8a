"""Hostile submissions against the grader's own process: answers built to blow up when they are read back.

Each is small where it is made and huge once written out, copied or cast in the grader: a tensor whose
storage holds 1 of the 10^9 elements it claims, a list that shares its sublists 30 levels deep, a list
nested 10^5 levels, a 60 MB string, a dict of 10^6 keys. Most try to reach the grader by making the
probe, for one call, report a value of their choosing through the caller's frame; the sandbox's guard
now denies that frame and sets the submission aside for review (`flagged`), so these stand for any way
a forged answer might still get out, which the decoder (autograder/sandbox/decode.py, tests/unit/
test_decode.py) refuses in bounded memory. The deep list, which Python's pickler cannot write, also
replaces the pickler.

Each must end fast, with the attacked item scoring no more than its honest code earns and every other
item at full marks (tests/integration/test_submissions.py); tests/integration/test_grader_memory.py measures the grader's peak
memory on them against the reference.
"""
import textwrap

from . import Append, Replace
from .hostile import hostile

# the grader's probe, for the call in progress only, reports what the student chose
FORGE = '''
import sys as _sys


def _forge(**names):
    """Rebind names in the probe module that called the exercise (frames: _forge <- exercise <- probe)."""
    _sys._getframe(2).f_globals.update(names)
'''

EXPAND_BOMB = FORGE + '''

def _expand_bomb(tensor):
    return torch.zeros(1).expand(10**9)   # 10^9 elements claimed, 4 bytes stored
'''

SHARED_LIST_BOMB = FORGE + '''

def _shared_list_bomb(value, depth=0):
    bomb = []
    for _ in range(30):
        bomb = [bomb, bomb]               # 2^30 leaves once written out, a few hundred bytes pickled
    return {"type": "list", "items": bomb, "length": 2}
'''

DEEP_LIST = FORGE + '''
import pickle as _pickle
import struct as _struct

_MARK = "lesson20-deep-list"


def _text(s):
    return b"X" + _struct.pack("<I", len(s)) + s.encode()


class _DeepPickler(_pickle.Pickler):
    """Writes an answer that carries _MARK as {"status": "ok", "result": [[[...]]]}, 10^5 lists deep."""

    def __init__(self, file, *args, **kwargs):
        super().__init__(file, *args, **kwargs)
        self._file = file

    def dump(self, obj):
        if not (isinstance(obj, dict) and obj.get("result") == _MARK):
            return super().dump(obj)
        depth = 10**5
        self._file.write(b"\\x80\\x02}" + _text("status") + _text("ok") + b"s" + _text("result")
                         + b"]" * depth + b"a" * (depth - 1) + b"s.")


def _deep_list(value, depth=0):
    _pickle.Pickler = _DeepPickler        # torch.save subclasses whatever pickle.Pickler is at the time
    return _MARK
'''

DICT_BOMB = FORGE + '''

def _dict_bomb(value, depth=0):
    return {"type": "dict", "value": {i: None for i in range(10**6)}}
'''

HONEST_UNDERFLOW = '''
nonzero = values != 0
count = int(nonzero.sum())
result = 0.0 if count == 0 else int((nonzero & (values.to(dtype) == 0)).sum()) / count
'''


def underflow_forging(name, prelude, forged, doc):
    """underflow_fraction computes the right answer, then has the probe report `forged` instead."""
    source = ("def underflow_fraction(values, dtype=torch.float16):\n"
              + textwrap.indent(HONEST_UNDERFLOW.strip(), "    ") + f"\n    _forge({forged})\n    return result\n")
    return hostile(name, Append("underflow_fraction", prelude, first=True),
                   Replace("underflow_fraction", "underflow_fraction", source),
                   expect={"underflow_fraction": 0.0}, flagged="*", doc=doc)


HOSTILE_DECODING = [
    underflow_forging("hostile_expand_bomb", EXPAND_BOMB, "plain_tensor=_expand_bomb",
                      "the probe reports its input back as a stride-0 expand: 10^9 elements from 4 bytes"),
    hostile("hostile_expand_bomb_masters", Append("master_weights", EXPAND_BOMB, first=True),
            Replace("master_weights", "make_master_params", '''
            def make_master_params(model):
                _forge(plain_tensor=_expand_bomb)
                return [p.detach().clone().float().requires_grad_(True) for p in model.parameters()]
            '''), expect={"master_weights": "less"}, flagged="*",
            doc="make_master_params's masters come back as 10^9-element stride-0 views"),
    underflow_forging("hostile_shared_list_bomb", SHARED_LIST_BOMB, "describe=_shared_list_bomb",
                      "the result is a list that shares its sublists 30 levels deep (2^30 leaves)"),
    underflow_forging("hostile_deep_list", DEEP_LIST, "describe=_deep_list",
                      "the result is a list nested 10^5 levels deep, written by a replaced pickler"),
    underflow_forging("hostile_dict_bomb", DICT_BOMB, "describe=_dict_bomb", "the result is a dict of 10^6 keys"),
    hostile("hostile_huge_string", Replace("underflow_fraction", "underflow_fraction", '''
            def underflow_fraction(values, dtype=torch.float16):
                return "x" * (60 << 20)
            '''), twin="underflow_forgets_return", doc="returns a 60 MiB string, which the probe carries back as is"),
]
