"""`python -m autograder release`: regenerate the student notebooks in lessons/ from solutions/, and
the visible checks' expected values in autograder/checks/expected.pt (instructor/expected.py).

A wrapper over `nbgrader generate_assignment` that first stamps each grade cell's points from
items.py, and whose stubs name the exercise (`ClearSolutionsNamed`, set in nbgrader_config.py).
"""
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import nbformat
from nbgrader.preprocessors import ClearSolutions

from ..checks.expect import EXPECTED_FILE
from ..items import ASSIGNMENT, ITEMS, ROOT, item_of_cell, solution_notebooks
from . import expected


class ClearSolutionsNamed(ClearSolutions):
    """nbgrader's ClearSolutions, whose stubs say which exercise and which function to write.

    Inside a function the stub raises NotImplementedError naming both; a top-level region of
    assignments (`Q5_ANSWER = "b"`) becomes `Q5_ANSWER = ...` for the student to fill in.
    """

    def _replace_solution_region(self, cell, language):
        lines = cell.source.split("\n")
        exercise = item_of_cell(cell.metadata.get("nbgrader", {}).get("grade_id", ""))
        out, start, replaced = [], None, False
        for i, line in enumerate(lines):
            if self.begin_solution_delimeter in line:
                if start is not None:
                    raise RuntimeError("encountered nested begin solution statements")
                start = i
            elif self.end_solution_delimeter in line and start is not None:
                out += self._stub(cell.cell_type, lines, start, i, exercise, language)
                start, replaced = None, True
            elif start is None:
                out.append(line)
        if start is not None:
            raise RuntimeError("no end solution statement found")
        cell.source = "\n".join(out)
        return replaced

    def _stub(self, cell_type, lines, start, end, exercise, language):
        if cell_type != "code":
            return self.text_stub.split("\n")
        indent = re.match(r"\s*", lines[start]).group(0)
        qualname = _enclosing_function(lines[:start], indent)
        if qualname:
            return [f"{indent}# YOUR CODE HERE",
                    f'{indent}raise NotImplementedError("{exercise}: write the body of {qualname}()")']
        names = [m.group(1) for m in (re.match(r"\s*([A-Za-z_]\w*)\s*=", ln) for ln in lines[start + 1:end]) if m]
        if names:
            return [f"{indent}{name} = ...  # YOUR ANSWER HERE" for name in names]
        return [indent + ln for ln in self.code_stub[language].split("\n")]


def _enclosing_function(before, indent):
    """'Class.method' or 'function' for code at `indent` after the lines `before`, or None."""
    names, level = [], len(indent)
    for line in reversed(before):
        m = re.match(r"(\s*)(def|class)\s+(\w+)", line)
        if m and len(m.group(1)) < level:
            names.append((m.group(2), m.group(3)))
            level = len(m.group(1))
    if not names or names[0][0] != "def":
        return None
    return ".".join(name for _, name in reversed(names))


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
    lessons/ (missing and extra ones too) and the visible checks' expected values."""
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
    return stale


def _expected_file(root: Path) -> Path:
    return root / EXPECTED_FILE.relative_to(ROOT)


def release(root: Path = ROOT) -> Path:
    changed = stamp_points(root)
    for path in changed:
        print(f"stamped points from items.py into {path.relative_to(root)}")
    out = generate(root / "lessons", root)
    print(f"wrote {', '.join(p.name for p in sorted(out.iterdir()))} to {out.relative_to(root)}")
    values = _expected_file(root)
    changed = expected.write(values, root)
    print(f"{'wrote' if changed else 'kept'} {values.relative_to(root)} (the visible checks' expected values)")
    return out
