"""The lesson's auto-graded exercises, in lesson order: one folder each, autograder/exercises/<id>/, whose
__init__.py declares its Exercise (exercise.py) and which holds its probes (probes.py), its visible checks
(test_<id>.py), its GPU smoke case (smoke.py) and its diagnosis (diagnose.py), where it has them. Its hidden checks
and oracles are in autograder/instructor/exercises/<id>/, which the student package leaves out.

items.ITEMS and rubric.RUBRIC are built from EXERCISES, and FIELDS (what each field of a probe's answer is) from their
`fields`; the probe registry, the probes' files the sandbox runs, the smoke cases and the oracles are gathered from the
folders by `parts` and `part_files`, in ORDER: the notebook's, which `python -m autograder release` writes into
order.py.
"""
import importlib
import itertools
from dataclasses import replace
from pathlib import Path

from ..checks.answers import merged
# the notebook's order, which `release` writes (order.py): it decides which earlier exercises' reference code an
# item's fork may hold (stand_in_plan.py)
from .order import ORDER

HERE = Path(__file__).parent


def numbered(exercises) -> tuple:
    """The exercises with their titles numbered in lesson order ("Exercise 4: " + the declared title); an answer
    that is not code (Q5's letter) keeps its own title. A behaviour's text names another exercise as "{<its id>}",
    which becomes that exercise's "Exercise N"."""
    number = itertools.count(1)
    exercises = [(e, f"Exercise {next(number)}" if e.code else "") for e in exercises]

    def told(text: str) -> str:
        for e, name in exercises:
            text = text.replace(f"{{{e.id}}}", name) if name else text
        return text

    return tuple(replace(e, title=f"{name}: {e.title}" if name else e.title,
                         behaviours=tuple(replace(b, text=told(b.text)) for b in e.behaviours)) for e, name in exercises)


EXERCISES = numbered(importlib.import_module(f"{__name__}.{name}").EXERCISE for name in ORDER)


def exercise_name(exercise_id: str) -> str:
    """A code exercise's "Exercise N": its number in lesson order."""
    return next(e.title for e in EXERCISES if e.id == exercise_id).split(":")[0]


# what each field of a probe's answer is (checks/answers.py): the shared fields and each exercise's own
FIELDS = merged({e.id: e.fields for e in EXERCISES})


def part_files(part: str, folder: Path = HERE) -> list:
    """Each exercise's file `<part>.py` under `folder` (this package, or the instructor's side), where it has one,
    in lesson order."""
    return [folder / name / f"{part}.py" for name in ORDER if (folder / name / f"{part}.py").is_file()]


def parts(part: str, package: str = __name__, folder: Path = HERE) -> list:
    """Each exercise's module `<package>.<id>.<part>`, where its folder has one, imported, in lesson order."""
    return [importlib.import_module(f"{package}.{path.parent.name}.{part}") for path in part_files(part, folder)]
