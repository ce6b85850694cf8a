"""Similar solution code: copied pairs found among independent solutions, and what any solution shares left out.

The class is generated: the corpus's alternatives and buggy variants (tests/submissions), each its own student,
the reference and the stub, and copies of some of them, each made with one disguise: variables renamed, lines
reordered, comments changed. Those copied pairs must hold the first places of their exercise's ranking.
Many of the corpus's variants are one base with a line or two changed (TRAIN_STEP and TOKEN are templates):
near-copies of one another by construction, not independent solutions, so the class takes one of each such
family (`derived`), the copied one where there is one.
"""
import ast
import builtins
import io
import json
import subprocess
import sys
import tokenize

import nbformat
import pytest

from autograder.instructor import similarity
from autograder.items import ASSIGNMENT, ITEMS_BY_ID
from tests.helpers import ROOT
from tests.submissions import VARIANTS, make_submission


# ---- the disguises ----

def renamed(source: str, keep=()) -> str:
    """Every variable and argument the cell binds renamed, but the names the exercise must define."""
    bound = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    new = {n: f"my_{n}_{i}" for i, n in enumerate(sorted(bound - set(keep) - {"self", "cls"} - set(dir(builtins))))}
    out, previous = [], None
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in new and not (previous and previous.string == "."):
            tok = tok._replace(string=new[tok.string])  # not an attribute: self.scale stays self.scale
        out.append(tok)
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT):
            previous = tok
    return tokenize.untokenize(out)


def _names(node, ctx) -> set:
    """What a statement writes (ctx=ast.Store) or reads (ast.Load): names, and attributes as written (self.scale)."""
    found = set()
    for n in ast.walk(node):
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ctx):
            found.add(ast.unparse(n))
            if isinstance(n, ast.Attribute):
                found.add(ast.unparse(n.value))
    return found


def _independent(first, second) -> bool:
    simple = (ast.Assign, ast.AugAssign, ast.AnnAssign)
    if not (isinstance(first, simple) and isinstance(second, simple)):
        return False
    w1, w2 = _names(first, ast.Store), _names(second, ast.Store)
    return not (w1 & (_names(second, ast.Load) | w2) or w2 & _names(first, ast.Load))


def _swapped(body: list) -> list:
    """Each pair of adjacent assignments that do not depend on one another, swapped."""
    out, i = [], 0
    while i < len(body):
        if i + 1 < len(body) and _independent(body[i], body[i + 1]):
            out += [body[i + 1], body[i]]
            i += 2
        else:
            out.append(body[i])
            i += 1
    return out


def reordered(source: str, keep=()) -> str:
    """Lines reordered: adjacent independent assignments swapped, the cell's definitions and each class's
    methods in reverse order (imports stay first)."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        for field in ("body", "orelse"):
            if isinstance(getattr(node, field, None), list) and not isinstance(node, (ast.Module, ast.ClassDef)):
                setattr(node, field, _swapped(getattr(node, field)))
        if isinstance(node, ast.ClassDef):
            doc = node.body[:1] if isinstance(node.body[0], ast.Expr) else []
            node.body = doc + node.body[len(doc):][::-1]
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    tree.body = imports + [n for n in tree.body if n not in imports][::-1]
    return ast.unparse(tree)


def recommented(source: str, keep=()) -> str:
    """Every comment removed, and one of the copier's own above each def."""
    out = []
    for line in source.splitlines():
        code = line.split("  #")[0].rstrip()
        if code.strip().startswith("#"):
            continue
        if code.lstrip().startswith("def "):
            out.append(code[:len(code) - len(code.lstrip())] + "# helper: my own work")
        out.append(code)
    return "\n".join(out)


# the copied pairs: source variant -> (the exercise whose cell is copied, the disguise)
COPIES = {
    "alt_underflow_masked_mean": ("underflow_fraction", renamed),
    "alt_static_reciprocal": ("static_loss_scaler", reordered),
    "alt_dynamic_countdown": ("dynamic_loss_scaler", renamed),
    "alt_master_apex_style": ("master_weights", recommented),
    "alt_accumulate_chunk": ("accumulate_gradients", reordered),
    "alt_step_manual_clip": ("mixed_precision_train_step", recommented),
    "alt_token_mean_times_share": ("token_accumulation", renamed),
    "token_counts_padding": ("token_accumulation", reordered),        # wrong code is copied too
    "step_unscales_twice": ("mixed_precision_train_step", renamed),
}


def copy_name(source: str) -> str:
    return f"copy-of-{source}"


def write_notebook(folder, student: str, nb):
    path = folder / student / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))


def copied(source: str):
    item, disguise = COPIES[source]
    nb = make_submission(source)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == f"{item}_solution":
            cell.source = disguise(cell.source, ITEMS_BY_ID[item].names)
    return nb


def solution_cell(nb, item: str) -> str:
    return "\n".join(c.source for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"{item}_solution")


def derived(a: list, b: list, reference: list) -> bool:
    """Whether two submissions (their code cells) differ from the reference somewhere, and from one another by
    at most 8 lines (one's or the other's) in every cell: one was written from the other, or both from one base,
    as the corpus's variants of one template are."""
    def changed(x, y):  # lines in one and not the other
        return 0 if x == y else len(set(x.splitlines()) ^ set(y.splitlines()))
    return (any(x != r and y != r for x, y, r in zip(a, b, reference))
            and all(changed(x, y) <= 8 for x, y in zip(a, b)))


def independent_solutions() -> dict:
    """student -> notebook: the corpus's alternatives, buggy, realistic and honest variants, less those derived
    from one already taken (the copied sources are taken first), then the reference and the stub."""
    names = [n for n, v in VARIANTS.items() if v.kind in ("alternative", "buggy", "realistic", "honest")]
    code = lambda nb: [solution_cell(nb, i.id) for i in similarity.CODE_ITEMS]  # noqa: E731
    reference, taken = make_submission("reference"), {}
    given = code(reference)
    for name in list(COPIES) + [n for n in names if n not in COPIES]:
        nb = make_submission(name)
        cells = code(nb)
        if not any(derived(cells, other, given) for other, _ in taken.values()):
            taken[name] = (cells, nb)
    return {**{n: nb for n, (_, nb) in taken.items()}, "reference": reference, "stub": make_submission("stub")}


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """The generated class compared: (cells, matches, pairs)."""
    folder = tmp_path_factory.mktemp("similarity") / "submitted"
    for name, nb in independent_solutions().items():
        write_notebook(folder, name, nb)
    for source in COPIES:
        write_notebook(folder, copy_name(source), copied(source))
    cells = similarity.read_cells(folder)
    matches = similarity.compare(cells, similarity.course_sources())
    return cells, matches, similarity.ranking(matches)


def test_the_disguises_change_the_text_but_keep_the_code_valid():
    for source, (item, disguise) in COPIES.items():
        original = [c.source for c in make_submission(source).cells
                    if c.metadata.get("nbgrader", {}).get("grade_id") == f"{item}_solution"][0]
        changed = disguise(original, ITEMS_BY_ID[item].names)
        assert ast.parse(changed), source
        if disguise is reordered:  # the same statements, in another order
            lines = lambda code: [ast.unparse(n) for n in ast.walk(ast.parse(code))  # noqa: E731
                                  if isinstance(n, ast.stmt) and not hasattr(n, "body")]
            assert lines(changed) != lines(original) and sorted(lines(changed)) == sorted(lines(original)), source
        else:
            assert changed != original, source


def test_copied_pairs_take_the_first_places_of_their_exercise(compared):
    cells, matches, pairs = compared
    assert len({s for code in cells.code.values() for s in code}) > 80
    # staging's bounds may refuse a notebook (real_large_outputs: a log of more lines than a list may hold); never a copy
    assert not set(cells.skipped) & {*COPIES, *map(copy_name, COPIES)}, cells.skipped
    places = {}
    for source, (item, _) in COPIES.items():
        pair = tuple(sorted((source, copy_name(source))))
        places[source] = next(place for place, m in enumerate(matches[item], start=1) if (m.a, m.b) == pair)
    for item in {item for item, _ in COPIES.values()}:
        copies_here = [s for s, (i, _) in COPIES.items() if i == item]
        assert sorted(places[s] for s in copies_here) == list(range(1, len(copies_here) + 1)), (item, places)
    overall = {(p.a, p.b): place for place, p in enumerate(pairs, start=1)}
    ranks = {s: overall[tuple(sorted((s, copy_name(s))))] for s in COPIES}
    assert sorted(ranks.values()) == list(range(1, len(COPIES) + 1)), ranks  # the copies first across exercises
    students = len({s for code in cells.code.values() for s in code})
    print(f"{students} students, {len(pairs)} pairs with shared code; where each copied pair ranked (its "
          "exercise, overall):", {s: (places[s], ranks[s]) for s in COPIES})


def test_students_who_hand_in_the_reference_share_nothing(compared):
    cells, matches, _ = compared
    # the reference's code is left out, so the many students whose cell is the reference match nobody on it
    for item, item_matches in matches.items():
        same_as_reference = {s for s, code in cells.code[item].items()
                             if code == cells.code[item]["reference"]}
        assert len(same_as_reference) > 3, item
        assert not [m for m in item_matches if m.a in same_as_reference and m.b in same_as_reference], item


def test_code_most_of_the_class_writes_alike_is_left_out():
    fps = {f"s{i}": similarity.fingerprint("total = sum(x * x for x in values if x is not None)\n"
                                           f"print(total, {i})\n") for i in range(5)}
    common = similarity.left_out([], fps)
    assert common and all(common <= fp.hashes | common for fp in fps.values())
    two = {s: fps[s] for s in ("s0", "s1")}  # two alike in a class of two: not "most of the class" (at least 3)
    assert not similarity.left_out([], two)


def test_solution_cells_are_read_by_grade_id_and_copies_are_joined():
    nb = json.loads(nbformat.writes(make_submission("reference")))
    code = similarity.solution_sources(nb)
    assert set(code) == {i.id for i in similarity.CODE_ITEMS}
    cell = next(c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == "underflow_fraction_solution")
    nb["cells"].append({**cell, "source": "EXTRA = 1\n"})  # the same cell pasted again
    nb["cells"].append({"cell_type": "markdown", "metadata": cell["metadata"], "source": "not code"})
    assert similarity.solution_sources(nb)["underflow_fraction"].endswith("\nEXTRA = 1\n")
    assert similarity.solution_sources({"cells": "nonsense"}) == {} and similarity.solution_sources([]) == {}


def test_a_submission_holding_a_link_is_not_read(tmp_path):
    submitted = tmp_path / "submitted"
    write_notebook(submitted, "honest", make_submission("reference"))
    (submitted / "linked" / ASSIGNMENT).mkdir(parents=True)
    (submitted / "linked" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").symlink_to(ROOT / "solutions" / ASSIGNMENT /
                                                                           f"{ASSIGNMENT}.ipynb")
    cells = similarity.read_cells(submitted)
    assert "symbolic link" in cells.skipped["linked"]
    assert all("linked" not in code for code in cells.code.values())


def test_the_command_writes_the_page_and_nothing_else(tmp_path):
    submitted, out = tmp_path / "submitted", tmp_path / "out"
    write_notebook(submitted, "ada", make_submission("alt_dynamic_countdown"))
    write_notebook(submitted, "bob", copied("alt_dynamic_countdown"))
    write_notebook(submitted, "cy", make_submission("reference"))
    done = subprocess.run([sys.executable, "-m", "autograder", "similarity", str(submitted), "--out", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1. ada · bob: best place 1" in done.stdout, done.stdout
    assert sorted(p.name for p in out.iterdir()) == ["similarity.html"]  # no grade, no gradebook touched
