"""autograder.instructor.sink: one sink per configuration, the same object in every step nbgrader makes from
it (traitlets copies configuration values), and one entry per notebook, opened afresh and taken once."""
import copy

from traitlets.config import Config

from autograder.instructor.pipeline import configure, sink_of
from autograder.instructor.preprocessor import GradeOutOfProcess
from autograder.instructor.repair import RepairStructure
from autograder.instructor.review import FlagForReview
from autograder.instructor.sink import ResultSink, notebook_key
from autograder.structure import Repair


def test_every_step_made_from_a_copied_configuration_shares_its_sink():
    c = Config()
    configure(c)
    sink = sink_of(c)
    merged = Config()
    merged.merge(copy.deepcopy(c))  # as nbgrader_config.py merges course_config(), and nbgrader copies it again
    steps = [RepairStructure(config=Config(merged)), GradeOutOfProcess(config=merged), FlagForReview(config=merged)]
    assert isinstance(sink, ResultSink) and all(step.sink is sink for step in steps)
    other = Config()
    configure(other)
    assert sink_of(other) is not sink  # a configuration of its own, a sink of its own


def test_steps_made_without_configure_keep_a_sink_each():
    assert RepairStructure().sink is not RepairStructure().sink


def test_an_entry_is_opened_afresh_found_and_taken_once():
    sink, key = ResultSink(), ("ada", "lesson20")
    sink.open(key, [Repair("master_weights", "stale")])
    found = sink.open(key, [Repair("master_weights", "fresh")])
    found.result = "graded"
    assert sink.found(key) is found and [r.text for r in found.repairs] == ["fresh"]
    assert sink.found(("bob", "lesson20")).repairs == []  # another student's entry, empty
    assert sink.take(key) is found and sink.take(key).result is None


def test_the_key_is_the_student_and_notebook_nbgrader_converts():
    assert notebook_key({"nbgrader": {"student": "ada", "notebook": "lesson20", "db_url": "x"}}) == ("ada", "lesson20")
    assert notebook_key({}) == (None, None) and notebook_key(None) == (None, None)
