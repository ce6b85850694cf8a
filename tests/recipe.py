"""The recipe for an exercise, as a check: every piece docs/adding-an-exercise.md lists, looked for in the files of a
course's checkout, read without importing them (so a copy with a piece removed can be checked too).

An exercise is two folders: autograder/exercises/<id>/ (its declaration in __init__.py, probes.py, test_<id>.py,
smoke.py, diagnose.py) and autograder/instructor/exercises/<id>/ (test_<id>.py, oracles.py); everything else
(the probe registry and the sandbox's probe files, smoke.CASES, ORACLES, the rubric, the answers' fields, the
corpus's central-miss table) is derived from them.

`missing_pieces(root, variant_items, breakers)` -> {exercise id: [what is missing, in words a contributor acts on]}.
variant_items: corpus variant -> its item; breakers: variant -> (the behaviour it misses, how), as the variants'
`misses=` hold them (tests/test_rubric.py's CENTRAL_MISSES and VISIBLE_MISSES).
"""
import ast
import json
from dataclasses import dataclass
from pathlib import Path

NOT_VISIBLE = {("q5_answer", "right_letter")}  # a visible check of the letter would tell the student the answer


@dataclass
class Declared:
    id: str
    names: tuple
    behaviours: dict  # id -> central
    probes: tuple
    code: bool
    fields: dict  # the answer fields only its own probes return: {field: kind}


def _literal(node, default=None):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return default


def _kwargs(call: ast.Call) -> dict:
    return {k.arg: k.value for k in call.keywords if k.arg}


def declared_order(root: Path) -> list:
    """The exercises' folder names in ORDER (autograder/exercises/order.py, which `release` writes)."""
    path = root / "autograder" / "exercises" / "order.py"
    if not path.is_file():
        return []
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "ORDER" for t in node.targets):
            return list(_literal(node.value, ()))
    return []


def folders(path: Path) -> list:
    """The exercise folders under `path` (a package of its own each)."""
    return sorted(p.name for p in path.iterdir() if (p / "__init__.py").is_file()) if path.is_dir() else []


def declaration(path: Path):
    """The Exercise(...) a module declares, or None."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Exercise":
            kw = _kwargs(node)
            behaviours = {}
            for b in getattr(kw.get("behaviours"), "elts", []):
                if isinstance(b, ast.Call) and b.args:
                    behaviours[_literal(b.args[0])] = bool(_literal(_kwargs(b).get("central"), False))
            return Declared(_literal(kw.get("id")), tuple(_literal(kw.get("names"), ())), behaviours,
                            tuple(_literal(kw.get("probes"), ())), bool(_literal(kw.get("code"), True)),
                            dict(_literal(kw.get("fields"), {})))
    return None


def marked_behaviours(path: Path) -> set:
    """The behaviours a check file's checks are marked with (@pytest.mark.behaviour("id"))."""
    if not path.is_file():
        return set()
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "behaviour":
            found.update(_literal(a) for a in node.args)
    return found


def oracles_asked(paths) -> set:
    """The oracles a visible check reads through expected("name", ...)."""
    found = set()
    for path in paths:
        if path.is_file():
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "expected" and node.args:
                    found.add(_literal(node.args[0]))
    return found - {None}


def decorated(path: Path, decorator: str) -> set:
    return {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)
            and any(getattr(d, "id", "") == decorator for d in node.decorator_list)}


def assigned_names(path: Path, target: str) -> set:
    """The names in a module's `target = (a, b)`."""
    if not path.is_file():
        return set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == target for t in node.targets):
            return {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name)}
    return set()


def defines(path: Path, name: str) -> bool:
    """Whether a module defines `name` at its top level (a function, or an assignment)."""
    if not path.is_file():
        return False
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            return True
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == name for t in node.targets):
            return True
    return False


def answer_fields(path: Path) -> set:
    """The fields a probes.py names in the answers it builds: the string keys of a dict it returns or holds in
    `out`, and of `out["key"] = ...` and `out.update({...})` (what the other fields hold is harness's)."""
    keys = set()
    if not path.is_file():
        return keys
    for node in ast.walk(ast.parse(path.read_text())):
        shown = []
        if isinstance(node, ast.Return) and isinstance(node.value, ast.Dict):
            shown.append(node.value)
        elif isinstance(node, ast.Assign):
            if any(getattr(t, "id", "") == "out" for t in node.targets) and isinstance(node.value, ast.Dict):
                shown.append(node.value)
            keys.update(_literal(t.slice) for t in node.targets
                        if isinstance(t, ast.Subscript) and getattr(t.value, "id", "") == "out")
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "update"
              and getattr(node.func.value, "id", "") == "out" and node.args and isinstance(node.args[0], ast.Dict)):
            shown.append(node.args[0])
        keys.update(_literal(k) for d in shown for k in d.keys if k is not None)
    return {k for k in keys if isinstance(k, str)}


def shared_fields(root: Path) -> dict:
    """autograder/checks/answers.py SHARED: the answer fields every probe may carry."""
    for node in ast.parse((root / "autograder" / "checks" / "answers.py").read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SHARED":
            return _literal(node.value, {})
    return {}


def notebook_grade_ids(root: Path) -> list:
    nb = json.loads((root / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in nb["cells"]]
    return [m["grade_id"] for m in meta if m.get("grade") and m.get("grade_id")]


def missing_pieces(root: Path, variant_items: dict, breakers: dict) -> dict:
    root = Path(root)
    student, instructor = root / "autograder" / "exercises", root / "autograder" / "instructor" / "exercises"
    probes = set().union(*(decorated(student / f / "probes.py", "probe") for f in folders(student)
                           if (student / f / "probes.py").is_file()))
    oracles = set().union(*(assigned_names(instructor / f / "oracles.py", "ORACLES") for f in folders(instructor)))
    declared = declared_order(root)
    order = []
    found = {}
    exercises = [declaration(student / f / "__init__.py") for f in declared if (student / f / "__init__.py").is_file()]
    named = set(shared_fields(root)).union(*(ex.fields for ex in exercises if ex))
    for folder in folders(student):
        if folder not in declared:
            found[folder] = [f"autograder/exercises/{folder}/ is not in the exercises' order (autograder/exercises/"
                             "order.py): run `python -m autograder release`, which writes the notebook's order"]
    for folder in declared:
        path = student / folder / "__init__.py"
        ex = declaration(path) if path.is_file() else None
        if ex is None:
            found[folder] = [f"autograder/exercises/{folder}/__init__.py declares no Exercise(...)"]
            continue
        order.append(ex.id)
        gaps = found.setdefault(ex.id, [])
        if ex.id != folder:
            gaps.append(f"its folder autograder/exercises/{folder}/ is not named by its id {ex.id!r}")
        visible_file = student / ex.id / f"test_{ex.id}.py"
        hidden_file = instructor / ex.id / f"test_{ex.id}.py"
        if not visible_file.is_file():
            gaps.append(f"no visible checks: autograder/exercises/{ex.id}/test_{ex.id}.py")
        if not hidden_file.is_file():
            gaps.append(f"no hidden checks: autograder/instructor/exercises/{ex.id}/test_{ex.id}.py")
        elif not (instructor / ex.id / "__init__.py").is_file():
            gaps.append(f"no autograder/instructor/exercises/{ex.id}/__init__.py (its hidden checks' package)")
        visible, hidden = marked_behaviours(visible_file), marked_behaviours(hidden_file)
        for behaviour, central in ex.behaviours.items():
            if behaviour not in visible | hidden:
                gaps.append(f"no check, visible or hidden, is marked with behaviour {behaviour!r}")
            elif central and behaviour not in visible and (ex.id, behaviour) not in NOT_VISIBLE:
                gaps.append(f"central behaviour {behaviour!r} has no visible check (a student would see a ✓ over it)")
            if central and not any(variant_items.get(v) == ex.id and b == behaviour for v, (b, _) in breakers.items()):
                gaps.append(f"no corpus variant breaks central behaviour {behaviour!r}: add one to tests/submissions/ "
                            f"with misses=({behaviour!r}, how)")
        if ex.code and not ex.probes:
            gaps.append("no probe: name the probes its checks drive in the declaration's probes=")
        gaps += [f"no probe {p!r} in any autograder/exercises/<id>/probes.py (a function decorated @probe)"
                 for p in ex.probes if p not in probes]
        gaps += [f"autograder/exercises/{ex.id}/probes.py returns field {key!r}, which no declaration names: add it to "
                 "its Exercise's fields= as a value, a report, words or measured (autograder/checks/answers.py)"
                 for key in sorted(answer_fields(student / ex.id / "probes.py") - named)]
        asked = oracles_asked([visible_file, student / ex.id / "diagnose.py"])
        gaps += [f"no oracle {o!r} in the ORACLES of an autograder/instructor/exercises/<id>/oracles.py, which its "
                 "visible checks read through expected()" for o in sorted(asked - oracles)]
        if ex.code and not defines(student / ex.id / "smoke.py", "case"):
            gaps.append(f"no GPU smoke case: `case` in autograder/exercises/{ex.id}/smoke.py")
    in_notebook = [g for g in notebook_grade_ids(root) if g in order]
    for ex_id in order:
        if ex_id not in in_notebook:
            found[ex_id].append("no graded check cell with its grade id in solutions/lesson20/lesson20.ipynb")
    if in_notebook != [e for e in order if e in in_notebook]:
        for ex_id in order:
            found[ex_id].append(f"the notebook's order {in_notebook} differs from the declared order {order} "
                                "(autograder/exercises/order.py): run `python -m autograder release`")
    return {k: v for k, v in found.items() if v}
