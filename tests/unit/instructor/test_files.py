"""autograder.instructor.files: atomic writes that leave an unchanged file alone, and an exclusive file lock."""
import multiprocessing
import os

from autograder.instructor.files import file_lock, write_atomic


def test_write_atomic_replaces_the_file_and_leaves_no_part_behind(tmp_path):
    path = tmp_path / "deep" / "grades.json"
    write_atomic(path, "one")
    write_atomic(path, "two")
    assert path.read_text() == "two" and os.listdir(path.parent) == ["grades.json"]


def test_an_unchanged_file_keeps_its_modification_time(tmp_path):
    path = tmp_path / "config.py"
    write_atomic(path, "same")
    os.utime(path, (1, 1))
    write_atomic(path, "same")
    assert path.stat().st_mtime == 1
    write_atomic(path, "same", force=True)
    assert path.stat().st_mtime != 1


def _try_lock(path, queue):
    import fcntl
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            queue.put("got it")
        except BlockingIOError:
            queue.put("blocked")


def test_the_lock_is_exclusive_while_held(tmp_path):
    path, context = tmp_path / "lock", multiprocessing.get_context("fork")
    results = context.Queue()
    with file_lock(path):
        other = context.Process(target=_try_lock, args=(path, results))
        other.start()
        other.join(30)
        assert results.get(timeout=30) == "blocked"
    other = context.Process(target=_try_lock, args=(path, results))
    other.start()
    other.join(30)
    assert results.get(timeout=30) == "got it"
