"""The student package: built from the repo, it has what a student needs and none of the answers.

The wheel (and the sdist `python -m build` makes with it) is built from a copy of the working
tree, scanned for anything from the instructor's side (derived from solutions/, never typed in
here), then installed on its own, without the repository, to prove a student can use it.
"""
import ast
import hashlib
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from autograder.items import AUTO_ITEMS, EXERCISES_DIR, HIDDEN_DIR, check_file
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB, code_lines, model_answer_sentences, read, solution_only_lines

pytestmark = pytest.mark.slow

STUDENT_MODULES = [  # what the notebooks and `python -m autograder check` run on a student's machine
    "autograder/__init__.py", "autograder/__main__.py", "autograder/items.py", "autograder/lesson.py",
    "autograder/plots.py", "autograder/quiz.py", "autograder/quizzes.py", "autograder/grading.py",
    "autograder/cells.py", "autograder/structure.py", "autograder/runner.py", "autograder/report.py", "autograder/backends.py",
    "autograder/selfcheck.py", "autograder/rubric.py", "autograder/text.py", "autograder/stand_in_plan.py",
    *(f"autograder/sandbox/{name}.py" for name in ("__init__", "errors", "isolation", "protocol", "channel",
                                                  "zygote", "memory", "forks", "loading", "session", "worker",
                                                  # loaded by path inside the sandbox (worker.PARTS), not imported
                                                  "process", "notebook", "cleanup", "standins", "child", "guard")),
    "autograder/checks/__init__.py", *(f"autograder/checks/{name}.py" for name in (
        "read", "compare", "inputs", "messages", "released")),
    "autograder/checks/harness.py", "autograder/checks/plain_data.py", "autograder/checks/models.py",
    "autograder/checks/probes.py", "autograder/checks/pytest.ini", "autograder/checks/expected.pt",
    "autograder/checks/smoke.py", "autograder/exercises/__init__.py", "autograder/exercises/order.py",
    # each exercise's student side, whole: its declaration, probes, visible checks, smoke case and diagnosis
    *sorted(p.relative_to(ROOT).as_posix() for p in EXERCISES_DIR.glob("*/*.py")),
]


def _files(archive: Path) -> dict:
    """Path inside the package -> bytes, for a wheel or an sdist (whose top folder is dropped)."""
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            return {n: z.read(n) for n in z.namelist() if not n.endswith("/")}
    with tarfile.open(archive) as t:
        return {m.name.split("/", 1)[1]: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def secret_lines() -> set:
    """Solution-only lines long enough to identify an answer; block headers (`with torch.no_grad():`)
    are left out, being common code the visible checks use in their own right."""
    return {ln for ln in solution_only_lines() if len(ln) >= 20 and not ln.endswith(":")}


def notebook_imports() -> set:
    """autograder modules the student notebook imports, as paths inside the package."""
    paths = set()
    for cell in read(STUDENT_NB).cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse("\n".join(ln for ln in cell.source.split("\n") if not ln.lstrip().startswith(("%", "!"))))
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograder"):
                base = node.module.replace(".", "/")
                for alias in node.names:
                    candidate = f"{base}/{alias.name}.py"
                    paths.add(candidate if (ROOT / candidate).exists() else
                              f"{base}/__init__.py" if (ROOT / base).is_dir() else f"{base}.py")
            elif isinstance(node, ast.Import):
                paths |= {a.name.replace(".", "/") + "/__init__.py" for a in node.names if a.name.startswith("autograder")}
    return paths


def test_the_wheel_has_what_a_student_needs(dist):
    names = set(_files(dist["wheel"]))
    visible = {check_file(EXERCISES_DIR, item.id).relative_to(ROOT).as_posix() for item in AUTO_ITEMS}
    imported = notebook_imports()
    assert {"autograder/lesson.py", "autograder/quiz.py"} <= imported, imported
    missing = sorted((set(STUDENT_MODULES) | visible | imported) - names)
    assert not missing, f"the wheel lacks {missing}"


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_package_carries_no_instructor_material(dist, kind):
    files = _files(dist[kind])
    names = sorted(files)
    assert names, "empty archive"
    forbidden_paths = [n for n in names if re.search(r"(^|/)(instructor|hidden|solutions|lessons|tests)(/|$)", n)
                       or n.endswith(".ipynb")]
    assert not forbidden_paths, f"instructor material in the {kind}: {forbidden_paths}"

    instructor = {hashlib.sha256(p.read_bytes()).hexdigest(): p.relative_to(ROOT).as_posix()
                  for p in (ROOT / "autograder" / "instructor").rglob("*.py")}
    copies = [(n, instructor[hashlib.sha256(b).hexdigest()]) for n, b in files.items()
              if hashlib.sha256(b).hexdigest() in instructor and b.strip()]
    assert not copies, f"copies of instructor files in the {kind}: {copies}"

    secret, answers = secret_lines(), model_answer_sentences()
    assert len(secret) >= 30 and len(answers) >= 8, "could not read the answers out of the instructor notebook"
    visible_tests = set()
    for p in (check_file(EXERCISES_DIR, item.id) for item in AUTO_ITEMS):
        visible_tests |= set(re.findall(r"def (test_\w+)", p.read_text()))
    hidden_tests = set()
    for p in (check_file(HIDDEN_DIR, item.id) for item in AUTO_ITEMS):
        hidden_tests |= set(re.findall(r"def (test_\w+)", p.read_text())) - visible_tests
    assert hidden_tests
    for name, data in files.items():
        text = data.decode("utf-8", errors="replace")
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text, name
        leaked = secret & code_lines(text)
        assert not leaked, f"reference code in {name} of the {kind}: {sorted(leaked)[:3]}"
        leaked = [s for s in answers if s in text]
        assert not leaked, f"model answers in {name} of the {kind}: {leaked[:2]}"
        leaked = sorted(t for t in hidden_tests if re.search(rf"\b{t}\b", text))
        assert not leaked, f"hidden checks named in {name} of the {kind}: {leaked[:3]}"


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_package_holds_no_key_to_the_graded_quiz(dist, kind):
    """Practice 5 is graded: the package's quizzes.py poses it without a right flag or feedback, and no file
    holds the instructor's key or feedback for it."""
    from autograder.instructor.quiz_key import PRACTICE_5_FEEDBACK
    files = _files(dist[kind])
    namespace = {"__name__": "packaged_quizzes"}
    exec(compile(files["autograder/quizzes.py"].decode(), f"{kind}:autograder/quizzes.py", "exec"), namespace)
    graded = [q for q in namespace["QUIZZES"].values() if q.graded]
    assert graded, "the packaged quizzes have no graded question"
    assert not [c.text[:40] for q in graded for c in q.choices if c.right or c.feedback], "a graded choice has a key"
    phrases = {f[:50] for f in PRACTICE_5_FEEDBACK.values()} | {"PRACTICE_5_ANSWER", "PRACTICE_5_FEEDBACK"}
    for name, data in files.items():
        text = data.decode("utf-8", errors="replace")
        leaked = sorted(p for p in phrases if p in text)
        assert not leaked, f"Practice 5's key in {name} of the {kind}: {leaked[:2]}"


# What computes an exercise's answer, named in code (not in messages): torch's own amp kernels (any
# `_amp_*`), its GradScaler, backward passes and clipping. The oracles that use them live in each exercise's
# instructor folder (instructor/exercises/<id>/oracles.py); the student package may hold none of them, except where
# listed below.
ORACLE_APIS = {"GradScaler", "backward", "autograd.grad", "clip_grad_norm_", "clip_grad_value_"}
ORACLE_API_PREFIXES = ("_amp_",)
ALLOWED_APIS = {  # path in the wheel -> the APIs it may name, and why that computes no graded answer
    # backprop the student's own scaled loss, to read its grads; train the model the student's code left behind
    "autograder/exercises/static_loss_scaler/probes.py": {"backward"},
    "autograder/exercises/master_weights/probes.py": {"backward"},
    "autograder/lesson.py": {"backward"},           # the lesson's Figure 3 demo: activation gradients, no exercise
    "autograder/sandbox/worker.py": {"clip_grad_norm_"},  # warms torch's imports up before any student cell
}


def oracle_files() -> list:
    """Each exercise's oracles (instructor/exercises/<id>/oracles.py)."""
    return sorted(HIDDEN_DIR.glob("*/oracles.py"))


def oracle_lines() -> set:
    """The code lines of the instructor's oracles, docstrings left out."""
    found = set()
    for path in oracle_files():
        source = path.read_text()
        lines = source.split("\n")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.FunctionDef):
                body = node.body[1:] if ast.get_docstring(node) is not None else node.body
                for stmt in body:
                    found |= code_lines("\n".join(lines[stmt.lineno - 1:stmt.end_lineno]))
    return {ln for ln in found if len(ln) >= 20 and not ln.endswith(":")}


def oracle_names() -> set:
    """The oracles' function names (what instructor/oracles.py's ORACLES gathers from the exercises' folders)."""
    return {node.name for path in oracle_files() for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.FunctionDef)}


def _dotted(node) -> str:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def oracle_code_in(name: str, text: str) -> list:
    """What in one Python file of the package computes an exercise's answer: oracle APIs named in its code
    (attributes, names, imports, or a string that names one, as getattr would take it), a definition named
    like an oracle, or a line of an oracle's code."""
    found = set()
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [f"{name}: not Python"]
    names, oracles = set(), oracle_names()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            names |= {node.attr, dotted}
            names |= {".".join(dotted.split(".")[-2:])}
        elif isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            names |= {node.name, node.name.split(".")[-1], *(node.name.split("."))}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in oracles:
            found.add(f"defines {node.name}")
    allowed = ALLOWED_APIS.get(name, set())
    found |= {f"uses {n}" for n in names - allowed if n in ORACLE_APIS or n.startswith(ORACLE_API_PREFIXES)}
    found |= {f"has the oracle line {ln!r}" for ln in oracle_lines() & code_lines(text)}
    return sorted(f"{name}: {what}" for what in found)


def _parses(line: str) -> bool:
    try:
        ast.parse(line)
    except SyntaxError:
        return False
    return True


def test_the_oracle_scan_finds_the_oracles():
    """Run on the oracles themselves, the scan finds each of them: it cannot pass by finding nothing."""
    from autograder.instructor.oracles import ORACLES
    assert len(oracle_lines()) >= 10 and len(oracle_names()) >= 5 and set(ORACLES) <= oracle_names()
    found = [f.split(": ", 1)[1] for path in oracle_files()
             for f in oracle_code_in(path.relative_to(ROOT).as_posix(), path.read_text())]
    for what in ["uses _amp_update_scale_", "uses backward", *(f"defines {n}" for n in oracle_names())]:
        assert what in found, found
    assert len({f for f in found if "has the oracle line" in f}) == len(oracle_lines())
    # the forms code can take: attribute, import, getattr by name, the same line in another module
    for text, what in [("import torch\ntorch._amp_update_scale_(s, t, f, 2.0, 0.5, 3)", "uses _amp_update_scale_"),
                       ("from torch import _amp_foreach_non_finite_check_and_unscale_ as u", "uses _amp_foreach"),
                       ("scaler = getattr(torch.amp, 'GradScaler')('cpu')", "uses GradScaler"),
                       ("g = torch.autograd.grad(loss, params)", "uses autograd.grad"),
                       ("def f(loss):\n    loss.backward()", "uses backward"),
                       (next(ln for ln in sorted(oracle_lines()) if _parses(ln)), "has the oracle line")]:
        assert any(what in f for f in oracle_code_in("autograder/checks/example.py", text)), (text, what)


@pytest.mark.parametrize("kind", ["wheel", "sdist"])
def test_the_package_implements_no_exercise(dist, kind):
    """No oracle ships: the visible checks read expected values the release computed (checks/expected.pt)."""
    files = {n: b.decode("utf-8", errors="replace") for n, b in _files(dist[kind]).items() if n.endswith(".py")}
    assert "autograder/checks/released.py" in files and len(files) >= 20, sorted(files)
    found = [f for name, text in files.items() for f in oracle_code_in(name, text)]
    assert not found, f"code that computes an exercise's answer in the {kind}: {found}"


@pytest.fixture(scope="module")
def installed(dist):
    """The wheel installed into a folder of its own (no dependencies: they are this venv's)."""
    target = dist["base"] / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-compile",
                           "--target", str(target), str(dist["wheel"])], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    work = dist["base"] / "student"  # a student's folder: no repository in sight
    work.mkdir()
    shutil.copyfile(SOLUTION_NB, work / "finished.ipynb")
    return target, work


BOOT = """# Run Python as if only the wheel were installed: without this venv's editable install of the repo.
import runpy, sys
target, mode, rest = sys.argv[1], sys.argv[2], sys.argv[3:]
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in getattr(f, "__module__", "")]
sys.path_hooks[:] = [h for h in sys.path_hooks if "__editable__" not in getattr(h, "__module__", "")]
sys.path[:] = [target] + [p for p in sys.path[1:] if "__editable__" not in p]
sys.path_importer_cache.clear()
if mode == "-m":
    sys.argv = ["python -m " + rest[0], *rest[1:]]
    runpy.run_module(rest[0], run_name="__main__", alter_sys=True)
else:
    exec(compile(rest[0], "<student>", "exec"), {"__name__": "__main__"})
"""


def student_python(installed, *args, timeout=300):
    """This venv's Python and libraries, with the wheel installed in place of the repository.

    Not `python -S`: the sandbox binds the interpreter's venv, which -S would hide."""
    target, work = installed
    boot = work.parent / "boot" / "boot.py"
    boot.parent.mkdir(exist_ok=True)
    boot.write_text(BOOT)
    return subprocess.run([sys.executable, str(boot), str(target), *args], cwd=work, capture_output=True,
                          text=True, timeout=timeout)


def test_the_installed_wheel_gives_students_their_imports(installed):
    target, _ = installed
    done = student_python(installed, "-c", (
        "import importlib.util, autograder\n"
        "from autograder import lesson, plots\n"
        "from autograder.selfcheck import check\n"
        "from autograder.quiz import quiz\n"
        "print(autograder.__file__)\n"
        "print(importlib.util.find_spec('autograder.instructor'))\n"))
    assert done.returncode == 0, done.stderr
    where, instructor = done.stdout.split()
    assert where.startswith(str(target)), f"imported {where}, not the installed wheel"
    assert instructor == "None", "the instructor package is importable from the student install"


def test_the_installed_wheel_checks_a_notebook_with_the_visible_checks(installed):
    done = student_python(installed, "-m", "autograder", "check", "finished.ipynb")
    assert done.returncode == 0, done.stdout + done.stderr
    # every behaviour the visible checks decide passes; the others wait for the grader's hidden checks
    found = re.search(r"total ([\d.]+) of ([\d.]+) points verified here \(visible checks only\); ([\d.]+) more", done.stdout)
    assert found and found[1] == found[2], done.stdout[-500:]
    assert float(found[2]) + float(found[3]) == pytest.approx(sum(item.points for item in AUTO_ITEMS))
    assert "hidden" not in done.stdout.replace("the grader also runs hidden ones", "")


@pytest.mark.parametrize("command", [["check", "--all", "finished.ipynb"], ["grade", ".", "--out", "out"],
                                     ["release"], ["export", "--out", "out"]])
def test_instructor_commands_say_they_need_the_course_repository(installed, command):
    done = student_python(installed, "-m", "autograder", *command, timeout=120)
    assert done.returncode != 0
    assert "needs the course repository" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
