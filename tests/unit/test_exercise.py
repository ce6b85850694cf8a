"""autograder.exercise and the exercises' declarations (autograder/exercises/<id>/__init__.py): one unit per exercise,
from which items.py and rubric.py build their tables."""
import math

import pytest

from autograder import items, rubric
from autograder.checks import harness, probes  # noqa: F401  (probes fills harness.PROBES)
from autograder.exercise import Behaviour, Exercise
from autograder.exercises import EXERCISES
from autograder.items import EXERCISES_DIR, HIDDEN_DIR, check_file


def test_an_exercises_points_are_its_behaviours():
    e = Exercise("x", "X", ("f",), (Behaviour("a", "A", 0.4, central=True), Behaviour("b", "B", 0.2),
                                    Behaviour("c", "C", 0.4)), "why")
    assert e.points == 1 and isinstance(e.points, int)
    assert Exercise("y", "Y", (), (Behaviour("a", "A", 0.25),), "why").points == 0.25


def test_the_registries_are_the_declarations_in_lesson_order():
    assert [i.id for i in items.AUTO_ITEMS] == [e.id for e in EXERCISES]
    for e in EXERCISES:
        item = items.get_item(e.id)
        assert (item.points, item.names, item.title, item.given, item.code) == (e.points, e.names, e.title, e.given,
                                                                                e.code)
        assert rubric.RUBRIC[e.id] == e.behaviours and rubric.WHY_CENTRAL[e.id] == e.why_central


@pytest.mark.parametrize("exercise", EXERCISES, ids=[e.id for e in EXERCISES])
def test_each_declaration_is_whole(exercise):
    """An id that names its checks, a contract, behaviours whose points add up, a central one and why, and
    probes that exist and that its checks drive."""
    assert check_file(EXERCISES_DIR, exercise.id).is_file() and check_file(HIDDEN_DIR, exercise.id).is_file()
    assert exercise.names and exercise.title and exercise.why_central.strip()
    ids = [b.id for b in exercise.behaviours]
    assert len(ids) == len(set(ids)) and any(b.central for b in exercise.behaviours)
    assert math.isclose(sum(b.points for b in exercise.behaviours), exercise.points)
    checks = check_file(EXERCISES_DIR, exercise.id).read_text() + check_file(HIDDEN_DIR, exercise.id).read_text()
    for probe in exercise.probes:
        assert probe in harness.PROBES and f'"{probe}"' in checks, probe
    assert set(exercise.given) <= {n for e in EXERCISES for n in e.names}


def test_the_code_exercises_are_numbered_in_lesson_order():
    """A declaration's title has no number: EXERCISES numbers the exercises whose answer is code, in lesson order."""
    import re
    from autograder.exercises import numbered
    code = [e for e in EXERCISES if e.code]
    assert [e.title.split(":")[0] for e in code] == [f"Exercise {n}" for n in range(1, len(code) + 1)]
    assert not any(re.match(r"Exercise \d", e.title) for e in EXERCISES if not e.code)
    plain = Exercise("x", "a toy", ("f",), (Behaviour("a", "A", 1, central=True),), "why")
    assert [e.title for e in numbered([plain, plain])] == ["Exercise 1: a toy", "Exercise 2: a toy"]


def test_a_behaviour_names_another_exercise_by_its_derived_number():
    """A behaviour's text says "{<id>}" for another exercise: EXERCISES writes its number in lesson order, as
    exercise_name does (the dynamic scaler's inherited half is graded in the static scaler's exercise)."""
    from autograder.exercises import exercise_name, numbered
    from autograder.exercises.dynamic_loss_scaler import EXERCISE
    assert "{static_loss_scaler}" in next(b.text for b in EXERCISE.behaviours if b.id == "inherits")
    told = next(b.text for b in rubric.RUBRIC["dynamic_loss_scaler"] if b.id == "inherits")
    assert told.endswith(f"graded in {exercise_name('static_loss_scaler')} only)") and "{" not in told
    assert exercise_name("underflow_fraction") == "Exercise 1" and exercise_name("static_loss_scaler") == "Exercise 2"
    first = Exercise("x", "a toy", ("f",), (Behaviour("a", "see {y}, not {z}", 1, central=True),), "why")
    second = Exercise("y", "another", ("g",), (Behaviour("b", "after {x}", 1, central=True),), "why")
    assert [b.text for e in numbered([first, second]) for b in e.behaviours] == ["see Exercise 2, not {z}",
                                                                                 "after Exercise 1"]
