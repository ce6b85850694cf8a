"""The realistic corpus (tests/submissions/realistic.py): correct code in messy notebooks keeps full marks.

Each notebook is saved as Jupyter would save it and read back as the grader reads it, then graded
directly with grade_notebook. Those whose nbgrader cells are damaged or unusual (copied, split,
deleted or markdown'd cells, no cell ids) are also graded through the class command, which runs
nbgrader's Autograde around the same grader, since nbgrader trips over such notebooks on its own.
Where a grade cell was damaged, the student must be told it was repaired.
"""
import html
import json
import re
import time
import warnings

import nbformat
import pytest

from autograder.cells import read_notebook
from autograder.grading import grade_notebook
from autograder.instructor.grade import grade_class
from autograder.instructor.reference import reference
from autograder.instructor.staging import MAX_NOTEBOOK_BYTES
from autograder.items import ASSIGNMENT
from tests.corpus import SAVED
from tests.submissions import (CopyCell, DropCellIds, LineEndings, TabIndent, VARIANTS, find_cell, judge,
                               make_submission, write_class)
from tests.submissions.realistic import needs_repair, structural

pytestmark = pytest.mark.slow
REALISTIC = SAVED  # the realistic variants but the honest habits (tests/integration/test_honest_habits.py)
STRUCTURAL = [n for n in REALISTIC if structural(n)]
REPAIR_WORD = "repaired"  # what the grader's reason or report says when it restored nbgrader's cells


def edits_of(name, kind) -> list:
    return [e for e in VARIANTS[name].edits if isinstance(e, kind)]


def detail(name, status, reason, scores, reports=None) -> str:
    """What a failure shows: the variant, how it was graded, and the report lines that are not passes."""
    lines = [f"{name}: {VARIANTS[name].doc}", f"status {status}, reason: {reason[:400]}", f"scores {scores}"]
    for text in (reports or {}).values():
        bad = [ln.strip()[:300] for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("PASS")]
        if len(bad) > 1:  # the first line is the item's summary
            lines += [f"  {ln}" for ln in bad[:6]]
    return "\n".join(lines)


def test_the_corpus_has_every_kind_the_issue_asks_for():
    assert len(REALISTIC) >= 12
    asked = ["real_setup_device", "real_computed_constants", "real_lambda_helper_cell", "real_scratch_raises_first",
             "real_magics", "real_copied_check_cells", "real_duplicated_solution", "real_no_cell_ids",
             "real_large_outputs", "real_non_ascii", "real_crlf", "real_tabs"]
    assert set(asked) <= set(REALISTIC)
    assert all(VARIANTS[n].doc for n in REALISTIC)


def test_the_gpu_corpus_has_every_habit_the_issue_names():
    """GPU notebooks graded on the CPU: correct ones keep full marks here, hard-wired CUDA loses its item
    (tests/integration/test_submissions.py) with a first message that names the device (cause "p.device")."""
    from tests.submissions.gpu import GPU
    text = {v.kind: " ".join(e.source for w in GPU if w.kind == v.kind for e in w.edits) for v in GPU}
    for habit in ("set_default_device(\"cuda\")", "set_default_device(DEVICE)", "torch.cuda.is_available()",
                  ".device"):
        assert habit in text["realistic"], habit
    for habit in (".cuda()", '.to("cuda")', 'device="cuda"', "TRAIN_DEVICE"):
        assert habit in text["buggy"], habit
    assert all(v.cause == "p.device" for v in GPU if v.kind == "buggy")
    assert {v.name for v in GPU if v.kind == "realistic"} <= set(REALISTIC)


@pytest.mark.parametrize("name", REALISTIC)
def test_the_notebook_is_one_jupyter_would_save(saved_realistic, name):
    """Valid nbformat, read back without warnings; ids on every cell and unique (nbformat 4.5), or on none
    (nbformat 4.4 or older); under the grader's size limit; and not simply the reference notebook."""
    path = saved_realistic[name]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nbformat warns on a 4.5 notebook with missing ids, say
        nb = nbformat.read(str(path), as_version=4)
        nbformat.validate(nb)
    ids = [c.get("id") for c in nb.cells]
    if edits_of(name, DropCellIds):
        minor = edits_of(name, DropCellIds)[0].minor
        assert (nb.nbformat, nb.nbformat_minor) == (4, minor) and ids == [None] * len(ids)
    else:
        assert (nb.nbformat, nb.nbformat_minor) == (4, 5) and None not in ids and len(set(ids)) == len(ids)
    assert path.stat().st_size < MAX_NOTEBOOK_BYTES
    assert nbformat.writes(make_submission(name)) != nbformat.writes(make_submission("reference"))


def test_the_messy_bytes_really_are_in_the_files(saved_realistic):
    """CRLF and tabs survive saving; the big outputs are big; copied cells share their grade id."""
    raw = json.loads(saved_realistic["real_crlf"].read_text(encoding="utf-8"))
    crlf = [c for c in raw["cells"] if c["metadata"].get("nbgrader", {}).get("solution") and c["cell_type"] == "code"]
    assert crlf and all(line.endswith("\r\n") for c in crlf for line in c["source"][:-1])
    assert edits_of("real_crlf", LineEndings)
    nb = read_notebook(saved_realistic["real_tabs"])
    for cell in edits_of("real_tabs", TabIndent)[0].cells:
        assert "\n\t\t" in find_cell(nb, cell).source
    assert saved_realistic["real_large_outputs"].stat().st_size > 5 * 2**20
    for name in ("real_copied_check_cells", "real_duplicated_solution", "real_split_solution_cell"):
        nb = read_notebook(saved_realistic[name])
        grade_ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
        for edit in edits_of(name, CopyCell):
            assert grade_ids.count(edit.cell) == 2, (name, edit.cell)


def test_the_first_try_of_a_duplicated_solution_would_lose_points(saved_realistic):
    """Without the later, correct copy, real_duplicated_solution's first try is wrong: which copy wins matters."""
    nb = read_notebook(saved_realistic["real_duplicated_solution"])
    copies = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "master_weights_solution"]
    nb.cells.remove(copies[-1])
    result = grade_notebook(nb, ["master_weights"], reference=reference())
    assert result.items["master_weights"].score < 2


@pytest.fixture
def graded_directly(graded_corpus) -> dict:
    """Every realistic notebook graded once, from its saved file, with grade_notebook and the rest of the corpus
    (tests/corpus.py): variant -> (status, reason, scores, reports, threads left running)."""
    return {name: (g.status, g.reason, g.scores, g.reports, g.threads_left)
            for name, g in graded_corpus["graded"].items() if name in REALISTIC}


@pytest.mark.parametrize("name", REALISTIC)
def test_full_marks_graded_directly(graded_directly, name):
    status, reason, scores, reports, threads_left = graded_directly[name]
    found = judge(name, status, scores)
    if threads_left:
        found.append(f"threads left running in the grading process: {threads_left[:5]}")
    if needs_repair(name):
        text = " ".join([reason, *reports.values()]).lower()
        if REPAIR_WORD not in text:
            found.append(f"the reason and the reports do not say what was {REPAIR_WORD}")
    assert not found, "; ".join(found) + "\n" + detail(name, status, reason, scores, reports)


@pytest.fixture(scope="module")
def graded_class(tmp_path_factory) -> dict:
    """The structural variants as one class (student id = variant name), graded by the class command."""
    base = tmp_path_factory.mktemp("realistic_class")
    write_class(base / "submitted", STRUCTURAL)
    started = time.monotonic()
    doc = grade_class(base / "submitted", base / "out", jobs=2, progress=False)
    print(f"class command: {len(STRUCTURAL)} notebooks in {time.monotonic() - started:.0f} s")
    return {"out": base / "out", "grades": doc}


def feedback_text(out, student) -> str:
    pages = list((out / "feedback" / student / ASSIGNMENT).glob("*.html"))
    return html.unescape(re.sub(r"<[^>]+>", " ", pages[0].read_text(encoding="utf-8"))) if pages else ""


@pytest.mark.parametrize("name", STRUCTURAL)
def test_full_marks_through_the_class_command(graded_class, name):
    row = graded_class["grades"]["students"][name]
    scores = {i: e["score"] for i, e in row["items"].items()}
    found = judge(name, row["status"], scores)
    feedback = feedback_text(graded_class["out"], name)
    if not feedback:
        found.append("no feedback page")
    if needs_repair(name) and REPAIR_WORD not in (row["reason"] + " " + feedback).lower():
        found.append(f"neither the reason nor the feedback says what was {REPAIR_WORD}")
    assert not found, "; ".join(found) + "\n" + detail(name, row["status"], row["reason"], scores)
