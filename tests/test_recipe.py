"""The recipe for an exercise is held by a test (docs/adding-an-exercise.md is the checklist it enforces): every
declared exercise has each piece, and a toy exercise added to a copy of the course passes whole and is reported,
piece by piece, when one is taken away."""
import json
import shutil

import pytest

from autograder.items import ROOT
from tests.recipe import missing_pieces
from tests.submissions import VARIANTS
from tests.test_rubric import CENTRAL_MISSES, EXTRA, VISIBLE_MISSES

VARIANT_ITEMS = {name: v.item for name, v in {**VARIANTS, **EXTRA}.items()}
BREAKERS = {**CENTRAL_MISSES, **VISIBLE_MISSES}


def test_every_declared_exercise_has_every_piece():
    assert missing_pieces(ROOT, VARIANT_ITEMS, BREAKERS) == {}


TOY = "toy_clip"
TOY_FILES = {
    f"autograder/exercises/{TOY}.py": f'''
from ..exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id="{TOY}", title="Exercise 9: a toy clip", names=("toy_clip",),
    behaviours=(Behaviour("clips", "clips every gradient", 1.0, central=True),
                Behaviour("returns_norm", "returns the norm", 0.5)),
    why_central="clipping is the exercise", probes=("toy_probe",))
''',
    f"autograder/checks/test_{TOY}.py": '''
import pytest
from autograder.checks.expect import expected


@pytest.mark.behaviour("clips")
def test_clips(student):
    assert student.run("toy_probe") == expected("toy_oracle", 1)


@pytest.mark.behaviour("returns_norm")
def test_norm(student):
    assert student.run("toy_probe")
''',
    f"autograder/instructor/hidden/test_{TOY}.py": '''
import pytest


@pytest.mark.behaviour("clips")
def test_clips_hidden(student, reference):
    assert student.run("toy_probe") == reference.run("toy_probe")
''',
}
# (the piece, how it is taken away: a file to delete, or (file, text, replacement)), the words its message holds
PIECES = [
    ("the visible checks", f"autograder/checks/test_{TOY}.py", "no visible checks"),
    ("the hidden checks", f"autograder/instructor/hidden/test_{TOY}.py", "no hidden checks"),
    ("a behaviour's check", (f"autograder/checks/test_{TOY}.py", '"returns_norm"', '"clips"'),
     "behaviour 'returns_norm'"),
    ("a central behaviour's visible check", (f"autograder/checks/test_{TOY}.py", '"clips"', '"returns_norm"'),
     "central behaviour 'clips' has no visible check"),
    ("the probe", ("autograder/checks/probes.py", "def toy_probe", "def not_the_toy_probe"), "no probe 'toy_probe'"),
    ("the oracle", ("autograder/instructor/oracles.py", "toy_oracle", "something_else"), "no oracle 'toy_oracle'"),
    ("the smoke case", ("autograder/checks/smoke.py", f'"{TOY}": None,', ""), "no GPU smoke case"),
    ("the notebook's cell", ("solutions/lesson20/lesson20.ipynb", f'"grade_id": "{TOY}"', '"grade_id": "gone"'),
     "no graded check cell"),
    ("the corpus variant", None, "no corpus variant breaks central behaviour 'clips'"),
]


def _edit(path, old, new):
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def toy_course(tmp_path):
    """A copy of the course's autograder/ and solutions/ with the toy exercise added as the recipe says."""
    for folder in ("autograder", "solutions"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in TOY_FILES.items():
        (tmp_path / name).write_text(text)
    init = tmp_path / "autograder" / "exercises" / "__init__.py"
    _edit(init, "q5_answer))", f"q5_answer, {TOY}))")
    _edit(init, "from . import (", f"from . import ({TOY}, ")
    _edit(tmp_path / "autograder" / "checks" / "probes.py", "\n@probe\n",
          "\n@probe\ndef toy_probe(ns):\n    return {}\n\n\n@probe\n")
    _edit(tmp_path / "autograder" / "instructor" / "oracles.py", "ORACLES = {f.__name__: f for f in (",
          "ORACLES = {f.__name__: f for f in (toy_oracle, ")
    _edit(tmp_path / "autograder" / "checks" / "smoke.py", "CASES = {", f'CASES = {{\n    "{TOY}": None,')
    notebook = tmp_path / "solutions" / "lesson20" / "lesson20.ipynb"
    nb = json.loads(notebook.read_text())
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": TOY, "outputs": [],
                        "source": f'check("{TOY}", globals())',
                        "metadata": {"nbgrader": {"grade": True, "grade_id": TOY, "locked": True, "points": 1.5,
                                                  "solution": False, "schema_version": 3}}})
    notebook.write_text(json.dumps(nb, indent=1))
    return tmp_path


def toy_corpus(with_breaker=True):
    return ({**VARIANT_ITEMS, "toy_never_clips": TOY},
            {**BREAKERS, **({"toy_never_clips": ("clips", "returns the gradients as they are")} if with_breaker else {})})


def test_a_toy_exercise_added_by_the_recipe_has_every_piece(toy_course):
    assert missing_pieces(toy_course, *toy_corpus()) == {}


@pytest.mark.parametrize("piece, removal, said", PIECES, ids=[p[0] for p in PIECES])
def test_each_piece_taken_away_is_named(toy_course, piece, removal, said):
    corpus = toy_corpus(with_breaker=removal is not None)
    if isinstance(removal, str):
        (toy_course / removal).unlink()
    elif removal is not None:
        _edit(toy_course / removal[0], removal[1], removal[2])
    gaps = missing_pieces(toy_course, *corpus)
    assert set(gaps) == {TOY} and any(said in gap for gap in gaps[TOY]), (piece, gaps)


def test_a_notebook_in_another_order_is_named(toy_course):
    init = toy_course / "autograder" / "exercises" / "__init__.py"
    _edit(init, f"q5_answer, {TOY}))", f"{TOY}, q5_answer))")
    gaps = missing_pieces(toy_course, *toy_corpus())
    assert any("differs from the declared order" in gap for gap in gaps[TOY]), gaps
