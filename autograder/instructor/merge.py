"""`export --out OUT --from SHARD...`: the shards' classes as one class in OUT.

Each shard's `grade` writes its students' staged submissions, autograded notebooks and feedback pages in its own
folder; the gradebook is the one they share (--db-url). nbgrader's formgrader and release_feedback read those
three folders under one course root, so OUT gets a copy of each student's, from the shard that holds their newest
record, and an nbgrader_config.py pointing at the shared gradebook: formgrader started in OUT lists the whole
class, and `python -m autograder release_feedback --out OUT` releases every page. Each copy is made beside its
place and moved in only once whole, under the shard's pages lock (a `grade` running there is waited for).
"""
import shutil
from pathlib import Path

from ..items import ASSIGNMENT
from .course import CLASS_FOLDERS, pages_lock, write_formgrader_config
from .files import file_lock
from .gradebook import newest_record

# a student's folders that formgrader and release_feedback read: the staged submission (its timestamp.txt is
# the one the gradebook holds), the autograded notebook, the feedback page with nbgrader's exchange files
COPIED = ("submitted_directory", "autograded_directory", "feedback_directory")


def merge_class(out: Path, sources, students, db_url: str, root: Path = None, waiting=None) -> list:
    """Copy into `out` the folders of each of `students` whose newest record is in one of `sources`, and write
    OUT/nbgrader_config.py for the class's gradebook `db_url`. Returns the students copied."""
    out = Path(out).resolve()
    folders = [out, *(Path(s).resolve() for s in sources)]
    by_source = {}
    for student in students:
        folder = newest_record(folders, student)[0]
        if folder is not None and Path(folder).resolve() != out:
            by_source.setdefault(Path(folder).resolve(), []).append(student)
    copied = []
    with file_lock(pages_lock(out)):
        for source, mine in sorted(by_source.items()):
            told = (lambda f=source: waiting(f)) if waiting is not None else None
            with file_lock(pages_lock(source), waiting=told):
                for student in mine:
                    for setting in COPIED:
                        _replace(source / CLASS_FOLDERS[setting] / student / ASSIGNMENT,
                                 out / CLASS_FOLDERS[setting] / student / ASSIGNMENT)
                    copied.append(student)
    write_formgrader_config(out, db_url, root)
    return sorted(copied)


def _replace(src: Path, dest: Path):
    """`dest` becomes a copy of the folder `src` (or goes, when `src` is not there): whole, or as it was."""
    part, old = dest.with_name(dest.name + ".part"), dest.with_name(dest.name + ".old")
    for leftover in (part, old):
        shutil.rmtree(leftover, ignore_errors=True)
    if src.is_dir():
        shutil.copytree(src, part, symlinks=True)  # makes the folders above it
    if dest.exists():
        dest.rename(old)
    if part.exists():
        part.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
