"""Writing the files a class's graders share: atomically, and under a lock when several processes do."""
import contextlib
import os
from pathlib import Path


def write_atomic(path: Path, text: str, force: bool = False):
    """Replace a file atomically (readers never see half of it); leave it alone if unchanged."""
    path = Path(path)
    if not force and path.exists() and path.read_text() == text:
        return  # unchanged: leave the file (and its modification time) alone
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")  # per process: shards may share `out`
    tmp.write_text(text)
    os.replace(tmp, path)


@contextlib.contextmanager
def file_lock(path: Path, shared: bool = False, waiting=None):
    """A lock on a file, held by this process until the block ends (POSIX; no-op elsewhere): exclusive, or
    `shared` with other shared holders. `waiting()` is called once, if given, when another holder makes this
    one wait."""
    try:
        import fcntl
    except ImportError:  # Windows: one grading process per output folder
        yield
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            if waiting is not None:
                waiting()
            fcntl.flock(handle, mode)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
