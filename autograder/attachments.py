"""Files a student hands in beside the notebook: helper modules, small data files.

nbgrader runs a notebook in its submission folder, where `import helpers` finds helpers.py; the
grader does the same by copying these files, read-only, into the sandbox's working folder. Other
notebooks, checkpoints, hidden and cache folders are not the submission's code, and links are
never followed (a link could point anywhere on the grading machine).
"""
import os
import re
import stat
from pathlib import Path

MAX_FILES = 32
MAX_FILE_BYTES = 2**20
MAX_TOTAL_BYTES = 4 * 2**20
MAX_DEPTH = 3  # folders below the notebook's
SAFE_PART = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]{0,99}$")
IGNORED_SUFFIXES = (".ipynb", ".pyc")
IGNORED_FOLDERS = ("__pycache__",)


def beside(folder, ignore=()) -> tuple:
    """({relative path: bytes}, [notes on what was left out]) for the regular files under `folder`.

    ignore: file names at the top level that are not the student's (nbgrader's exchange files)."""
    folder = Path(folder)
    files, notes, total = {}, [], 0
    if not folder.is_dir():
        return files, notes
    for path in _walk(folder):
        rel = path.relative_to(folder).as_posix()
        if rel in ignore or path.name.endswith(IGNORED_SUFFIXES):
            continue
        if not all(SAFE_PART.match(part) for part in rel.split("/")):
            notes.append(f"{rel!r} was left out: only letters, digits and _.+- in file names")
            continue
        try:
            data = _read(path)
        except OSError as exc:
            notes.append(f"{rel} could not be read ({exc.strerror or exc})")
            continue
        if data is None:
            continue  # not a regular file (a link, a pipe, a device)
        if len(data) > MAX_FILE_BYTES:
            notes.append(f"{rel} was left out: larger than {MAX_FILE_BYTES >> 20} MiB")
            continue
        if len(files) == MAX_FILES or total + len(data) > MAX_TOTAL_BYTES:
            notes.append(f"{rel} and any later files were left out: at most {MAX_FILES} files and "
                         f"{MAX_TOTAL_BYTES >> 20} MiB beside the notebook")
            break
        files[rel] = data
        total += len(data)
    return files, notes


def _walk(folder: Path):
    """Regular-looking entries under folder, sorted, depth-limited; hidden and cache folders skipped."""
    for root, dirs, names in os.walk(folder, followlinks=False):
        depth = len(Path(root).relative_to(folder).parts)
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED_FOLDERS
                         and depth < MAX_DEPTH)
        for name in sorted(names):
            if not name.startswith(".") and not (Path(root) / name).is_symlink():
                yield Path(root) / name


def _read(path: Path):
    """The file's bytes, or None if it is not a regular file; links are not followed."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)
