"""AnnounceSubmission: a GenerateFeedback step that puts, among the notes at the top of the feedback page, when the
submission counts as submitted, how late it was and what that cost (text.submission_line, from
arrival.lateness), as left in the grading's sink by the pipeline or by handback. Nothing is added where there is
no due date."""
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Instance

from .page_summary import add_page_note
from .sink import ResultSink, notebook_key


class AnnounceSubmission(NbGraderPreprocessor):

    sink = Instance(ResultSink, args=(), help="Where the pipeline left the note (pipeline.configure sets the "
                    "grading's own sink).").tag(config=True)

    def preprocess(self, nb, resources):
        text = self.sink.take_note(notebook_key(resources))
        if text:  # the grader's own words and times: nothing from the submission
            add_page_note(resources, text)
        return nb, resources
