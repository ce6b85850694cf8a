"""lessons/ is generated from solutions/, stays in sync, and gives nothing away."""
import json
import math
import os
import shutil
import subprocess
import sys

import nbformat
import pytest
import torch

from autograder.checks import released as release_values
from autograder.instructor import expected
from autograder.instructor.release import stale_files
from autograder.instructor.stubs import ClearSolutionsNamed
from tests.helpers import (ROOT, SOLUTION_NB, STUDENT_NB, code_lines, model_answer_sentences, nbgrader_cells, read,
                           solution_only_lines, solution_regions)


def test_lessons_are_in_sync_with_solutions():
    stale = stale_files()
    assert stale == [], f"run `python -m autograder release`: {stale} differ from a fresh release"


def test_one_release_writes_the_order_and_releases_with_it(tmp_path):
    """A new exercise's place in the order (here the last one's, taken out of a copy of the course's order.py) is
    written and released with in one `python -m autograder release`: lessons/, expected.pt and the docs' tables come
    out as the released course's, which only the full order gives."""
    course = tmp_path / "course"
    for folder in ("autograder", "solutions", "lessons", "docs"):
        shutil.copytree(ROOT / folder, course / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "nbgrader_config.py", course)
    order = course / "autograder" / "exercises" / "order.py"
    released = order.read_text()
    assert '    "q5_answer",\n' in released
    order.write_text(released.replace('    "q5_answer",\n', ""))
    env = {**os.environ, "LESSON20_COURSE": str(course), "PYTHONPATH": str(course)}
    done = subprocess.run([sys.executable, "-m", "autograder", "release"], cwd=course, env=env,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    assert order.read_text() == released, done.stdout
    said = done.stdout.splitlines()
    assert said[0].startswith("wrote autograder/exercises/order.py") and "again" not in done.stdout, said
    assert "kept autograder/checks/expected.pt (the visible checks' expected values)" in said, said
    assert "kept docs/grading-design.md's generated tables" in said, said
    for path in (ROOT / "lessons").rglob("*.ipynb"):
        assert json.loads((course / path.relative_to(ROOT)).read_text()) == json.loads(path.read_text()), path


def test_stale_expected_values_are_told_apart():
    """`release --check` compares expected.pt with a fresh computation: any changed, missing or extra
    value makes it stale, down to one bit of a float16 or float32 tensor and a billionth of a float64 one;
    another CPU's rounding of a float64 sum (its last bits, a zero's sign) does not."""
    fresh = expected.compute()
    assert len(fresh) >= 10 and {k.split("/")[0] for k in fresh} == set(expected.ORACLES)
    assert expected.same(torch.load(release_values.EXPECTED_FILE, weights_only=True), fresh)
    key = next(k for k in fresh if k.startswith("full_batch_grads/"))
    grads, loss = fresh[key]
    assert grads[0].dtype == torch.float64
    nudged = [grads[0].clone(), *grads[1:]]
    nudged[0].view(-1)[0] *= 1 + 1e-9
    for changed in ({**fresh, key: (grads, loss + 1e-9)}, {**fresh, key: (nudged, loss)},
                    {k: v for k, v in fresh.items() if k != key}, {**fresh, "torch_scales/0": [1.0]}):
        assert not expected.same(changed, fresh)
    rounded = [grads[0].clone(), *grads[1:]]  # one last bit, as an AVX2 machine and an AVX-512 one differ
    rounded[0].view(-1)[0] = torch.nextafter(rounded[0].view(-1)[0], torch.tensor(1.0, dtype=torch.float64))
    zeros = torch.zeros(3, dtype=torch.float64)
    assert expected.same({key: (rounded, loss)}, {key: (grads, loss)}) and expected.same(-zeros, zeros)
    # a Python float loss (a float64) in its last bit, as this AVX2 machine's token loss differs from the file's
    assert expected.same({key: (grads, math.nextafter(loss, 10.0))}, {key: (grads, loss)})
    assert not expected.same({key: (grads, loss * (1 + 1e-10))}, {key: (grads, loss)})
    assert not expected.same(1, 1.0) and not expected.same(float("nan"), 0.0)
    for dtype in (torch.float16, torch.float32):  # one bit of a half or single tensor is a change
        t = torch.linspace(-1, 1, 5, dtype=dtype)
        bit = t.clone()
        bit[1] = torch.nextafter(bit[1], torch.tensor(1.0, dtype=dtype))
        assert expected.same(t, t.clone()) and not expected.same(bit, t)


def test_a_missing_expected_value_is_named(tmp_path, monkeypatch):
    """A visible check whose inputs changed since the release says so, and does not pass."""
    torch.save({}, tmp_path / "expected.pt")
    monkeypatch.setattr(release_values, "EXPECTED_FILE", tmp_path / "expected.pt")
    with pytest.raises(LookupError, match="release is out of date"):
        release_values.released("torch_scales", init_scale=8.0, found_infs=[True])
    assert expected.is_stale(tmp_path / "missing.pt")


def test_an_oracle_call_is_keyed_by_its_arguments():
    x = torch.arange(6.0).reshape(2, 3)
    key = release_values.call_key("full_batch_grads", {"seed": 1}, x)
    assert key == release_values.call_key("full_batch_grads", {"seed": 1}, x.clone())
    assert key.startswith("full_batch_grads/")
    for other in (release_values.call_key("full_batch_grads", {"seed": 2}, x), release_values.call_key("model_values", {"seed": 1}, x),
                  release_values.call_key("full_batch_grads", {"seed": 1}, x.double()),
                  release_values.call_key("full_batch_grads", {"seed": 1}, x.reshape(3, 2)),
                  release_values.call_key("full_batch_grads", {"seed": True}, x)):
        assert other != key


def test_lessons_hold_only_the_student_notebook():
    files = sorted(p.relative_to(ROOT / "lessons").as_posix() for p in (ROOT / "lessons").rglob("*")
                   if p.is_file())
    assert files == ["lesson20/lesson20.ipynb"]


def _student_text() -> str:
    return "\n".join(c.source for c in read(STUDENT_NB).cells)


def test_no_reference_code_in_lessons():
    """No line that exists only inside a solution region reaches the student notebook."""
    assert len(solution_regions(read(SOLUTION_NB))) >= 12
    secret = {ln for ln in solution_only_lines() if len(ln) >= 8}
    assert len(secret) >= 40
    leaked = secret & code_lines(_student_text())
    assert not leaked, f"reference lines found in the student notebook: {sorted(leaked)[:5]}"


def test_no_model_answer_in_lessons():
    text = _student_text()
    answers = [c for gid, c in nbgrader_cells(read(SOLUTION_NB)).items() if gid.startswith("practice_q")]
    assert len(answers) == 4 and all("Model answer" in c.source and "Rubric" in c.source for c in answers)
    sentences = model_answer_sentences(min_length=30)
    assert len(sentences) >= 20
    leaked = [s for s in sentences if s in text]
    assert not leaked, f"model answer leaked: {leaked[0][:60]}"
    for cell in nbgrader_cells(read(STUDENT_NB)).values():
        if cell.metadata.nbgrader.get("grade_id", "").startswith("practice_q"):
            assert cell.source.strip() == "YOUR ANSWER HERE"


def _stub(source, grade_id="ex1_solution", cell_type="code"):
    make = nbformat.v4.new_code_cell if cell_type == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True, "grade": False, "locked": False,
                                 "schema_version": 3, "task": False}
    clear = ClearSolutionsNamed()
    assert clear._replace_solution_region(cell, "python")
    return cell.source


def test_stub_in_a_function_names_exercise_and_function():
    src = "def f(x):\n    '''doc'''\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n"
    assert _stub(src) == ("def f(x):\n    '''doc'''\n    # YOUR CODE HERE\n"
                          '    raise NotImplementedError("ex1: write the body of f()")\n')


def test_stub_in_a_method_names_the_class():
    src = "class A:\n    def g(self):\n        ### BEGIN SOLUTION\n        return 1\n        ### END SOLUTION\n"
    assert 'raise NotImplementedError("ex1: write the body of A.g()")' in _stub(src)


def test_top_level_answer_becomes_an_ellipsis():
    assert _stub('### BEGIN SOLUTION\nANSWER = "b"\n### END SOLUTION') == "ANSWER = ...  # YOUR ANSWER HERE"


def test_top_level_region_without_assignments_gets_nbgraders_stub():
    assert _stub("### BEGIN SOLUTION\nprint(1)\n### END SOLUTION") == "# YOUR CODE HERE\nraise NotImplementedError()"


def test_markdown_answer_becomes_the_text_stub():
    assert _stub("### BEGIN SOLUTION\nsecret\n### END SOLUTION", cell_type="markdown") == "YOUR ANSWER HERE"


def test_unterminated_region_is_an_error():
    with pytest.raises(RuntimeError, match="no end solution"):
        _stub("def f():\n    ### BEGIN SOLUTION\n    return 1\n")
