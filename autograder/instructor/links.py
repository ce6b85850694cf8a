"""Links in a submission: a symbolic link, a hard link or a mount point anywhere from a student's folder down.

Any of them can make the grader read a file that is not the student's (a `lesson20` folder linked to
solutions/lesson20 had the instructor's notebook graded and its solution lines shown in the feedback),
so a submission holding one is refused, with the linked path named, before anything of it is read.
Every function here looks at a path itself (lstat), never at what it points to.
"""
import os
import stat
from pathlib import Path

from ..attachments import IGNORED_FOLDERS, MAX_DEPTH

Kind = str  # "symbolic link", "hard link", "mount point", or "" for none


def link_kind(path: Path, parent_dev: int, mounted: set) -> Kind:
    """What kind of link `path` is, if any. parent_dev: the device of the folder holding it; mounted: the
    mount points (mount_points()), since a bind mount from the same file system keeps the device."""
    try:
        info = os.lstat(path)
    except OSError:  # gone since its folder was listed
        return ""
    if stat.S_ISLNK(info.st_mode):
        return "symbolic link"
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:
        return "hard link"
    return "mount point" if info.st_dev != parent_dev or str(Path(path).absolute()) in mounted else ""


def mount_points() -> set:
    """The mount points this process sees (/proc/self/mountinfo; a bind mount keeps its folder's device)."""
    try:
        with open("/proc/self/mountinfo") as f:
            lines = f.read().splitlines()
    except OSError:  # not Linux: the device comparison is what is left
        return set()
    return {_unescape(line.split()[4]) for line in lines if len(line.split()) > 4}


def _unescape(field: str) -> str:
    """mountinfo writes a space, a tab, a newline and a backslash in a path as \\040, \\011, \\012, \\134."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def first_link(submitted: Path, student: str, assignment: str) -> tuple:
    """(path relative to `submitted`, kind) of the first link from the student's folder down to everything
    staging would copy (the notebooks, the files beside them, nbgrader's exchange files); ("", "") if none."""
    submitted = Path(os.path.realpath(submitted))  # as mountinfo names it
    top, mounted = submitted / student, mount_points()
    parent_dev = os.lstat(submitted).st_dev
    for path in [top, top / assignment]:
        if not os.path.lexists(path):
            return "", ""
        kind = link_kind(path, parent_dev, mounted)
        if kind:
            return path.relative_to(submitted).as_posix(), kind
        parent_dev = os.lstat(path).st_dev
    folder = top / assignment
    for root, dirs, names in os.walk(folder, followlinks=False):
        here = Path(root)
        depth = len(here.relative_to(folder).parts)
        dev = os.lstat(here).st_dev
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in IGNORED_FOLDERS and depth < MAX_DEPTH)
        for name in sorted(dirs) + sorted(n for n in names if not n.startswith(".")):
            path = here / name
            kind = link_kind(path, dev, mounted)
            if kind:
                return path.relative_to(submitted).as_posix(), kind
    return "", ""
