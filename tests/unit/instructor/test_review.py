"""autograder.instructor.review: FlagForReview marks the flagged items' grades as needing a manual grade, and
touches no gradebook when nothing was flagged."""
from nbformat.v4 import new_notebook

from autograder.grading import SubmissionResult
from autograder.items import get_item
from autograder.runner import ItemResult, Outcome
from autograder.instructor.review import FlagForReview
from autograder.instructor.sink import ResultSink

KEY = ("ada", "lesson20")


def result_with(review: dict) -> SubmissionResult:
    """A result as GradeOutOfProcess makes it, its items set aside for review with these flags."""
    items = {i: ItemResult(get_item(i), [Outcome("ran", True, "")]) for i in ("master_weights", "static_loss_scaler")}
    for item_id, flags in review.items():
        items[item_id].review = flags
    return SubmissionResult("graded", items=items)


def sink_with(review: dict) -> ResultSink:
    """A sink holding ada's result, as GradeOutOfProcess leaves it, with these review flags."""
    sink = ResultSink()
    sink.found(KEY).result = result_with(review)
    return sink


def test_nothing_flagged_leaves_the_notebook_and_needs_no_gradebook():
    nb = new_notebook()
    resources = {"nbgrader": {"student": "ada", "notebook": "lesson20"}}  # no db_url: reading it would raise
    assert FlagForReview(sink=sink_with({})).preprocess(nb, resources) == (nb, resources)
    assert FlagForReview().preprocess(nb, resources) == (nb, resources)  # no result at all: nothing to flag


def test_flagged_items_need_a_manual_grade(monkeypatch):
    marked = {}

    class Grade:
        def __setattr__(self, name, value):
            marked[self.key] = (name, value)

    class FakeGradebook:  # nbgrader's Gradebook, as far as this step uses it
        def __init__(self, db_url):
            assert db_url == "sqlite:///gb.db"
            self.db = self

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            marked["committed"] = marked.get("committed", False)

        def find_grade(self, grade_id, notebook, assignment, student):
            grade = Grade()
            object.__setattr__(grade, "key", (grade_id, notebook, assignment, student))
            return grade

        def commit(self):
            marked["committed"] = True

    monkeypatch.setattr("autograder.instructor.review.Gradebook", FakeGradebook)
    info = {"db_url": "sqlite:///gb.db", "notebook": "lesson20", "assignment": "lesson20", "student": "ada"}
    sink = sink_with({"master_weights": ["read the reference's frames"]})
    sink.found(("bob", "lesson20")).result = result_with({"static_loss_scaler": ["x"]})
    FlagForReview(sink=sink).preprocess(new_notebook(), {"nbgrader": info})  # ada's flags, not bob's
    assert marked == {("master_weights", "lesson20", "lesson20", "ada"): ("needs_manual_grade", True),
                      "committed": True}


def test_an_item_with_a_behaviour_not_checked_needs_a_manual_grade(monkeypatch):
    """Graded without a memory cgroup: the measured behaviour is not checked, and formgrader lists the item."""
    marked = []

    class FakeGradebook:
        def __init__(self, db_url):
            self.db = self

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            pass

        def find_grade(self, grade_id, *where):
            marked.append(grade_id)
            return type("Grade", (), {})()

        def commit(self):
            pass

    monkeypatch.setattr("autograder.instructor.review.Gradebook", FakeGradebook)
    sink = sink_with({})
    item = sink.found(KEY).result.items["master_weights"]
    item.outcomes.append(Outcome("memory", False, "no cgroup", reason="not_checked", behaviour=item.behaviours()[0]["id"]))
    info = {"db_url": "sqlite:///gb.db", "notebook": "lesson20", "assignment": "lesson20", "student": "ada"}
    FlagForReview(sink=sink).preprocess(new_notebook(), {"nbgrader": info})
    assert marked == ["master_weights"]
