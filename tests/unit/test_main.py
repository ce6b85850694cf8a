"""autograder.__main__: the command line's commands, and its errors for a wrong use (no grading here:
tests/integration/test_grade_cli.py runs `grade`)."""
import pytest

from autograder.__main__ import main


def test_every_command_has_help(capsys):
    for command in ("check", "release", "grade", "export", "report"):
        with pytest.raises(SystemExit) as caught:
            main([command, "--help"])
        assert caught.value.code == 0 and command in capsys.readouterr().out


def test_an_unknown_command_is_refused(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["regrade"])
    assert caught.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_check_on_a_missing_notebook_says_so(tmp_path):
    with pytest.raises(SystemExit) as caught:
        main(["check", str(tmp_path / "missing.ipynb")])
    assert "missing.ipynb" in str(caught.value.code)


def test_report_on_a_folder_without_a_graded_class_says_what_is_missing(tmp_path):
    with pytest.raises(SystemExit) as caught:
        main(["report", "--out", str(tmp_path)])
    assert str(caught.value.code) == (f"no graded class in {tmp_path.resolve()}: {tmp_path.resolve()} has no state/ "
                                      f"folder (`python -m autograder grade SUBMITTED --out {tmp_path.resolve()}` "
                                      "writes one per student, and the report with them)")
