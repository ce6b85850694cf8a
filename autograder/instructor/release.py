"""`python -m autograder release`: regenerate the student notebooks in lessons/ from solutions/, the
visible checks' expected values in autograder/checks/expected.pt (instructor/expected.py), the generated tables
of docs/grading-design.md (instructor/doc_tables.py), and the exercises' order (autograder/exercises/order.py), the
notebook's, which everything derived from the exercises' folders follows: when the order changes, the release goes
on in a fresh process that imports the new one.

A wrapper over `nbgrader generate_assignment` that first stamps each grade cell's points from
items.py, and whose stubs name the exercise (`stubs.ClearSolutionsNamed`, a step of pipeline.RELEASE).
"""
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat

from ..checks.released import EXPECTED_FILE
from ..items import ASSIGNMENT, EXERCISES_DIR, ITEMS, ROOT, solution_notebooks
from . import doc_tables, expected
from .settings import COURSE_ENV


ORDER_FILE = EXERCISES_DIR / "order.py"


def notebook_order(root: Path = ROOT) -> tuple:
    """The grade ids of the notebooks' graded cells, in order, that name an exercise's folder under `root`."""
    folders = root / EXERCISES_DIR.relative_to(ROOT)
    order = []
    for path in solution_notebooks(root):
        for cell in json.loads(path.read_text())["cells"]:
            meta = cell.get("metadata", {}).get("nbgrader", {})
            grade_id = meta.get("grade_id")
            if meta.get("grade") and (folders / str(grade_id) / "__init__.py").is_file() and grade_id not in order:
                order.append(grade_id)
    return tuple(order)


ORDER_HEAD = '''\
"""The exercises in the order of the instructor notebook's grade cells: written by `python -m autograder release`
(instructor/release.py, write_order) from solutions/lesson20/lesson20.ipynb and the exercises' folders; not edited
by hand. `release --check` says when it is stale."""
'''


def order_source(order: tuple) -> str:
    """autograder/exercises/order.py, as `release` writes it."""
    return ORDER_HEAD + "ORDER = (\n" + "".join(f'    "{name}",\n' for name in order) + ")\n"


def write_order(root: Path = ROOT) -> bool:
    """Write autograder/exercises/order.py under `root` from the notebook; whether it changed."""
    path = root / ORDER_FILE.relative_to(ROOT)
    if not path.parent.is_dir():  # a course whose package is installed apart from it: its own order stands
        return False
    text = order_source(notebook_order(root))
    if path.is_file() and path.read_text() == text:
        return False
    path.write_text(text)
    return True


def stamp_points(root: Path = ROOT) -> list:
    """Make every grade cell's points match items.py; check each item has its cells. Returns changed files."""
    seen, changed = {}, []
    for path in solution_notebooks(root):
        nb = nbformat.read(path, as_version=4)
        dirty = False
        for cell in nb.cells:
            meta = cell.metadata.get("nbgrader", {})
            seen.setdefault(meta.get("grade_id"), []).append(path.name)
            item = next((it for it in ITEMS if it.id == meta.get("grade_id")), None)
            if item and meta.get("grade") and float(meta.get("points", -1)) != float(item.points):
                meta["points"] = item.points
                dirty = True
        if dirty:
            nbformat.write(nb, path)
            changed.append(path)
    problems = []
    for item in ITEMS:
        if item.id not in seen:
            problems.append(f"no grade cell with grade_id {item.id!r}")
        if item.kind == "auto" and item.solution_cell_id not in seen:
            problems.append(f"no solution cell with grade_id {item.solution_cell_id!r}")
    if problems:
        raise SystemExit("solutions/ does not match items.py: " + "; ".join(problems))
    return changed


def generate(release_dir: Path, root: Path = ROOT) -> Path:
    """Run nbgrader generate_assignment into `release_dir` (absolute); returns the assignment folder."""
    cmd = [sys.executable, "-m", "nbgrader", "generate_assignment", ASSIGNMENT, "--force", "--no-db",
           f"--CourseDirectory.release_directory={release_dir}", "--log-level=WARN"]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"nbgrader generate_assignment failed:\n{done.stdout}\n{done.stderr}")
    return Path(release_dir) / ASSIGNMENT


def _canonical(path: Path) -> str:
    return json.dumps(json.loads(path.read_text()), sort_keys=True, indent=1)


def stale_files(root: Path = ROOT) -> list:
    """Files a fresh release would write differently, relative to `root`: the student notebooks in
    lessons/ (missing and extra ones too), the visible checks' expected values, the exercises' order and the docs'
    tables."""
    order = root / ORDER_FILE.relative_to(ROOT)
    if order.parent.is_dir() and (not order.is_file() or order.read_text() != order_source(notebook_order(root))):
        return [order.relative_to(root).as_posix()]  # everything else follows the order: release it first
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp) / "release", root)
        current = root / "lessons" / ASSIGNMENT
        names = {p.name for p in fresh.iterdir()} | {p.name for p in current.glob("*")}
        stale = sorted(f"lessons/{ASSIGNMENT}/{n}" for n in names
                       if not (fresh / n).exists() or not (current / n).exists()
                       or _canonical(fresh / n) != _canonical(current / n))
    values = _expected_file(root)
    if expected.is_stale(values, root):
        stale.append(values.relative_to(root).as_posix())
    stale += [f"{doc_tables.DOC} (its {name} table)" for name in doc_tables.stale(root)]
    return stale


def _expected_file(root: Path) -> Path:
    return root / EXPECTED_FILE.relative_to(ROOT)


def release(root: Path = ROOT) -> Path:
    if write_order(root):
        # this process's registries (items, probes, oracles) follow the order it was imported with: a fresh one,
        # importing the course's package from `root`, releases with the new order
        print(f"wrote {ORDER_FILE.relative_to(ROOT)} (the exercises in the notebook's order); releasing with it", flush=True)
        done = subprocess.run([sys.executable, "-m", "autograder", "release"], cwd=root,
                              env={**os.environ, COURSE_ENV: str(root)})
        if done.returncode != 0:
            raise SystemExit(done.returncode)
        return root / "lessons" / ASSIGNMENT
    changed = stamp_points(root)
    for path in changed:
        print(f"stamped points from items.py into {path.relative_to(root)}")
    out = generate(root / "lessons", root)
    print(f"wrote {', '.join(p.name for p in sorted(out.iterdir()))} to {out.relative_to(root)}")
    values = _expected_file(root)
    changed = expected.write(values, root)
    print(f"{'wrote' if changed else 'kept'} {values.relative_to(root)} (the visible checks' expected values)")
    if (root / doc_tables.DOC).is_file():
        tables = doc_tables.write(root)
        print(f"wrote {doc_tables.DOC}'s {', '.join(tables)} table{'s' if len(tables) > 1 else ''}" if tables
              else f"kept {doc_tables.DOC}'s generated tables")
    return out
