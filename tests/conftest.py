"""Says at the end of a run which tests were skipped for lack of a system package, and how to install it.

A green run that silently skipped the sandbox or the browser would read as "all tested". Each group in
tests/system_packages.py gets one line when some of its tests were skipped and its package is missing.
"""
from collections import Counter

from tests.system_packages import SYSTEM_PACKAGES

pytest_plugins = ["tests.wheel", "tests.corpus", "tests.graded_class"]  # the wheel and a student venv, the graded
# corpus, and one graded class for the CLI and the instructor's pages: each once per run

_skipped = Counter()  # group -> tests of that group skipped in this run


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
