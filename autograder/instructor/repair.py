"""RepairStructure: an nbgrader Autograde sanitize step that undoes what editing did to a notebook's cells.

It runs before nbgrader's own sanitize steps, which fail a whole submission on a duplicated grade
id (a copied cell keeps its nbgrader metadata) or metadata they cannot read. The repairs are kept
in the notebook's metadata, so that GradeOutOfProcess can tell the student what was repaired.
Whatever the submitted notebook held under the grader's own keys is dropped first: only this step
writes them.
"""
from dataclasses import asdict

from nbgrader.preprocessors import NbGraderPreprocessor

from ..structure import repair_structure
from ..structure import REPAIRS_KEY, drop_grader_metadata


class RepairStructure(NbGraderPreprocessor):

    def preprocess(self, nb, resources):
        drop_grader_metadata(nb)
        repairs = repair_structure(nb)
        for repair in repairs:
            self.log.warning("Repaired: %s", repair.text)
        if repairs:
            nb.metadata[REPAIRS_KEY] = [asdict(r) for r in repairs]
        return nb, resources
