"""nbgrader configuration for Lesson 20. Paths are relative to this file, so any working directory works."""
import os

from autograder.items import ASSIGNMENT, SOLUTIONS_DIR

c = get_config()  # noqa: F821 (provided by nbgrader's config loader)

root = os.path.dirname(os.path.abspath(__file__))
c.CourseDirectory.root = root
c.CourseDirectory.course_id = ASSIGNMENT
c.CourseDirectory.source_directory = SOLUTIONS_DIR  # instructor notebooks, with the reference code
c.CourseDirectory.release_directory = "lessons"    # generated student notebooks (python -m autograder release)
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(root, "gradebook.db")

# Student stubs that name their exercise. The rest is nbgrader's default list, in its order:
# ClearHiddenTests must come after ComputeChecksums and SaveCells, then ComputeChecksums runs again.
c.GenerateAssignment.preprocessors = [
    "nbgrader.preprocessors.IncludeHeaderFooter",
    "nbgrader.preprocessors.InstantiateTests",
    "nbgrader.preprocessors.LockCells",
    "autograder.instructor.release.ClearSolutionsNamed",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.CheckCellMetadata",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.SaveCells",
    "nbgrader.preprocessors.ClearHiddenTests",
    "nbgrader.preprocessors.ClearMarkScheme",
    "nbgrader.preprocessors.ComputeChecksums",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Sanitizing: RepairStructure first, so that a copied cell (a duplicated grade id), a check cell turned
# into markdown or damaged metadata is repaired and noted rather than failing the whole submission
# (it drops a submission's own copy of the grader's metadata before it writes its own);
# then SanitizeHtml, which makes every cell safe in formgrader's and the feedback's HTML pages: after
# RepairStructure, which turns a check cell made markdown back into code, and whose metadata it keeps;
# before the notebook is written, since both pages are made from it;
# then nbgrader's own steps, in its order (OverwriteCells puts back the instructor's grade cells).
c.Autograde.sanitize_preprocessors = [
    "autograder.instructor.repair.RepairStructure",
    "autograder.instructor.sanitize.SanitizeHtml",
    "nbgrader.preprocessors.ClearOutput",
    "nbgrader.preprocessors.DeduplicateIds",
    "nbgrader.preprocessors.OverwriteKernelspec",
    "nbgrader.preprocessors.OverwriteCells",
    "nbgrader.preprocessors.CheckCellMetadata",
]

# Autograding: GradeOutOfProcess takes the place of Execute. It runs the submission's code in a
# sandbox, computes the verdict outside it, and writes each test cell's report and score, which
# SaveAutoGrades then records. The whole list is assigned (nbgrader reads this file twice, so
# .insert() would add the step twice); the order is nbgrader's own otherwise.
c.Autograde.autograde_preprocessors = [
    "autograder.instructor.preprocessor.GradeOutOfProcess",
    "nbgrader.preprocessors.IgnorePattern",
    "nbconvert.preprocessors.ClearMetadataPreprocessor",
    "nbgrader.preprocessors.LimitOutput",
    "nbgrader.preprocessors.SaveAutoGrades",
    "autograder.instructor.review.FlagForReview",  # after SaveAutoGrades, whose flags it overrides
    "nbgrader.preprocessors.AssignLatePenalties",
    "nbgrader.preprocessors.CheckCellMetadata",
]
# A test cell a student deleted comes back from the gradebook instead of silently scoring 0.
c.OverwriteCells.add_missing_cells = True
