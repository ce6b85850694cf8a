"""FlagForReview: an nbgrader Autograde step that sets aside for manual grading the items the sandbox's guard flagged,
and those with a behaviour the grading machine could not check (a missing protection: protections.py).

A submission whose code reached for the grader's internals (guard.py: frames, the garbage collector,
ctypes, the reply pipe, rebinding what the probes rely on) is not graded automatically on the items
concerned: GradeOutOfProcess scores them 0 and puts them in its result's review flags; this step,
after SaveAutoGrades, marks those grades as needing a manual grade, so formgrader lists the
submission among those to grade by hand, and an instructor's score then replaces the 0.
"""
from nbgrader.api import Gradebook
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Instance

from ..rubric import not_checked
from .sink import ResultSink, notebook_key


class FlagForReview(NbGraderPreprocessor):

    sink = Instance(ResultSink, args=(), help="Where GradeOutOfProcess put its result (pipeline.configure sets the "
                    "grading's own sink; by default each step has one of its own).").tag(config=True)

    def preprocess(self, nb, resources):
        result = self.sink.found(notebook_key(resources)).result
        # set aside by the guard, or holding a behaviour this machine could not check (protections.py): both
        # wait for the instructor's score in formgrader
        unchecked = [i for i, r in result.items.items() if not_checked(r.behaviours())] if result is not None else []
        flagged = sorted({*result.review, *unchecked}) if result is not None else []
        if not flagged:
            return nb, resources
        info = resources["nbgrader"]
        with Gradebook(info["db_url"]) as gb:
            for grade_id in flagged:
                grade = gb.find_grade(grade_id, info["notebook"], info["assignment"], info["student"])
                grade.needs_manual_grade = True
            gb.db.commit()
        return nb, resources
