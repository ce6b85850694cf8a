"""Tests mirror the package: autograder/<path>/<module>.py is tested in tests/unit/<path>/test_<module>.py.

An exercise's two folders (exercises/<id>/ and instructor/exercises/<id>/: its declaration, probes, checks, smoke
case, diagnosis and oracles) and conftest.py files are not held to a mirror: the exercise is held whole by
tests/unit/test_exercise.py and tests/test_recipe.py (a unit test of one of its modules may mirror it all the same);
a package's __init__.py only gathers its modules, so it has no mirror of its own.
"""
from pathlib import Path

from autograder.items import AUTO_ITEMS, EXERCISES_DIR, HIDDEN_DIR, PACKAGE_DIR, check_file

UNIT = Path(__file__).parent


def is_check(path: Path) -> bool:
    """conftest.py, and the files of an exercise's two folders."""
    return path.name == "conftest.py" or path.parent.parent in (EXERCISES_DIR, HIDDEN_DIR)


def package_modules(with_exercises: bool = False) -> list:
    return sorted(p for p in PACKAGE_DIR.rglob("*.py") if p.name != "__init__.py"
                  and (not is_check(p) or (with_exercises and not p.name.startswith("test_"))))


def mirror(module: Path) -> Path:
    """autograder/sandbox/decode.py -> tests/unit/sandbox/test_decode.py (__main__.py -> test_main.py)."""
    relative = module.relative_to(PACKAGE_DIR)
    return UNIT / relative.parent / f"test_{relative.stem.strip('_')}.py"


def test_the_walk_finds_modules_and_leaves_the_checks_out():
    found = {m.relative_to(PACKAGE_DIR).as_posix() for m in package_modules()}
    assert {"report.py", "sandbox/decode.py", "instructor/course.py", "checks/compare.py", "__main__.py"} <= found
    checks = [check_file(folder, item.id) for folder in (EXERCISES_DIR, HIDDEN_DIR) for item in AUTO_ITEMS]
    assert checks and all(is_check(c) for c in checks) and not any(is_check(PACKAGE_DIR / f) for f in found)
    assert mirror(PACKAGE_DIR / "sandbox" / "decode.py") == UNIT / "sandbox" / "test_decode.py"


def test_every_module_has_a_mirror_test():
    missing = [m.relative_to(PACKAGE_DIR).as_posix() for m in package_modules() if not mirror(m).is_file()]
    assert not missing, ("modules of autograder/ without a test file in tests/unit/ at the same path "
                         f"(autograder/<path>/<module>.py -> tests/unit/<path>/test_<module>.py): {', '.join(missing)}")


def test_every_unit_test_file_mirrors_a_module():
    mirrors = {mirror(m) for m in package_modules(with_exercises=True)}
    orphans = [t.relative_to(UNIT).as_posix() for t in sorted(UNIT.rglob("test_*.py"))
               if t not in mirrors and t != Path(__file__)]
    assert not orphans, f"unit test files that mirror no module of autograder/ (moved or deleted?): {', '.join(orphans)}"
