"""autograder.instructor.answers: a written answer scored by hand keeps its score only while its text is the one
that was graded; after autograde (which marks every one as needing a grade) an unchanged one is graded again,
a changed one is left for the instructor, and export and the report count it as still to grade."""
import json

from nbgrader.api import Gradebook

from autograder.instructor.answers import answer_hashes, hand_scores, keep_hand_scores
from autograder.instructor.course import nbgrader_config, prepare_alembic, prepare_gradebook
from autograder.instructor.gradebook import COURSE_ID, waiting_for_hand
from autograder.items import ASSIGNMENT, MANUAL_ITEMS
from autograder.limits import Limits
from tests.helpers import STUDENT_NB

Q1, Q2 = MANUAL_ITEMS[0].id, MANUAL_ITEMS[1].id


def with_answers(path, answers: dict):
    nb = json.loads(STUDENT_NB.read_text())
    for cell in nb["cells"]:
        grade_id = cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    path.write_text(json.dumps(nb))
    return path


def test_an_answers_hash_changes_with_its_text_alone(tmp_path):
    first = answer_hashes(with_answers(tmp_path / "a.ipynb", {Q1: "fp16 overflows", Q2: "masters"}))
    assert set(first) == {i.id for i in MANUAL_ITEMS}
    second = answer_hashes(with_answers(tmp_path / "b.ipynb", {Q1: "", Q2: "masters"}))
    assert second[Q1] != first[Q1] and second[Q2] == first[Q2]
    assert answer_hashes(tmp_path / "missing.ipynb") == {}


def test_a_changed_answer_needs_grading_again_and_an_unchanged_one_keeps_its_score(tmp_path):
    prepare_alembic()
    db_url = f"sqlite:///{tmp_path / 'gradebook.db'}"
    prepare_gradebook(nbgrader_config(tmp_path, db_url, Limits()), tmp_path)
    with Gradebook(db_url, course_id=COURSE_ID) as gb:
        gb.update_or_create_student("ada")
        gb.update_or_create_submission(ASSIGNMENT, "ada")
        for grade_id in (Q1, Q2):  # scored in formgrader
            grade = gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, "ada")
            grade.manual_score, grade.needs_manual_grade = 1.5, False
        gb.db.commit()
    before = hand_scores(db_url, "ada")
    assert before[Q1] == (1.5, False) and waiting_for_hand(db_url, ["ada"]) == {"ada": [i.id for i in MANUAL_ITEMS[2:]]}
    with Gradebook(db_url, course_id=COURSE_ID) as gb:  # what nbgrader's autograde does on a resubmission
        for grade_id in (Q1, Q2):
            gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, "ada").needs_manual_grade = True
        gb.db.commit()
    then = answer_hashes(with_answers(tmp_path / "then.ipynb", {Q1: "fp16 overflows", Q2: "masters"}))
    now = answer_hashes(with_answers(tmp_path / "now.ipynb", {Q1: "", Q2: "masters"}))
    assert keep_hand_scores(db_url, "ada", before, then, now) == [Q1]
    after = hand_scores(db_url, "ada")
    assert after[Q2] == (1.5, False)   # unchanged: its score stands
    assert after[Q1] == (1.5, True)    # blank now: to grade again, as formgrader will say
    assert waiting_for_hand(db_url, ["ada"])["ada"][0] == Q1
