"""Written answers that follow the submission: a hand score counts only for the text it was given for.

nbgrader's autograde marks every written answer that has a manual score as needing a manual grade again, on
every regrade, yet keeps the old score; formgrader then says "needs manual grade" while the score is still
counted. Here each grading records a hash of every written answer's text (the record's "answers"). After
autograde, an answer that was scored by hand (a manual score, no longer needing one) keeps its score only if
its text is the same as when it was last graded; one whose text changed (a resubmission, a blank answer)
stays marked as needing a manual grade, and export and the report count it as still to grade, as formgrader
does.
"""
import hashlib
import json
import warnings
from pathlib import Path

from ..items import ASSIGNMENT, MANUAL_ITEMS
from .gradebook import COURSE_ID, NOT_IN_SESSION

MANUAL_IDS = tuple(i.id for i in MANUAL_ITEMS)


def answer_hashes(notebook: Path) -> dict:
    """{written answer's grade id: a hash of its text} in a notebook nbgrader wrote ({} if none can be read)."""
    try:
        doc = json.loads(Path(notebook).read_text())
    except (OSError, ValueError):
        return {}
    found = {}
    for cell in doc.get("cells", []) if isinstance(doc, dict) else []:
        meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
        grade_id = meta.get("grade_id") if isinstance(meta, dict) else None
        if grade_id in MANUAL_IDS:
            source = cell.get("source", "")
            text = "".join(source) if isinstance(source, list) else str(source)
            found[grade_id] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return found


def hand_scores(db_url: str, student: str) -> dict:
    """{written answer's grade id: (its manual score, whether it needs a manual grade)} in the gradebook now."""
    from nbgrader.api import Gradebook, MissingEntry
    with warnings.catch_warnings(), Gradebook(db_url, course_id=COURSE_ID) as gb:
        warnings.filterwarnings("ignore", message=NOT_IN_SESSION)
        try:
            grades = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student).grades
        except MissingEntry:
            return {}
        return {g.name: (g.manual_score, bool(g.needs_manual_grade)) for g in grades if g.name in MANUAL_IDS}


def keep_hand_scores(db_url: str, student: str, before: dict, graded_then: dict, now: dict) -> list:
    """After autograde: mark as graded again each written answer that was scored by hand (`before`, from
    hand_scores before autograde) and whose text (`now`) is what was graded then (`graded_then`). Returns the
    grade ids that need a manual grade because their text changed."""
    from nbgrader.api import Gradebook, MissingEntry
    changed, keep = [], []
    for grade_id in MANUAL_IDS:
        score, needed = before.get(grade_id, (None, True))
        if score is None or needed:
            continue
        (keep if graded_then.get(grade_id) and graded_then.get(grade_id) == now.get(grade_id) else changed).append(grade_id)
    if keep:
        with warnings.catch_warnings(), Gradebook(db_url, course_id=COURSE_ID) as gb:
            warnings.filterwarnings("ignore", message=NOT_IN_SESSION)
            for grade_id in keep:
                try:
                    gb.find_grade(grade_id, ASSIGNMENT, ASSIGNMENT, student).needs_manual_grade = False
                except MissingEntry:
                    continue
            gb.db.commit()
    return changed
