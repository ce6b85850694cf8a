"""The recipe for an exercise, as a check: every piece docs/adding-an-exercise.md lists, looked for in the files of a
course's checkout, read without importing them (so a copy with a piece removed can be checked too).

`missing_pieces(root, variant_items, breakers)` -> {exercise id: [what is missing, in words a contributor acts on]}.
variant_items: corpus variant -> its item; breakers: variant -> (the central behaviour it breaks, how), as
tests/test_rubric.py's CENTRAL_MISSES and VISIBLE_MISSES hold them.
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


def _literal(node, default=None):
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError):
        return default


def _kwargs(call: ast.Call) -> dict:
    return {k.arg: k.value for k in call.keywords if k.arg}


def declared_order(root: Path) -> list:
    """The exercise modules' names in EXERCISES's order (autograder/exercises/__init__.py)."""
    tree = ast.parse((root / "autograder" / "exercises" / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "EXERCISES" for t in node.targets):
            tuples = [n for n in ast.walk(node.value) if isinstance(n, ast.Tuple)]
            return [e.id for e in tuples[0].elts if isinstance(e, ast.Name)] if tuples else []
    return []


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
                            tuple(_literal(kw.get("probes"), ())), bool(_literal(kw.get("code"), True)))
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
    """The keys of a dict literal `target = {...}`, or the names in `target = {f.__name__: f for f in (a, b)}`."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == target for t in node.targets):
            if isinstance(node.value, ast.Dict):
                return {_literal(k) for k in node.value.keys}
            return {n.id for n in ast.walk(node.value) if isinstance(n, ast.Name) and n.id != "f"}
    return set()


def notebook_grade_ids(root: Path) -> list:
    nb = json.loads((root / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    meta = [c.get("metadata", {}).get("nbgrader", {}) for c in nb["cells"]]
    return [m["grade_id"] for m in meta if m.get("grade") and m.get("grade_id")]


def missing_pieces(root: Path, variant_items: dict, breakers: dict) -> dict:
    root = Path(root)
    pkg = root / "autograder"
    probes = decorated(pkg / "checks" / "probes.py", "probe")
    oracles = assigned_names(pkg / "instructor" / "oracles.py", "ORACLES")
    smoke = assigned_names(pkg / "checks" / "smoke.py", "CASES")
    order = []
    found = {}
    for module in declared_order(root):
        path = pkg / "exercises" / f"{module}.py"
        ex = declaration(path) if path.is_file() else None
        if ex is None:
            found[module] = [f"autograder/exercises/{module}.py declares no Exercise(...)"]
            continue
        order.append(ex.id)
        gaps = found.setdefault(ex.id, [])
        visible_file = pkg / "checks" / f"test_{ex.id}.py"
        hidden_file = pkg / "instructor" / "hidden" / f"test_{ex.id}.py"
        if not visible_file.is_file():
            gaps.append(f"no visible checks: autograder/checks/test_{ex.id}.py")
        if not hidden_file.is_file():
            gaps.append(f"no hidden checks: autograder/instructor/hidden/test_{ex.id}.py")
        visible, hidden = marked_behaviours(visible_file), marked_behaviours(hidden_file)
        for behaviour, central in ex.behaviours.items():
            if behaviour not in visible | hidden:
                gaps.append(f"no check, visible or hidden, is marked with behaviour {behaviour!r}")
            elif central and behaviour not in visible and (ex.id, behaviour) not in NOT_VISIBLE:
                gaps.append(f"central behaviour {behaviour!r} has no visible check (a student would see a ✓ over it)")
            if central and not any(variant_items.get(v) == ex.id and b == behaviour for v, (b, _) in breakers.items()):
                gaps.append(f"no corpus variant breaks central behaviour {behaviour!r}: add one to "
                            "tests/submissions/ and to CENTRAL_MISSES in tests/test_rubric.py")
        if ex.code and not ex.probes:
            gaps.append("no probe: name the probes its checks drive in the declaration's probes=")
        gaps += [f"no probe {p!r} in autograder/checks/probes.py (a function decorated @probe)"
                 for p in ex.probes if p not in probes]
        asked = oracles_asked([visible_file, pkg / "checks" / f"diagnose_{ex.id}.py"])
        gaps += [f"no oracle {o!r} in ORACLES (autograder/instructor/oracles.py), which its visible checks read "
                 "through expected()" for o in sorted(asked - oracles)]
        if ex.code and ex.id not in smoke:
            gaps.append("no GPU smoke case: an entry in CASES of autograder/checks/smoke.py")
    in_notebook = [g for g in notebook_grade_ids(root) if g in order]
    for ex_id in order:
        if ex_id not in in_notebook:
            found[ex_id].append("no graded check cell with its grade id in solutions/lesson20/lesson20.ipynb")
    if in_notebook != [e for e in order if e in in_notebook]:
        for ex_id in order:
            found[ex_id].append(f"the notebook's order {in_notebook} differs from the declared order {order} "
                                "(autograder/exercises/__init__.py)")
    return {k: v for k, v in found.items() if v}
