"""The reference never reaches a student's page (issue 44, point 5): the leak corpus (tests/submissions/hostile_leak.py)
raises the stand-ins' code that a later item's fork holds, in plain encodings, and `grade` writes each one's feedback
page. Every page is searched for the reference's code, by an oracle made here from the reference's own code objects
and solution lines (not scrub.py's search): its bytecode as hex, base64 at each alignment, a bytes repr or numbers,
its disassembly's instruction names, its solution lines and its own local names. Run as a script, it prints what
each variant's raw report (grade_notebook, before scrubbing) would have shown: python -m tests.integration.test_reference_leak
"""
import base64
import dis
import html
import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autograder.items import ASSIGNMENT
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB, read, solution_regions
from tests.submissions import write_class
from tests.submissions.hostile_leak import HOSTILE_LEAK

pytestmark = pytest.mark.slow
WINDOW = 12  # bytes of bytecode in a row that count as a leak


def _codes(obj):
    for candidate in (obj, *vars(obj).values()) if isinstance(obj, type) else (obj,):
        code = getattr(candidate, "__code__", None)
        stack = [code] if code is not None else []
        while stack:
            code = stack.pop()
            yield code
            stack += [c for c in code.co_consts if hasattr(c, "co_code")]


def reference_marks() -> dict:
    """encoding -> the strings whose presence in a page means the reference's code is there."""
    from autograder.instructor.reference import reference_namespace
    namespace = reference_namespace()
    names = ("accumulate_gradients", "mixed_precision_train_step", "make_master_params", "model_grads_to_master_grads",
             "master_params_to_model_params", "underflow_fraction", "StaticLossScaler", "DynamicLossScaler")
    codes = [c for name in names for c in _codes(namespace[name])]
    # what any page may show: the student notebook, the checks' own words, the rubric, torch's API
    import torch

    from autograder.items import CHECKS_DIR, EXERCISES_DIR, HIDDEN_DIR
    from autograder.rubric import RUBRIC
    checks = [*CHECKS_DIR.glob("*.py"), *EXERCISES_DIR.glob("*/*.py"), *HIDDEN_DIR.glob("*.py"), *HIDDEN_DIR.glob("*/*.py")]
    public = " ".join([STUDENT_NB.read_text(), *(p.read_text() for p in checks if p.name != "oracles.py"),
                       *(b.text for bs in RUBRIC.values() for b in bs)])
    public_flat = " ".join(public.split())
    api = set(dir(torch)) | set(dir(torch.Tensor)) | set(dir(torch.nn.Module)) | set(dir(torch.optim.Optimizer))
    marks = {"hex": set(), "base64": set(), "repr": set(), "numbers": set(), "names": set()}
    for code in codes:
        raw = code.co_code
        for i in range(0, len(raw) - WINDOW, WINDOW // 2):
            window = raw[i:i + WINDOW]
            if len(set(window)) >= 4:
                marks["hex"].add(window.hex())
                marks["repr"].add(repr(window)[2:-1])
                marks["numbers"].add(", ".join(map(str, window)))
        for align in range(3):
            text = base64.b64encode(raw[align:]).decode()
            marks["base64"].update(text[j:j + 16] for j in range(0, len(text) - 16, 4))
        marks["names"].update(f"'{n}'" for n in code.co_varnames + code.co_names
                              if n not in public and n not in api and len(n) > 3 and not n.startswith("__"))
    marks["dis"] = {name for name in dis.opname if "_" in name and not name.startswith("<")}
    marks["source"] = {" ".join(line.split()) for _, lines in solution_regions(read(SOLUTION_NB)) for line in lines
                       if len(line.strip()) > 20 and " ".join(line.split()) not in public_flat}
    return marks


def found_in(text: str, marks: dict) -> list:
    """The encodings of the reference's code in `text`."""
    flat = " ".join(text.split())
    return sorted(how for how, strings in marks.items() if any(s in text or s in flat for s in strings))


class _Outputs(HTMLParser):
    """The text of a page's output areas (the checks' reports), not its code cells: a student's own code may be
    the reference's, which the page rightly shows them."""

    def __init__(self):
        super().__init__()
        self.stack, self.text = [], []

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        inside = bool(self.stack and self.stack[-1][1]) or bool({"output_subarea", "jp-OutputArea-output", "lesson20-report"} & set(classes))
        if tag not in VOID:
            self.stack.append((tag, inside))

    def handle_endtag(self, tag):
        while self.stack:
            if self.stack.pop()[0] == tag:
                break

    def handle_data(self, data):
        if self.stack and self.stack[-1][1]:
            self.text.append(data)


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track", "wbr"}


def page_text(path: Path) -> str:
    """What the feedback page shows outside the student's own code: its outputs, unescaped."""
    parser = _Outputs()
    parser.feed(path.read_text())
    return html.unescape(" ".join(parser.text))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("leak")
    names = ["reference", *[v.name for v in HOSTILE_LEAK]]
    write_class(base / "submitted", names)
    done = subprocess.run([sys.executable, "-m", "autograder", "grade", str(base / "submitted"), "--out",
                           str(base / "out"), "--quiet"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    return base / "out", names


def test_the_oracle_finds_each_encoding_of_the_reference_it_is_made_from():
    marks = reference_marks()
    # every encoding of the bytecode has marks; the reference's names may all be public (the checks' hints quote
    # them), and then no name of it is a secret to find
    assert all(v for k, v in marks.items() if k != "names"), {k: len(v) for k, v in marks.items()}
    from autograder.instructor.reference import reference_namespace
    code = reference_namespace()["accumulate_gradients"].__code__
    for how, text in {"hex": code.co_code.hex(), "base64": base64.b64encode(code.co_code[1:]).decode(),
                      "repr": repr(code.co_code), "numbers": str(list(code.co_code)),
                      "dis": dis.Bytecode(code).dis()}.items():
        assert how in found_in(f"raised ValueError: {text[5:300]}", marks), how


def test_no_feedback_page_holds_the_references_code(graded):
    out, names = graded
    marks = reference_marks()
    rows = json.loads((out / "grades.json").read_text())["students"]
    pages = {name: page_text(out / "feedback" / name / ASSIGNMENT / f"{ASSIGNMENT}.html") for name in names}
    assert "accumulate_gradients: 5 of 5 behaviours pass" in pages["reference"]  # the reports are read
    assert found_in(pages["reference"], marks) == []  # the oracle finds nothing where nothing leaks
    leaks = {name: found_in(text, marks) for name, text in pages.items()}
    assert {name: how for name, how in leaks.items() if how} == {}
    for variant in HOSTILE_LEAK:  # the attacked item lost its points, and its page says a message was withheld
        assert rows[variant.name]["items"]["token_accumulation"]["score"] < 1
        if variant.name.endswith("_names") and not marks["names"]:
            continue  # every name of the reference is public (the checks' hints quote them): nothing to withhold
        assert "this message is withheld: it quoted the reference solution" in pages[variant.name], variant.name


if __name__ == "__main__":  # what the raw reports would show, before scrubbing: the "before" of issue 44's figure
    from autograder.grading import grade_notebook
    from autograder.instructor.reference import reference
    from tests.submissions import make_submission
    marks = reference_marks()
    for variant in HOSTILE_LEAK:
        result = grade_notebook(make_submission(variant.name), reference=reference())
        text = "\n".join(result.report(i) for i in result.items)
        print(variant.name, found_in(text, marks), flush=True)
