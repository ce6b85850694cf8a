"""After grading by hand: the feedback pages again, from the gradebook, so that the page a student fetches
carries the scores and comments given in formgrader.

`grade` writes each page as it grades (pipeline.grade_student); formgrader then changes only the gradebook.
`export` calls `rewrite_feedback` for the students with something given by hand, each in the output folder
that holds their newest record (a shard's, with --from), with the same nbgrader GenerateFeedback step and
configuration as `grade`: the page is the one `grade` would write now.
"""
from pathlib import Path

from ..limits import Limits
from ..text import clip, no_feedback
from .course import nbgrader_config
from .gradebook import graded_by_hand, newest_folder
from .pipeline import run_with_retries
from .state import load_state


def rewrite_feedback(db_url: str, students, folders) -> tuple:
    """Write again the feedback page of each of `students` that was graded and has something given by hand
    in the gradebook. Returns (the students whose page was written, {student: why not} for those whose
    page could not be)."""
    from nbgrader.converters import GenerateFeedback
    where = {}
    for student in students:
        folder = newest_folder(folders, student)
        record = load_state(folder, student) if folder is not None else None
        if record is not None and record.status == "graded":
            where[student] = Path(folder)
    written, failed = [], {}
    configs = {}
    for student in sorted(graded_by_hand(db_url, sorted(where))):
        folder = where[student]
        if folder not in configs:
            configs[folder] = nbgrader_config(folder, db_url, Limits())
        error = run_with_retries(configs[folder], student, GenerateFeedback)
        if error:
            failed[student] = clip(no_feedback(error), "reason")
        else:
            written.append(student)
    return written, failed
