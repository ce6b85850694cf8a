"""autograder.instructor.merge: export --from copies each student's folders from the shard with their newest record,
replaces what an older export left, and writes the class's nbgrader_config.py for the shared gradebook."""
import os

from autograder.instructor.course import CLASS_FOLDERS
from autograder.instructor.merge import COPIED, merge_class
from autograder.instructor.state import StudentRecord, save_state, state_path
from autograder.items import ASSIGNMENT


def graded_in(folder, student, page: str, age: int = 0):
    """A student graded in `folder`: their record (`age` seconds old) and their three folders."""
    save_state(folder, StudentRecord(student, "f"))
    when = 1_700_000_000 - age
    os.utime(state_path(folder, student), (when, when))
    for setting in COPIED:
        place = folder / CLASS_FOLDERS[setting] / student / ASSIGNMENT
        place.mkdir(parents=True, exist_ok=True)
        (place / "file.txt").write_text(f"{setting} {page}")


def test_each_student_comes_from_the_shard_with_their_newest_record(tmp_path):
    out, one, two = tmp_path / "all", tmp_path / "shard-1", tmp_path / "shard-2"
    out.mkdir()
    graded_in(one, "ada", "ada's from shard 1")
    graded_in(two, "bo", "bo's from shard 2")
    graded_in(one, "cy", "cy's older, shard 1", age=100)
    graded_in(two, "cy", "cy's newer, shard 2")  # moved shards between runs: the newest record wins
    graded_in(out, "di", "di's, graded in OUT itself")
    stale = out / "feedback" / "ada" / ASSIGNMENT
    stale.mkdir(parents=True)
    (stale / "old.html").write_text("an older export's page")

    copied = merge_class(out, [one, two], ["ada", "bo", "cy", "di"], "postgresql://grader@db/lesson20", root=tmp_path)
    assert copied == ["ada", "bo", "cy"]
    for student, page in (("ada", "ada's from shard 1"), ("bo", "bo's from shard 2"), ("cy", "cy's newer, shard 2"),
                          ("di", "di's, graded in OUT itself")):
        for setting in COPIED:
            place = out / CLASS_FOLDERS[setting] / student / ASSIGNMENT
            assert (place / "file.txt").read_text() == f"{setting} {page}", (student, setting)
    assert not (stale / "old.html").exists()  # replaced whole, not merged into
    assert not list(out.rglob("*.part")) and not list(out.rglob("*.old"))
    config = (out / "nbgrader_config.py").read_text()
    assert "'postgresql://grader@db/lesson20'" in config and "c.CourseDirectory.root = here" in config
