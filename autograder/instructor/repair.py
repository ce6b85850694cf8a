"""RepairStructure: an nbgrader Autograde sanitize step that undoes what editing did to a notebook's cells.

It runs before nbgrader's own sanitize steps, which fail a whole submission on a duplicated grade
id (a copied cell keeps its nbgrader metadata) or metadata they cannot read. The repairs it made go
into the grading's sink (sink.py), where GradeOutOfProcess reads them to tell the student what was
repaired. Whatever the submitted notebook held under the grader's own keys is dropped first: only the
grader writes them.
"""
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Instance

from ..structure import drop_grader_metadata, repair_structure
from .sink import ResultSink, notebook_key


class RepairStructure(NbGraderPreprocessor):

    sink = Instance(ResultSink, args=(), help="Where the repairs go (pipeline.configure sets the grading's own "
                    "sink; by default each step has one of its own).").tag(config=True)

    def preprocess(self, nb, resources):
        drop_grader_metadata(nb)
        repairs = repair_structure(nb)
        for repair in repairs:
            self.log.warning("Repaired: %s", repair.text)
        self.sink.open(notebook_key(resources), repairs)
        return nb, resources
