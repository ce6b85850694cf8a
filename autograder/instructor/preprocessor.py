"""GradeOutOfProcess: an nbgrader Autograde step that scores test cells from out-of-process checks.

It takes the place of nbgrader's Execute step. The submission's code runs in the sandbox;
the verdict is computed in this process; each autograded test cell gets the report as text
and the score in points as its result, which SaveAutoGrades then reads as usual.
"""
import json
import os
from pathlib import Path

from nbformat.v4 import new_output
from nbgrader.preprocessors import NbGraderPreprocessor
from nbgrader.utils import is_grade, is_solution
from traitlets import Bool, Float, Integer, Unicode

from ..attachments import beside
from ..grading import grade_notebook, recorded_repairs
from ..items import AUTO_ITEMS
from ..sandbox import Limits
from ..text import clip
from .reference import reference
from .review import REVIEW_RESOURCE
from .staging import EXCHANGE_FILES

MAX_PROBLEMS = 20  # errors the notebook raised that the results file keeps (a notebook may have thousands)


class GradeOutOfProcess(NbGraderPreprocessor):

    timeout = Float(60.0, help="Seconds (CPU and wall) for each graded item, and for loading the code: "
                    "`grade --timeout`, and Limits.timeout in the sandbox.").tag(config=True)
    memory_mb = Integer(4096, help="Memory limit of the sandboxed process, in MiB.").tag(config=True)
    max_processes = Integer(64, help="Processes and threads the submission may run at once.").tag(config=True)
    max_output_kb = Integer(256, help="Output of the submission kept per stream; the rest is dropped."
                            ).tag(config=True)
    include_hidden = Bool(True, help="Run the hidden checks as well as the visible ones.").tag(config=True)
    results_dir = Unicode("", help="If set, write <student>.<notebook>.json there: status, reason, problems, "
                          "and each item's score and report.").tag(config=True)

    def preprocess(self, nb, resources):
        tests = [c for c in nb.cells if c.cell_type == "code" and is_grade(c) and not is_solution(c)]
        known = {i.id for i in AUTO_ITEMS}
        item_ids = [c.metadata.nbgrader.grade_id for c in tests if c.metadata.nbgrader.grade_id in known]
        limits = Limits(timeout=self.timeout, memory_mb=self.memory_mb,
                        max_processes=self.max_processes, max_output_kb=self.max_output_kb)
        # RepairStructure (a sanitize step, before this one) recorded its repairs in the notebook
        # the files handed in beside the notebook, from the folder nbgrader runs it in (its autograded copy)
        folder = resources.get("metadata", {}).get("path")
        files = beside(folder, ignore=EXCHANGE_FILES)[0] if folder else {}
        result = grade_notebook(nb, item_ids, limits, reference() if self.include_hidden else None,
                                repaired=recorded_repairs(nb), files=files)
        for cell in tests:
            grade_id = cell.metadata.nbgrader.grade_id
            if grade_id in result.items:
                item = result.items[grade_id]
                score = min(item.score, float(cell.metadata.nbgrader.points))
                cell.outputs = [new_output("stream", name="stdout", text=result.report(grade_id) + "\n"),
                                new_output("execute_result", data={"text/plain": f"{score:g}"}, execution_count=None)]
            else:  # a test cell this lesson does not know: never full marks by default
                cell.outputs = [new_output("error", ename="UnknownTest", evalue=f"no checks for {grade_id}",
                                           traceback=[f"the lesson20 autograder has no checks for {grade_id!r}"])]
        resources[REVIEW_RESOURCE] = sorted(result.review)  # FlagForReview marks them in the gradebook
        if self.results_dir:
            self._save(resources, result)
        return nb, resources

    def _save(self, resources, result):
        info = resources.get("nbgrader", {})
        record = {"student": info.get("student"), "notebook": info.get("notebook"),
                  "status": result.status, "reason": clip(result.reason, "reason"),
                  "problems": result.problems[:MAX_PROBLEMS],  # each one's text is clipped already
                  "items": {i: {"score": r.score, "max_score": float(r.item.points), "report": result.report(i),
                                "rubric": {b["id"]: {"score": b["earned"] or 0.0, "max_score": b["points"],
                                                     "central": b["central"]} for b in r.behaviours()}}
                            for i, r in result.items.items()},
                  "review": {i: [clip(f, "note") for f in flags] for i, flags in result.review.items()}}
        path = Path(self.results_dir) / f"{info.get('student')}.{info.get('notebook')}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".part")
        tmp.write_text(json.dumps(record, indent=1, default=str))
        os.replace(tmp, path)
