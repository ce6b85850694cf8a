"""The exchange round trip as a course runs it: an instructor and three students, each a Unix user, each
command run by the user who would run it, through nbgrader's exchange folder.

release -> fetch -> edit -> submit -> collect -> grade -> a manual grade -> export -> release_feedback ->
fetch_feedback; then each student holds their own feedback and nothing of another's.
"""
import json
import os
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
import pytest

from autograder.items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from tests.helpers import ROOT, STUDENT_NB, read
from tests.submissions import make_submission

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root: the test creates Unix users"),
    pytest.mark.skipif(not all(shutil.which(t) for t in ("useradd", "userdel", "runuser", "unshare")),
                       reason="needs useradd, userdel, runuser and unshare (util-linux, passwd)"),
]
VENV_BIN = Path(sys.executable).parent
COURSE_FILES = ("autograder", "solutions", "lessons", "nbgrader_config.py")
BUGGY = "underflow_threshold"  # a mistake in underflow_fraction only
MANUAL_ID, MANUAL_SCORE = "practice_q1", 1.5
FULL = {i.id: float(i.points) for i in AUTO_ITEMS}


def hidden_ancestor(path: Path):
    """(the first folder above `path` that other users cannot enter, the child of it on the way), or None."""
    for folder in reversed(path.parents):
        if folder != Path("/") and not folder.stat().st_mode & stat.S_IXOTH:
            return folder, path.relative_to(folder).parts[0]
    return None


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

    def add(self, role: str, exchange: Path) -> str:
        name = f"l20{role[:3]}{secrets.token_hex(3)}"
        home = self.base / "home" / name
        subprocess.run(["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/sh",
                        "-K", "HOME_MODE=0700", name], check=True, capture_output=True)
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

    def run(self, name, *cmd, cwd=None, input=None, check=True, timeout=600) -> subprocess.CompletedProcess:
        env = [f"{k}={v}" for k, v in self.env[name].items()]
        inner = ["runuser", "-u", name, "--", "env", "-i", *env, *map(str, cmd)]
        done = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                               self.setup + 'cd "$0" && exec "$@"', str(cwd or self.home(name)), *inner],
                              input=input, capture_output=True, text=True, timeout=timeout)
        if check:
            assert done.returncode == 0, f"{name}: {' '.join(map(str, cmd))}\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
        return done

    def nbgrader(self, name, *args, cwd=None):
        return self.run(name, VENV_BIN / "python", "-m", "nbgrader", *args, cwd=cwd)

    def cannot_read(self, name, path: Path) -> str:
        """Assert that `name` is refused reading `path` (a file or a folder's listing)."""
        done = self.run(name, "ls" if path.is_dir() else "cat", path, check=False)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (name, str(path), done.stdout[:500])
        return done.stderr

    def remove(self):
        for name in self.names:
            subprocess.run(["userdel", "--force", "--remove", name], capture_output=True)


def edited(fetched: Path, variant: str) -> str:
    """The student's own notebook with the code cells of `variant`'s submission typed into it."""
    nb, wanted = read(fetched), make_submission(variant)
    answers = {c.metadata["nbgrader"]["grade_id"]: c.source for c in wanted.cells
               if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")}
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in answers:
            cell.source = answers[grade_id]
    return nbformat.writes(nb)


def code_of(path: Path) -> list:
    return [c.source for c in read(path).cells if c.cell_type == "code"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_exchange_round_trip():
    base = Path(tempfile.mkdtemp(prefix="l20-exchange-"))
    base.chmod(0o755)
    (base / "home").mkdir(mode=0o755)
    exchange = base / "exchange"
    exchange.mkdir()
    exchange.chmod(0o1777)  # nbgrader's exchange: everyone may write, nobody may remove what others made
    users = Users(base)
    try:
        teacher = users.add("instructor", exchange)
        right, wrong, idle = (users.add("student", exchange) for _ in range(3))
        students = {right: "reference", wrong: BUGGY, idle: None}
        for name in users.names:
            assert mode(users.home(name)) == 0o700, f"{name}'s home is not private"

        # the course, as the instructor's own checkout
        course = users.home(teacher) / "course"
        course.mkdir()
        for name in COURSE_FILES:
            source = ROOT / name
            if source.is_dir():
                shutil.copytree(source, course / name, ignore=shutil.ignore_patterns("__pycache__"))
            else:
                shutil.copy(source, course / name)
        subprocess.run(["chown", "-R", f"{teacher}:{teacher}", str(course)], check=True)
        users.env[teacher]["PYTHONPATH"] = str(course)  # this checkout's autograder, in every folder

        # 1. the instructor generates the student notebook and releases it
        users.run(teacher, VENV_BIN / "python", "-m", "autograder", "release", cwd=course)
        users.nbgrader(teacher, "release_assignment", ASSIGNMENT, cwd=course)
        course_x = exchange / ASSIGNMENT
        released = course_x / "outbound" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        assert released.read_bytes() == STUDENT_NB.read_bytes()
        assert mode(course_x / "inbound") == 0o2733  # students may drop a submission in, not list others'
        assert course_x.stat().st_uid == (course_x / "inbound").stat().st_uid == _uid(teacher)

        # 2. each student fetches it, works on it (or not), and submits
        for student, variant in students.items():
            users.nbgrader(student, "fetch_assignment", ASSIGNMENT)
            fetched = users.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            assert fetched.read_bytes() == STUDENT_NB.read_bytes() and fetched.stat().st_uid == _uid(student)
            if variant:
                users.run(student, "sh", "-c", 'cat > "$0"', fetched, input=edited(fetched, variant))
            users.nbgrader(student, "submit", ASSIGNMENT)
        inbound = sorted(p.name.split("+")[0] for p in (course_x / "inbound").iterdir())
        assert inbound == sorted(students)

        # 3. the instructor collects and grades
        users.nbgrader(teacher, "collect", ASSIGNMENT, "--update", cwd=course)
        for student in students:
            collected = course / "submitted" / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
            assert code_of(collected) == code_of(users.home(student) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb")
        users.run(teacher, VENV_BIN / "python", "-m", "autograder", "grade", "submitted", "--out", "grading",
                  "--jobs", "2", "--quiet", cwd=course)
        out = course / "grading"
        rows = json.loads((out / "grades.json").read_text())["students"]
        assert sorted(rows) == sorted(students)
        assert {s: r["status"] for s, r in rows.items()} == dict.fromkeys(students, "graded")
        scores = {s: {i: e["score"] for i, e in r["items"].items()} for s, r in rows.items()}
        assert scores[right] == FULL
        assert scores[wrong]["underflow_fraction"] < FULL["underflow_fraction"]
        assert {i: v for i, v in scores[wrong].items() if i != "underflow_fraction"} == \
            {i: v for i, v in FULL.items() if i != "underflow_fraction"}
        assert scores[idle] == dict.fromkeys(FULL, 0.0)

        # 4. a written answer graded by hand, as formgrader saves it, then the export
        users.run(teacher, VENV_BIN / "python", "-c", (
            "import sys\nfrom nbgrader.api import Gradebook\n"
            "with Gradebook('sqlite:///grading/gradebook.db', course_id=sys.argv[1]) as gb:\n"
            "    grade = gb.find_grade(sys.argv[2], sys.argv[1], sys.argv[1], sys.argv[3])\n"
            "    grade.manual_score = float(sys.argv[4])\n    gb.db.commit()\n"),
            ASSIGNMENT, MANUAL_ID, right, MANUAL_SCORE, cwd=course)
        users.run(teacher, VENV_BIN / "python", "-m", "autograder", "export", "--out", "grading", cwd=course)
        rows = json.loads((out / "grades.json").read_text())["students"]
        assert rows[right]["items"][MANUAL_ID]["score"] == MANUAL_SCORE
        assert rows[right]["total"] == sum(FULL.values()) + MANUAL_SCORE
        assert MANUAL_ID not in rows[wrong]["items"]

        # 5. feedback goes back through the exchange, and each student fetches theirs
        users.nbgrader(teacher, "release_feedback", ASSIGNMENT, cwd=out)
        assert len(list((course_x / "feedback").glob("*.html"))) == len(students)
        assert mode(course_x / "feedback") == 0o711  # reachable by a page's name, not listable
        pages = {}
        for student in students:
            users.nbgrader(student, "fetch_feedback", ASSIGNMENT)
            found = list((users.home(student) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html"))
            assert len(found) == 1, (student, found)
            pages[student] = found[0]
            assert found[0].read_bytes() == (out / "feedback" / student / ASSIGNMENT / f"{ASSIGNMENT}.html").read_bytes()
            text = re.sub(r"<[^>]+>", "", found[0].read_text())
            for grade_id, entry in rows[student]["items"].items():
                if grade_id in FULL:  # the autograded items' reports, with grades.json's scores
                    assert re.search(rf"{grade_id}: \d+ of \d+ behaviours pass, {entry['score']:g} of "
                                     rf"{entry['max_score']:g} points", text), (student, grade_id)
        assert len({p.read_bytes() for p in pages.values()}) == len(students)
        # the written answer's score, given by hand after `grade` wrote the pages, is on the page handed back
        text = re.sub(r"<[^>]+>", "", pages[right].read_text())
        assert f"{ASSIGNMENT}: {round(rows[right]['total'], 2):g} of " in text
        item = next(i for i in ITEMS if i.id == MANUAL_ID)
        assert re.search(rf"{re.escape(item.title)}\s*{MANUAL_SCORE:g} / {item.points:g}", text)  # its summary row

        # 6. no student reads another's work or feedback, in their home or in the exchange
        submissions = {s: users.home(s) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb" for s in students}
        for student in students:
            for other in students:
                if other != student:
                    users.cannot_read(student, submissions[other])
                    users.cannot_read(student, pages[other])
            users.cannot_read(student, course_x / "inbound")
            users.cannot_read(student, course_x / "feedback")
            users.cannot_read(student, course / "submitted")
    finally:
        users.remove()
        shutil.rmtree(base, ignore_errors=True)


def _uid(name: str) -> int:
    import pwd
    return pwd.getpwnam(name).pw_uid
