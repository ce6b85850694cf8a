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


def test_only_takes_an_exercise_by_its_id_or_by_a_name_it_defines():
    from autograder.__main__ import only_item
    assert only_item("accumulate_gradients").id == "accumulate_gradients"
    assert only_item("StaticLossScaler").id == "static_loss_scaler"
    assert only_item("accumulate_token_gradients").id == "token_accumulation"
    with pytest.raises(SystemExit) as caught:
        only_item("accumulate")
    assert "no such exercise" in str(caught.value.code) and "master_weights (make_master_params" in str(caught.value.code)


def test_the_lessons_demo_cells_are_tagged_and_only_they_are_skipped():
    """Every code cell of the student notebook that is not the setup, a quiz, an exercise or its check is a demo,
    tagged so; `check --only` empties exactly those, each in its place."""
    import nbformat

    from autograder.__main__ import DEMO_TAG, without_demos
    from tests.helpers import STUDENT_NB
    nb = nbformat.read(str(STUDENT_NB), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    lesson_own = [c for c in code if not c.metadata.get("nbgrader") and c.id != "cell-01"
                  and not c.source.startswith("quiz(")]
    assert len(lesson_own) >= 10 and all(DEMO_TAG in c.metadata.get("tags", []) for c in lesson_own)
    kept = {c.id: c.source for c in code if c not in lesson_own}
    count = len(nb.cells)
    assert without_demos(nb) == len(lesson_own) and len(nb.cells) == count
    assert all(c.source == "" for c in lesson_own) and {c.id: c.source for c in code if c not in lesson_own} == kept


def test_check_only_runs_one_exercise_without_the_demos(tmp_path, capsys):
    """`check --only` reports the one exercise, and a demo cell that would raise is never run."""
    import nbformat

    from tests.submissions import make_submission
    nb = make_submission("reference")
    demo = next(c for c in nb.cells if "demo" in c.metadata.get("tags", []))
    demo.source = 'raise RuntimeError("the demo ran")'
    for cell in nb.cells:  # the exercise fails, so the report lists errors raised elsewhere in the notebook
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "static_loss_scaler_solution":
            cell.source = cell.source.replace("return loss * self.scale", "return loss")
    path = tmp_path / "lesson20.ipynb"
    nbformat.write(nb, str(path))
    assert main(["check", str(path), "--only", "StaticLossScaler"]) == 1
    out = capsys.readouterr().out
    assert "static_loss_scaler only: 12 demo cells skipped" in out and "static_loss_scaler:" in out
    assert "the demo ran" not in out and "accumulate_gradients" not in out
