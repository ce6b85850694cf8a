"""FlagForReview: an nbgrader Autograde step that sets aside for manual grading the items the sandbox's guard flagged.

A submission whose code reached for the grader's internals (guard.py: frames, the garbage collector,
ctypes, the reply pipe, rebinding what the probes rely on) is not graded automatically on the items
concerned: GradeOutOfProcess scores them 0 and lists them in resources[REVIEW_RESOURCE]; this step,
after SaveAutoGrades, marks those grades as needing a manual grade, so formgrader lists the
submission among those to grade by hand, and an instructor's score then replaces the 0.
"""
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor

REVIEW_RESOURCE = "lesson20_review"


class FlagForReview(NbGraderPreprocessor):

    def preprocess(self, nb, resources):
        flagged = resources.get(REVIEW_RESOURCE) or []
        if not flagged:
            return nb, resources
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            for grade_id in flagged:
                grade = gb.find_grade(grade_id, info["notebook"], info["assignment"], info["student"])
                grade.needs_manual_grade = True
            gb.db.commit()
        return nb, resources
