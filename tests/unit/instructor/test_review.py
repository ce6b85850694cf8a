"""autograder.instructor.review: FlagForReview marks the flagged items' grades as needing a manual grade, and
touches no gradebook when nothing was flagged."""
from nbformat.v4 import new_notebook

from autograder.instructor.review import REVIEW_RESOURCE, FlagForReview


def test_nothing_flagged_leaves_the_notebook_and_needs_no_gradebook():
    nb = new_notebook()
    resources = {REVIEW_RESOURCE: [], "nbgrader": {}}  # no db_url: reading it would raise
    assert FlagForReview().preprocess(nb, resources) == (nb, resources)


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
    FlagForReview().preprocess(new_notebook(), {REVIEW_RESOURCE: ["master_weights"], "nbgrader": info})
    assert marked == {("master_weights", "lesson20", "lesson20", "ada"): ("needs_manual_grade", True),
                      "committed": True}
