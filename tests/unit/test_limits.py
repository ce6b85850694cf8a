"""autograder.limits: the grading policy, made from the command line."""
from autograder.__main__ import _limits, main
from autograder.limits import Limits


def test_timeout_sets_cells_items_and_three_times_that_for_the_whole():
    limits = Limits.for_timeout(4)
    assert (limits.cell_seconds, limits.item_seconds, limits.notebook_seconds, limits.checks_seconds) == (4, 4, 12, 12)
    assert Limits.for_timeout(None) == Limits()


def test_the_deadline_per_student_is_the_notebooks_the_checks_and_the_startup_slack():
    limits = Limits.for_timeout(2, startup_seconds=20)
    assert limits.student_seconds == 6 + 6 + 20
    assert Limits().student_seconds == Limits().notebook_seconds + Limits().checks_seconds + Limits().startup_seconds


def test_the_command_line_sets_the_slack_and_leaves_the_default_alone(monkeypatch):
    seen = []
    monkeypatch.setattr("autograder.__main__.cmd_check", lambda args: seen.append(_limits(args)) or 0)
    main(["check", "x.ipynb", "--startup-seconds", "15", "--timeout", "3"])
    main(["check", "x.ipynb"])
    assert seen == [Limits.for_timeout(3, startup_seconds=15), Limits()]
