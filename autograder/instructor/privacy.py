"""Who can read what the instructor keeps: the solutions, the hidden checks, the submissions and the grades.

By default a checkout is 755/644: every account on the machine can read the solutions notebook, the hidden
checks, each collected submission with its submission_secret.txt, every feedback page and grades.csv. So the
commands that write (release, collect, grade, export) write private files (umask 077, or 027 with the
instructors' group of course.toml, whose folders they give that group and the setgid bit), and `grade` refuses
to start while any of those paths can be read by another account, naming it and the command that fixes it.

"Another account" is any but the owner, root and the members of the instructors' group. A group's bits count
only for the instructors' group or the owner's own group (a user private group of the same name).
"""
import grp
import os
import pwd
import shlex
import stat
from pathlib import Path

from ..items import PACKAGE_DIR, SOLUTIONS_DIR


def set_umask(group: str) -> int:
    """What this process creates from now on is the instructor's (and the instructors' group's); returns the
    old umask."""
    return os.umask(0o027 if group else 0o077)


def make_private(folder: Path, group: str = ""):
    """Create `folder` (and its parents) if needed; make it 700, or 2750 for `group` (new files inherit it)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    if group:
        os.chown(folder, -1, grp.getgrnam(group).gr_gid)
        folder.chmod(0o2750)
    else:
        folder.chmod(0o700)


# the folders of a course's checkout that hold the reference's code in some form: the instructor notebooks; the
# test corpus and the benchmarks, whose submissions are written from it; git's objects, which hold every file
# ever committed (tests/test_privacy_paths.py holds that no other tracked file quotes a solution line)
INSTRUCTOR_FOLDERS = (SOLUTIONS_DIR, "tests", "benchmarks", ".git")


def instructor_paths(root: Path) -> list:
    """What must stay the instructor's in a course: the folders of INSTRUCTOR_FOLDERS, the hidden checks and the
    quiz's key (this package's instructor part), and the course's own gradebook, which holds the hidden tests."""
    return [*(Path(root) / name for name in INSTRUCTOR_FOLDERS), PACKAGE_DIR / "instructor", Path(root) / "gradebook.db"]


def _shared_group(info: os.stat_result, group: str) -> bool:
    """Whether the group bits of a path with this stat let accounts other than its owner and `group` in."""
    try:
        name = grp.getgrgid(info.st_gid).gr_name
    except KeyError:
        return True
    if group and name == group:
        return False
    try:
        return name != pwd.getpwuid(info.st_uid).pw_name
    except KeyError:
        return True


def _open_to_others(info: os.stat_result, group: str, bits: int) -> bool:
    """Whether accounts other than the owner (and the instructors) have `bits` (as for "other": 4 read, 1 enter)."""
    if info.st_mode & bits:
        return True
    return _shared_group(info, group) and bool(info.st_mode & (bits << 3))


def reachable(path: Path, group: str) -> bool:
    """Whether another account can enter every folder above `path`."""
    for folder in reversed(Path(path).absolute().parents):
        try:
            info = os.stat(folder)
        except OSError:
            return False
        if not _open_to_others(info, group, 1):
            return False
    return True


def exposed(paths, group: str = "", limit: int = 20) -> list:
    """(the path given, one file or folder in it another account can read) for each of `paths` that has one, at
    most `limit` files looked at past the first exposed one."""
    found = []
    for top in map(Path, paths):
        if not os.path.lexists(top) or not reachable(top, group):
            continue
        hit = _first_readable(top, group)
        if hit is not None:
            found.append((top, hit))
    return found[:limit]


def _first_readable(top: Path, group: str):
    """The first path under `top` (itself included) that another account can read, links not followed."""
    info = os.lstat(top)
    if stat.S_ISLNK(info.st_mode):
        return None
    if not stat.S_ISDIR(info.st_mode):
        return top if _open_to_others(info, group, 4) else None
    if not _open_to_others(info, group, 1):
        return None  # nobody else can enter it: nothing inside can be read
    if _open_to_others(info, group, 4):
        return top  # its listing names every submission
    for root, dirs, names in os.walk(top, followlinks=False):
        kept = []
        for name in sorted(dirs) + sorted(names):
            path = Path(root) / name
            try:
                entry = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISLNK(entry.st_mode):
                continue
            if stat.S_ISDIR(entry.st_mode):
                if _open_to_others(entry, group, 4):
                    return path
                if _open_to_others(entry, group, 1):
                    kept.append(name)
            elif _open_to_others(entry, group, 4):
                return path
        dirs[:] = [d for d in dirs if d in kept]
    return None


def fix_command(path: Path, group: str) -> str:
    quoted = shlex.quote(str(path))
    if group:
        return f"chgrp -R {shlex.quote(group)} {quoted} && chmod -R g+rX,g-w,o-rwx {quoted}"
    return f"chmod -R go-rwx {quoted}"


def refusal(found: list, group: str) -> str:
    """Why `grade` will not start: each exposed path, what in it another account can read, and the fix."""
    lines = ["grade refuses to start: other accounts on this machine can read what must stay the instructor's"
             + (f" (and the {group} group's)" if group else "") + ":"]
    for top, hit in found:
        mode = stat.S_IMODE(os.lstat(hit).st_mode)
        lines += [f"* {top}: {hit} is readable by them (mode {mode:o}).", f"  Fix: {fix_command(top, group)}"]
    lines.append("The solutions, the hidden checks, the submissions (with the secrets that name their feedback) and "
                 "the grades are then private; `collect`, `grade` and `export` keep what they write so.")
    return "\n".join(lines)
