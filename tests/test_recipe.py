"""The recipe for an exercise is held by a test (docs/adding-an-exercise.md is the checklist it enforces): every
declared exercise has each piece, and a toy exercise added to a copy of the course passes whole and is reported,
piece by piece, when one is taken away."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from autograder.items import ROOT
from autograder.instructor.release import write_order
from tests.recipe import missing_pieces
from tests.submissions import VARIANTS
from tests.test_rubric import CENTRAL_MISSES, EXTRA, VISIBLE_MISSES

VARIANT_ITEMS = {name: v.item for name, v in {**VARIANTS, **EXTRA}.items()}
BREAKERS = {**CENTRAL_MISSES, **VISIBLE_MISSES}


def test_every_declared_exercise_has_every_piece():
    assert missing_pieces(ROOT, VARIANT_ITEMS, BREAKERS) == {}


TOY = "toy_clip"
# the toy exercise as the recipe adds it: its two folders, whole (besides these, only the notebook's cell and the
# corpus variant, which `toy_course` and `toy_corpus` add; the release writes its place in the order)
TOY_FILES = {
    f"autograder/exercises/{TOY}/__init__.py": f'''
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id="{TOY}", title="a toy clip", names=("toy_clip",),
    behaviours=(Behaviour("clips", "clips every gradient", 1.0, central=True),
                Behaviour("returns_norm", "returns the norm", 0.5)),
    why_central="clipping is the exercise", probes=("toy_probe",),
    fields={{"clipped": "value"}})
''',
    f"autograder/exercises/{TOY}/probes.py": '''
if not __name__.startswith("lesson20_"):
    from ...checks.harness import probe


@probe
def toy_probe(ctx, ns):
    return {"clipped": 1.0}
''',
    f"autograder/exercises/{TOY}/test_{TOY}.py": '''
import pytest


@pytest.mark.behaviour("clips")
def test_clips(student, expected):
    assert student.run("toy_probe") == expected("toy_oracle", 1)


@pytest.mark.behaviour("returns_norm")
def test_norm(student):
    assert student.run("toy_probe")
''',
    f"autograder/exercises/{TOY}/smoke.py": '''
def case(student):
    student.run("toy_probe")
''',
    f"autograder/instructor/exercises/{TOY}/__init__.py": "",
    f"autograder/instructor/exercises/{TOY}/test_{TOY}.py": '''
import pytest


@pytest.mark.behaviour("clips")
def test_clips_hidden(student, reference):
    assert student.run("toy_probe") == reference.run("toy_probe")
''',
    f"autograder/instructor/exercises/{TOY}/oracles.py": '''
def toy_oracle(n):
    return n


ORACLES = (toy_oracle,)
''',
}
# (the piece, how it is taken away: a file to delete, or (file, text, replacement)), the words its message holds
PIECES = [
    ("the visible checks", f"autograder/exercises/{TOY}/test_{TOY}.py", "no visible checks"),
    ("the hidden checks", f"autograder/instructor/exercises/{TOY}/test_{TOY}.py", "no hidden checks"),
    ("the hidden checks' package", f"autograder/instructor/exercises/{TOY}/__init__.py",
     f"no autograder/instructor/exercises/{TOY}/__init__.py"),
    ("a behaviour's check", (f"autograder/exercises/{TOY}/test_{TOY}.py", '"returns_norm"', '"clips"'),
     "behaviour 'returns_norm'"),
    ("a central behaviour's visible check", (f"autograder/exercises/{TOY}/test_{TOY}.py", '"clips"', '"returns_norm"'),
     "central behaviour 'clips' has no visible check"),
    ("the probe", f"autograder/exercises/{TOY}/probes.py", "no probe 'toy_probe'"),
    ("its answer field's declaration", (f"autograder/exercises/{TOY}/__init__.py", 'fields={"clipped": "value"}',
                                        "fields={}"), "returns field 'clipped', which no declaration names"),
    ("the oracle", f"autograder/instructor/exercises/{TOY}/oracles.py", "no oracle 'toy_oracle'"),
    ("the smoke case", f"autograder/exercises/{TOY}/smoke.py", "no GPU smoke case"),
    ("the declaration", f"autograder/exercises/{TOY}/__init__.py", "declares no Exercise"),
    ("the release of its order", ("autograder/exercises/order.py", f'    "{TOY}",\n', ""),
     "is not in the exercises' order"),
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
    """A copy of the course's autograder/ and solutions/ with the toy exercise added as the recipe says: its two
    folders and its cell in the notebook, then the order released (its corpus variant is `toy_corpus`)."""
    for folder in ("autograder", "solutions"):
        shutil.copytree(ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__"))
    for name, text in TOY_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    notebook = tmp_path / "solutions" / "lesson20" / "lesson20.ipynb"
    nb = json.loads(notebook.read_text())
    nb["cells"].append({"cell_type": "code", "execution_count": None, "id": TOY, "outputs": [],
                        "source": f'check("{TOY}", globals())',
                        "metadata": {"nbgrader": {"grade": True, "grade_id": TOY, "locked": True, "points": 1.5,
                                                  "solution": False, "schema_version": 3}}})
    notebook.write_text(json.dumps(nb, indent=1))
    assert write_order(tmp_path)  # what `python -m autograder release` does first
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
    print(f"{piece}: {gaps[TOY]}")  # the messages, for the record (pytest -s)


def test_a_notebook_in_another_order_is_named(toy_course):
    order = toy_course / "autograder" / "exercises" / "order.py"
    _edit(order, '    "q5_answer",\n', "")
    _edit(order, f'    "{TOY}",\n', f'    "{TOY}",\n    "q5_answer",\n')
    gaps = missing_pieces(toy_course, *toy_corpus())
    assert any("differs from the declared order" in gap for gap in gaps[TOY]), gaps


def test_the_toy_is_gathered_from_its_folders_with_no_other_edit(toy_course):
    """The registries derived from the folders take the toy in: the probes and the files the sandbox runs, the
    smoke cases, the oracles, the items and the rubric, its answer field, and the reading thief's contract."""
    script = f"""
import json
from autograder.checks import harness, probes, smoke
from autograder.exercises import FIELDS
from autograder.instructor.oracles import ORACLES
from autograder.items import AUTO_ITEMS
from autograder.rubric import RUBRIC
from autograder.sandbox.isolation import probe_files
print(json.dumps({{"probe": "toy_probe" in harness.PROBES, "smoke": "{TOY}" in smoke.CASES,
                  "oracle": "toy_oracle" in ORACLES, "item": AUTO_ITEMS[-1].id, "rubric": "{TOY}" in RUBRIC,
                  "files": [f for f in probe_files(True) if "{TOY}" in f], "field": FIELDS.get("clipped")}}))
"""
    env = {**os.environ, "PYTHONPATH": str(toy_course)}
    done = subprocess.run([sys.executable, "-c", script], cwd=toy_course, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"probe": True, "smoke": True, "oracle": True, "item": TOY, "rubric": True,
                                       "files": [f"/sandbox/exercises/{TOY}/probes.py"], "field": "value"}
    contract = subprocess.run([sys.executable, "-c", "from tests.submissions.hostile_reading import CODE_ITEMS; "
                               "print(CODE_ITEMS[-1])"], cwd=toy_course, capture_output=True, text=True,
                              env={**env, "PYTHONPATH": f"{toy_course}:{ROOT}"})
    assert contract.stdout.strip() == TOY, contract.stderr[-2000:]
