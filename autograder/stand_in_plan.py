"""Which of the reference's code stands in for which item's, while that item is graded.

A mistake in one exercise should cost points in that exercise only, so while the train step is graded the
reference's DynamicLossScaler stands in for the student's. But whatever an item's fork holds, the student's
code can read: so the fork of an item holds no code of its own item, and none that leads to it.

  * An item's fork holds only exercises that come before it in the lesson, and of those only the ones its
    code uses (its cells' names, followed through the notebook's own top-level definitions), or that its
    checks hand to it (Item.given), with what they need (DynamicLossScaler needs StaticLossScaler).
  * The items are graded in the lesson's order, each in a fork of its own that ends before the next starts
    (backends.SandboxStudent). So whatever an item's fork holds belongs to items already graded: nothing it
    could leave behind, in any process, file or byte of memory, can help an item still to come.

Each unit is compiled alone in the fork (sandbox/standins.py), so a stand-in's __globals__ hold only its
imports and the units it needs.
"""
import ast
import functools

from .items import AUTO_ITEMS, get_item

ORDER = {item.id: index for index, item in enumerate(AUTO_ITEMS)}


def names_in(node: ast.AST) -> set:
    """The names a syntax tree reads or binds."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def names_used(source: str) -> set:
    """The names a cell's code reads or binds (nothing for code that does not parse)."""
    try:
        return names_in(ast.parse(source))
    except (SyntaxError, ValueError, RecursionError):
        return set()


def definitions(sources) -> dict:
    """{top-level name: the names its code uses} over the notebook's cells (a def, a class, an assignment).
    Kept for the last few notebooks: each item's plan reads the same one (read it, do not change it)."""
    return _definitions(tuple(sources))


@functools.lru_cache(maxsize=4)
def _definitions(sources: tuple) -> dict:
    found = {}
    for source in sources:
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                targets = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = [t.id for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
                           if isinstance(t, ast.Name)]
            else:
                continue
            used = names_in(node)
            for name in targets:
                found[name] = found.get(name, set()) | used
    return found


def used_names(item_sources, all_sources) -> set:
    """The names an item's code uses, directly or through the notebook's own definitions."""
    defined = definitions(all_sources)
    used, todo = set(), set().union(*(names_used(s) for s in item_sources)) if item_sources else set()
    while todo:
        name = todo.pop()
        if name in used:
            continue
        used.add(name)
        todo |= defined.get(name, set()) - used
    return used


def plan(item_id: str, item_sources, all_sources, units: dict) -> dict:
    """What the fork of `item_id` is handed: {"imports", "units", "bind"} (sandbox/child.py)."""
    item = get_item(item_id)
    wanted = used_names(item_sources, all_sources) | set(item.given)
    by_item = {u["item"]: u for u in units.get("units", [])}
    earlier = {i for i in by_item if ORDER.get(i, len(ORDER)) < ORDER.get(item_id, -1)}
    chosen, todo = set(), [i for i in earlier if set(by_item[i]["names"]) & wanted]
    while todo:
        unit = todo.pop()
        if unit in chosen:
            continue
        needs = set(by_item[unit].get("needs", []))
        if item_id in needs or not needs <= earlier:  # it would lead to the item's own code: left out
            continue
        chosen.add(unit)
        todo += sorted(needs)
    ordered = [by_item[i] for i in sorted(chosen, key=ORDER.get)]
    ordered = [u for u in ordered if set(u.get("needs", [])) <= chosen]
    if not ordered:
        return {}
    return {"imports": units.get("imports", ""), "units": ordered,
            "bind": [name for u in ordered for name in u["names"]]}


def held(item_id: str, units: dict) -> list:
    """The items whose reference code the fork of `item_id` may hold at most (its code using every earlier
    exercise): for docs/grading-design.md's table and its test."""
    every = [source for u in units.get("units", []) for source in ["\n".join(u["names"])]]
    return [u["item"] for u in plan(item_id, every, every, units).get("units", [])]


def table(units: dict) -> str:
    """docs/grading-design.md's table: per item, the reference code its fork may hold at most."""
    rows = ["  | item | the reference's code its fork may hold (only what its code uses, or its checks hand it) |",
            "  |---|---|"]
    by_item = {u["item"]: u for u in units.get("units", [])}
    for item in AUTO_ITEMS:
        names = [name for i in held(item.id, units) for name in by_item[i]["names"]]
        rows.append(f"  | `{item.id}` | {', '.join(f'`{n}`' for n in names) or 'none'} |")
    return "\n".join(rows)
