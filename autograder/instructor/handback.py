"""After grading by hand: the feedback pages again, from the gradebook, so that the page a student fetches
carries the scores and comments given in formgrader.

`grade` writes each page as it grades (pipeline.autograde_student); formgrader then changes only the gradebook.
`export` calls `rewrite_feedback` for every graded student (a score or comment may also have been taken back),
each in the output folder that holds their newest record (a shard's, with --from), with the same nbgrader
GenerateFeedback step and configuration as `grade`: the page is the one `grade` would write now. The page is
made in a folder of its own and moved into place only once it is whole, so a page that cannot be made leaves
the one there as it was.
"""
import contextlib
import os
import shutil
from pathlib import Path

from ..limits import Limits
from ..text import clip
from .messages import no_feedback
from .course import feedback_page, nbgrader_config, pages_lock
from .files import file_lock
from .gradebook import newest_record
from .pipeline import leave_note, run_with_retries


def rewrite_feedback(db_url: str, students, folders, waiting=None) -> tuple:
    """Write again the feedback page of each of `students` whose newest record says graded. Returns (the
    students whose page was written, {student: why not} for those whose page could not be).

    Each folder's pages lock (course.pages_lock) is held alone throughout: a `grade` running in one of them
    is waited for (`waiting(folder)` is called, if given, when it has to wait), so that no page is made from
    an autograded notebook that grade is halfway through writing."""
    with contextlib.ExitStack() as locks:
        for folder in sorted({Path(f).resolve() for f in folders if Path(f).is_dir()}):  # one order: no deadlock
            told = (lambda f=folder: waiting(f)) if waiting is not None else None
            locks.enter_context(file_lock(pages_lock(folder), waiting=told))
        return _rewrite(db_url, students, folders)


def _rewrite(db_url: str, students, folders) -> tuple:
    from nbgrader.converters import GenerateFeedback
    # a penalty takes at most what the student earned: grades.json's rows (export) give the items' scores
    totals = {s: sum(v["score"] for v in row.get("items", {}).values())
              for s, row in students.items()} if isinstance(students, dict) else {}
    where, records = {}, {}
    for student in students:
        folder, record = newest_record(folders, student)
        if record is not None and record.status == "graded":
            where[student], records[student] = Path(folder).resolve(), record
    written, failed, configs = [], {}, {}
    for student in sorted(where):
        folder = where[student]
        if folder not in configs:
            made = folder / f".feedback-{os.getpid()}"  # pages being made, beside the class's feedback/
            shutil.rmtree(made, ignore_errors=True)
            cfg = nbgrader_config(folder, db_url, Limits())
            cfg.CourseDirectory.feedback_directory = str(made)
            configs[folder] = (cfg, made)
        cfg, made = configs[folder]
        leave_note(cfg, records[student], totals.get(student, 0.0))
        error = run_with_retries(cfg, student, GenerateFeedback)
        page = feedback_page(folder, student, made)
        if error or not page.is_file():
            failed[student] = clip(no_feedback(error or "nbgrader wrote no page"), "reason")
            continue
        target = feedback_page(folder, student).parent
        target.mkdir(parents=True, exist_ok=True)
        for made_file in sorted(page.parent.iterdir()):
            os.replace(made_file, target / made_file.name)  # the page a student fetches is whole, old or new
        written.append(student)
    for _, made in configs.values():
        shutil.rmtree(made, ignore_errors=True)
    return written, failed
