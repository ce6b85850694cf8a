"""autograder.instructor.files: atomic writes that leave an unchanged file alone, and a file lock (exclusive or shared)."""
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


def test_shared_holders_hold_together_and_an_exclusive_one_waits_for_them_and_says_so(tmp_path):
    """Two `grade` runs in one folder share the pages lock; `export` waits for both, and is told once."""
    import threading
    path, told, order = tmp_path / "pages.lock", [], []
    with file_lock(path, shared=True), file_lock(path, shared=True, waiting=lambda: told.append("shared")):
        def exclusive():
            with file_lock(path, waiting=lambda: told.append("exclusive")):
                order.append("exclusive held")
        waiter = threading.Thread(target=exclusive)
        waiter.start()
        waiter.join(0.5)
        assert waiter.is_alive() and told == ["exclusive"], "the exclusive holder did not wait for the shared ones"
        order.append("shared released")
    waiter.join(30)
    assert order == ["shared released", "exclusive held"] and told == ["exclusive"]
    with file_lock(path, waiting=lambda: told.append("free")):
        pass
    assert told == ["exclusive"], "waiting() was called for a lock nobody held"
