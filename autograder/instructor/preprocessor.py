"""GradeOutOfProcess: an nbgrader Autograde step that scores test cells from out-of-process checks.

It takes the place of nbgrader's Execute step (pipeline.AUTOGRADE). The submission's code runs in the
sandbox; the verdict is computed in this process; each autograded test cell gets the report as text
and the score in points as its result, which SaveAutoGrades then reads as usual. The whole result
(status, reason, each item's rubric, the repairs, the review flags) goes into the grading's sink (sink.py),
where FlagForReview and the pipeline read it.
"""
from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Bool, Instance, Unicode

from ..attachments import beside
from ..items import AUTO_ITEMS
from .sink import ResultSink, notebook_key
from .staging import EXCHANGE_FILES


# where a check cell's score output carries the first thing its report asks the student to fix: the feedback
# page's summary reads it (page_summary.py); nbgrader reads only the output's text, the score
FIRST_MESSAGE = "lesson20_first_message"


class GradeOutOfProcess(NbGraderPreprocessor):

    limits = Instance("autograder.limits.Limits", kw={},
                      help="Every limit the submission is graded under (`grade --timeout` and --memory-mb: "
                      "course.nbgrader_config sets it); the defaults are Limits' own.").tag(config=True)
    include_hidden = Bool(True, help="Run the hidden checks as well as the visible ones.").tag(config=True)
    course = Unicode("", help="The course whose instructor notebooks hold the reference (course.course_config "
                     "sets it); \"\" for this package's own checkout.").tag(config=True)
    sink = Instance(ResultSink, args=(), help="Where the repairs come from and the result goes (pipeline.configure "
                    "sets the grading's own sink; by default each step has one of its own).").tag(config=True)

    def preprocess(self, nb, resources):
        from pathlib import Path

        from ..grading import grade_notebook  # the sandbox and torch: only when grading
        from .reference import reference
        where = [Path(self.course)] if self.course else []
        tests = [c for c in nb.cells if c.cell_type == "code" and is_grade(c) and not is_solution(c)]
        known = {i.id for i in AUTO_ITEMS}
        item_ids = [c.metadata.nbgrader.grade_id for c in tests if c.metadata.nbgrader.grade_id in known]
        # the files handed in beside the notebook, from the folder nbgrader runs it in (its autograded copy)
        folder = resources.get("metadata", {}).get("path")
        files = beside(folder, ignore=EXCHANGE_FILES)[0] if folder else {}
        # RepairStructure (a sanitize step, before this one) put its repairs in the sink
        found = self.sink.found(notebook_key(resources))
        result = grade_notebook(nb, item_ids, self.limits, reference(*where) if self.include_hidden else None,
                                repaired=list(found.repairs), files=files)
        if self.include_hidden:  # the forks held reference code (stand-ins): none of it may reach the page
            from ..items import ROOT
            from .scrub import reference_secrets, scrub_result
            scrub_result(result, reference_secrets(Path(self.course) if self.course else ROOT))
        for cell in tests:
            grade_id = cell.metadata.nbgrader.grade_id
            if grade_id in result.items:
                item = result.items[grade_id]
                score = min(item.score, float(cell.metadata.nbgrader.points))
                fix = result.first_message(grade_id) if score < float(cell.metadata.nbgrader.points) else ""
                cell.outputs = [new_output("stream", name="stdout", text=result.report(grade_id) + "\n"),
                                new_output("execute_result", data={"text/plain": f"{score:g}"}, execution_count=None,
                                           metadata={FIRST_MESSAGE: fix} if fix else {})]
            else:  # a test cell this lesson does not know: never full marks by default
                cell.outputs = [new_output("error", ename="UnknownTest", evalue=f"no checks for {grade_id}",
                                           traceback=[f"the lesson20 autograder has no checks for {grade_id!r}"])]
        found.result = result  # FlagForReview marks its review flags in the gradebook
        return nb, resources
