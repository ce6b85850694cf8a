"""Says at the end of a run which tests were skipped for lack of a system package, and how to install it.

A green run that silently skipped the sandbox or the browser would read as "all tested". Each group in
tests/system_packages.py gets one line when some of its tests were skipped and its package is missing.

At the start, the checkout under test keeps its solutions, hidden checks and gradebook from other accounts, as
docs/instructors.md's checklist has an instructor do: `grade` refuses to start otherwise (autograder/instructor/privacy.py).

torch computes on one thread in this process and in every process the tests start (OMP_NUM_THREADS), as the
sandbox and the checks do (runner.one_thread): the tests' models are tiny, and the corpus is graded beside them on
the other cores, where an OpenMP thread of theirs would spin for a core the gradings need.
"""
import os
from collections import Counter

os.environ["OMP_NUM_THREADS"] = "1"  # before torch is first imported, here or in a process a test starts

import torch  # noqa: E402

from tests.system_packages import SYSTEM_PACKAGES  # noqa: E402

torch.set_num_threads(1)

pytest_plugins = ["tests.wheel", "tests.corpus", "tests.graded_class"]  # the wheel and a student venv, the graded
# corpus, and one graded class for the CLI and the instructor's pages: each once per run

_skipped = Counter()  # group -> tests of that group skipped in this run


def pytest_sessionstart(session):
    from autograder.instructor.privacy import exposed, instructor_paths
    from autograder.items import ROOT
    for top, _ in exposed(instructor_paths(ROOT)):  # only the top: what is inside can no longer be reached
        os.chmod(top, os.stat(top).st_mode & 0o7700)


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
