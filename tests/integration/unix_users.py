"""Real Unix users for the course's tests: an instructor and students made with useradd, each command run as the
user who would run it (runuser, in a mount namespace where the interpreter under /root is reachable), and the
course as an instructor's own checkout in their home (tests/integration/test_exchange.py, test_course_attacks.py).
"""
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograder.items import ASSIGNMENT
from tests.helpers import ROOT, read
from tests.submissions import make_submission

VENV_BIN = Path(sys.executable).parent
PYTHON = VENV_BIN / "python"
COURSE_FILES = ("autograder", "solutions", "lessons", "tests", "benchmarks", "nbgrader_config.py", "course.toml")
NEEDS_USERS = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the test creates Unix users"),
    pytest.mark.skipif(not all(shutil.which(t) for t in ("useradd", "userdel", "runuser", "unshare")),
                       reason="needs useradd, userdel, runuser and unshare (util-linux, passwd)"),
]


def hidden_ancestor(path: Path):
    """(the first folder above `path` that other users cannot enter, the child of it on the way), or None."""
    for folder in reversed(path.parents):
        if folder != Path("/") and not folder.stat().st_mode & stat.S_IXOTH:
            return folder, path.relative_to(folder).parts[0]
    return None


def uid(name: str) -> int:
    return pwd.getpwnam(name).pw_uid


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class Users:
    """Unix users made for one test, in homes under `base`, and commands run as them."""

    def __init__(self, base: Path):
        self.base, self.names, self.env = base, [], {}
        # The course machines' Python lives under /root (mode 700): other users reach it only in a mount
        # namespace of their commands where /root is an empty tmpfs holding the one folder on the way to it.
        self.setup = ""
        blocked = hidden_ancestor(Path(os.path.realpath(sys.executable)))
        if blocked:
            folder, child = blocked
            stash = base / "stash"
            stash.mkdir()
            self.setup = (f"mount --bind {folder / child} {stash} && mount -t tmpfs -o mode=755 tmpfs {folder} && "
                          f"mkdir {folder / child} && mount --bind {stash} {folder / child} && ")

    def add(self, role: str, exchange: Path, home_mode: str = "0700") -> str:
        name = f"l20{role[:3]}{secrets.token_hex(3)}"
        home = self.base / "home" / name
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                        "-K", f"HOME_MODE={home_mode}", name], check=True, capture_output=True)
        self.names.append(name)
        # each user's own nbgrader configuration: where the exchange is, and the course
        config = home / ".jupyter" / "nbgrader_config.py"
        config.parent.mkdir()
        config.write_text(f"c = get_config()  # noqa: F821\nc.Exchange.root = {str(exchange)!r}\n"
                          f"c.CourseDirectory.course_id = {ASSIGNMENT!r}\n")
        shutil.chown(config.parent, name, name)
        shutil.chown(config, name, name)
        self.env[name] = {"HOME": str(home), "USER": name, "LOGNAME": name, "LANG": "C.UTF-8",
                          "PATH": f"{VENV_BIN}:/usr/local/bin:/usr/bin:/bin"}
        return name

    def home(self, name) -> Path:
        return Path(self.env[name]["HOME"])

    def run(self, name, *cmd, cwd=None, input=None, check=True, timeout=900, env=None) -> subprocess.CompletedProcess:
        values = {**self.env[name], **(env or {})}
        inner = ["runuser", "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in values.items()), *map(str, cmd)]
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               self.setup + 'cd "$0" && exec "$@"', str(cwd or self.home(name)), *inner],
                              input=input, capture_output=True, text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, f"{name}: {' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        return done

    def nbgrader(self, name, *args, cwd=None, check=True):
        return self.run(name, PYTHON, "-m", "nbgrader", *args, cwd=cwd, check=check)

    def autograder(self, name, *args, cwd=None, check=True):
        return self.run(name, PYTHON, "-m", "autograder", *args, cwd=cwd, check=check)

    def can_read(self, name, path: Path) -> bool:
        """Whether `name` can read `path` (a file's bytes, or a folder's listing)."""
        done = self.run(name, "ls" if path.is_dir() else "cat", path, check=False)
        return done.returncode == 0

    def cannot_read(self, name, path: Path) -> str:
        """Assert that `name` is refused reading `path` (a file or a folder's listing)."""
        done = self.run(name, "ls" if path.is_dir() else "cat", path, check=False)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (name, str(path), done.stdout[:500])
        return done.stderr

    def remove(self):
        for name in self.names:
            subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)


def checkout(users: Users, teacher: str, folder: Path, fresh_modes: bool = True) -> Path:
    """A copy of the course in `folder`, owned by `teacher`, with a fresh clone's modes (755 folders, 644 files)
    unless `fresh_modes` is False; the package imported as `teacher` is this copy's (PYTHONPATH)."""
    folder.mkdir(parents=True)
    for name in COURSE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, folder / name)
    # git's objects, as a clone holds them: every committed file, the solutions included
    git = ["git", "-c", "user.name=instructor", "-c", "user.email=instructor@example.org", "-C", str(folder)]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "the course"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    if fresh_modes:  # as `git clone` leaves them with umask 022
        for path in [folder, *folder.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
    subprocess.run(["chown", "-R", f"{teacher}:{teacher}", str(folder)], check=True)
    return folder


def edited(fetched: Path, variant: str, answers: dict = None) -> str:
    """The student's own notebook with the code cells of `variant`'s submission typed into it, and written
    answers (grade id -> text) if given."""
    nb, wanted = read(fetched), make_submission(variant)
    code = {c.metadata["nbgrader"]["grade_id"]: c.source for c in wanted.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in code:
            cell.source = code[grade_id]
        elif answers and grade_id in answers:
            cell.source = answers[grade_id]
    return nbformat.writes(nb)


def set_course(course: Path, teacher: str, **settings):
    """Write `settings` (course.toml's [submission] keys, and extensions={student: time}) into the course."""
    text = (course / "course.toml").read_text()
    extensions = settings.pop("extensions", {})
    for key, value in settings.items():
        lines = [line for line in text.splitlines() if line.startswith(f"{key} =")]
        text = text.replace(lines[0].split("#")[0].rstrip(), f"{key} = {value!r}".replace("'", '"'))
    text = text.replace("[submission.extensions]", "[submission.extensions]\n" + "".join(
        f'{student} = "{when}"\n' for student, when in extensions.items()), 1)
    (course / "course.toml").write_text(text)
    shutil.chown(course / "course.toml", teacher, teacher)
