"""Says at the end of a run which tests were skipped for lack of a system package, and how to install it.

A green run that silently skipped the sandbox or the browser would read as "all tested". Each group in
tests/system_packages.py gets one line when some of its tests were skipped and its package is missing.
"""
from collections import Counter

import pytest

from tests.system_packages import SYSTEM_PACKAGES

pytest_plugins = ["tests.wheel", "tests.corpus"]  # the wheel and a student venv, and the graded corpus: once per run

# Under pytest-xdist (`make test`: -n auto --dist loadfile) each module runs whole on one worker, so that its module
# fixtures are built once, and the modules that use one of these session fixtures run on one worker together, so
# that the fixture is built once: the graded corpus (tests/corpus.py), the wheel and a student venv (tests/wheel.py).
# pytest_collection_modifyitems holds the table to the fixtures the tests use.
SHARED = {"corpus": ({"graded_corpus", "saved_realistic"},
                     ("tests/integration/test_submissions.py", "tests/integration/test_realistic.py",
                      "tests/integration/test_honest_habits.py")),
          "wheel": ({"dist", "student_venv"},
                    ("tests/integration/test_wheel.py", "tests/browser/test_first_run.py"))}
WORKER_GROUP = {module: group for group, (_, modules) in SHARED.items() for module in modules}

_skipped = Counter()  # group -> tests of that group skipped in this run


def pytest_collection_modifyitems(items):
    misplaced = sorted({f"{item.nodeid.split('::')[0]} uses {sorted(fixtures & set(item.fixturenames))} "
                        f"but is not in SHARED[{group!r}]"
                        for item in items for group, (fixtures, modules) in SHARED.items()
                        if fixtures & set(getattr(item, "fixturenames", ())) and item.nodeid.split("::")[0] not in modules})
    if misplaced:
        raise pytest.UsageError("tests/conftest.py: " + "; ".join(misplaced))


@pytest.hookimpl(tryfirst=True)  # before xdist's own choice
def pytest_xdist_make_scheduler(config, log):
    """--dist loadfile, with the modules of one SHARED group in one work unit."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class SharedFixtureScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            module = super()._split_scope(nodeid)
            return WORKER_GROUP.get(module, module)

    return SharedFixtureScheduling(config, log)


def pytest_runtest_logreport(report):
    # a skip is reported once, by the setup phase (skipif, a fixture's skip) or the call (pytest.skip)
    if report.skipped:
        for system_package in SYSTEM_PACKAGES:
            if system_package.covers(report.nodeid, report.keywords):
                _skipped[system_package.group] += 1


def pytest_terminal_summary(terminalreporter):
    lines = []
    for system_package in SYSTEM_PACKAGES:
        count = _skipped[system_package.group]
        if count and not system_package.present():
            lines.append(f"{system_package.group}: {count} test{'s' * (count != 1)} skipped, "
                         f"{system_package.package} is not installed: {system_package.install_command()}")
    if lines:
        terminalreporter.section("not tested: a system package is missing", sep="=", yellow=True)
        for line in lines:
            terminalreporter.line(line, yellow=True)
