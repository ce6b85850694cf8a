"""autograder.instructor.notebook_bounds: a notebook's structure measured on its bytes, against what
json.loads finds in the same document."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograder.instructor.notebook_bounds import Bounds, beyond
from tests.helpers import SOLUTION_NB

WIDE = Bounds(cells=10**9, list_strings=10**9, lines=10**9, depth=10**9)


def measured(doc) -> dict:
    """The figures the bounds are on, from the parsed document: the oracle the scanner is checked against."""
    figures = {"cells": len(doc.get("cells", [])) if isinstance(doc, dict) else 0,
               "list_strings": 0, "lines": 0, "depth": 0}

    def walk(value, depth, key):
        if isinstance(value, (dict, list)):
            figures["depth"] = max(figures["depth"], depth)
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, str) and k == "source":
                    figures["lines"] += v.count("\n")
                walk(v, depth + 1, k)
        elif isinstance(value, list):
            strings = [v for v in value if isinstance(v, str)]
            figures["list_strings"] = max(figures["list_strings"], len(strings))
            figures["lines"] += len(strings) + (sum(s.count("\n") for s in strings) if key == "source" else 0)
            for v in value:
                walk(v, depth + 1, None)

    walk(doc, 1, None)
    return figures


def first_passed(data: bytes, figures: dict) -> set:
    """Which bound beyond() says is passed when each bound is set just below its true figure."""
    found = set()
    for name, figure in figures.items():
        if figure == 0:
            continue
        bounds = Bounds(**{**WIDE.__dict__, name: figure - 1})
        found.add(beyond(data, bounds)[0])
        assert beyond(data, Bounds(**{**WIDE.__dict__, name: figure})) == (), name  # at the figure: passes
    return found


def test_the_lesson_notebook_is_measured_as_json_loads_sees_it():
    data = SOLUTION_NB.read_bytes()
    notebook = json.loads(data)
    figures = measured(notebook)
    lines = sum(len(c["source"]) if isinstance(c["source"], list) else c["source"].count("\n") + 1
                for c in notebook["cells"])
    assert figures["cells"] == len(notebook["cells"]) and figures["lines"] >= min(lines, 1000)
    assert first_passed(data, figures) == {name for name, f in figures.items() if f}


text = st.text(alphabet=st.sampled_from('ab"\\\n[]{},: \t\u00e9'), max_size=8)
json_value = st.recursive(st.none() | st.booleans() | st.integers() | text,
                          lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                              st.sampled_from(["source", "cells", "text", 'q"x', "a,b"]), inner, max_size=4),
                          max_leaves=30)
notebook = st.fixed_dictionaries({"cells": st.lists(st.dictionaries(st.sampled_from(["source", "metadata", "id"]),
                                                                   json_value, max_size=3), max_size=5),
                                  "metadata": json_value})


@settings(max_examples=150, deadline=None)
@given(notebook, st.sampled_from([None, 1]))
def test_any_document_is_measured_as_json_loads_sees_it(doc, indent):
    data = json.dumps(doc, indent=indent).encode()
    figures = measured(doc)
    assert first_passed(data, figures) == {name for name, f in figures.items() if f}


@pytest.mark.parametrize("bound,doc", [
    ("cells", {"cells": [{}] * 3}),
    ("list_strings", {"cells": [{"source": ["x"] * 3}]}),
    ("lines", {"cells": [{"source": "a\nb\nc\nd"}]}),
    ("depth", {"cells": [], "metadata": {"a": [[[]]]}}),
])
def test_each_bound_is_named(bound, doc):
    small = Bounds(cells=2, list_strings=2, lines=2, depth=4)
    assert beyond(json.dumps(doc).encode(), small)[0] == bound
