"""autograder.instructor.pipeline: the grading steps are classes, in nbgrader's order with ours in their places,
and `configure` installs them so that nbgrader builds them (tests/integration/test_grade_cli.py runs the whole pipeline)."""
from nbconvert.exporters import NotebookExporter
from nbgrader.preprocessors import CheckCellMetadata, ComputeChecksums, OverwriteCells, SaveAutoGrades, SaveCells
from traitlets.config import Config

from autograder.instructor import pipeline
from autograder.instructor.preprocessor import GradeOutOfProcess
from autograder.instructor.repair import RepairStructure
from autograder.instructor.review import FlagForReview
from autograder.instructor.sanitize import SanitizeHtml


def test_every_step_is_a_class_and_ours_are_where_they_must_be():
    for steps in (pipeline.RELEASE, pipeline.SANITIZE, pipeline.AUTOGRADE):
        assert all(isinstance(step, type) for step in steps)
    sanitize, autograde = pipeline.SANITIZE, pipeline.AUTOGRADE
    # the repair first; the HTML cleaned after every step that can change a cell's type or text (OverwriteCells)
    assert sanitize[0] is RepairStructure and sanitize.index(SanitizeHtml) > sanitize.index(OverwriteCells)
    assert sanitize[sanitize.index(SanitizeHtml) + 1:] == [CheckCellMetadata]
    assert autograde[0] is GradeOutOfProcess
    assert autograde.index(FlagForReview) == autograde.index(SaveAutoGrades) + 1
    release = pipeline.RELEASE  # nbgrader's rule: checksums after SaveCells, and again at the end
    assert release.index(SaveCells) > release.index(ComputeChecksums) and release[-2] is ComputeChecksums


def test_configure_installs_steps_nbgrader_can_build():
    c = Config()
    pipeline.configure(c)
    assert c.Autograde.autograde_preprocessors == pipeline.AUTOGRADE and c.OverwriteCells.add_missing_cells
    exporter = NotebookExporter(config=c)
    for step in pipeline.SANITIZE + pipeline.AUTOGRADE:
        exporter.register_preprocessor(step, enabled=True)
    built = exporter._preprocessors[-len(pipeline.SANITIZE + pipeline.AUTOGRADE):]
    assert [type(p) for p in built] == pipeline.SANITIZE + pipeline.AUTOGRADE


def test_gradebook_errors_are_told_from_the_submissions():
    assert pipeline.is_db_error("sqlalchemy.exc.OperationalError: database is locked")
    assert not pipeline.is_db_error("CellInvalidMetadata: cell 3") and not pipeline.is_db_error("")
