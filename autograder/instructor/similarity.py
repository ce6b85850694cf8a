"""`python -m autograder similarity`: which students' solution code is alike, exercise by exercise.

Evidence for the instructor to read, never a score: nothing here touches grades.json or the gradebook.

1. `read_cells`: each student's solution cells, by their nbgrader grade id (`<item>_solution`), read through
   staging (staging.stage: no link followed, the notebook's size and structure bounded before it is parsed);
2. `fingerprint`: copydetect's MOSS-style winnowing (Schleimer, Wilkerson and Aiken, "Winnowing", SIGMOD
   2003) of each cell, tokenised by Pygments with every name, string and comment made alike, so renamed
   variables, reordered lines and changed comments still match;
3. `left_out`: what any correct solution shares is taken out of every fingerprint before two are compared:
   the released stub, the reference (the instructor notebook's own code), and what more than half of the class
   (and at least three students) wrote alike, so short correct answers do not all match;
4. `compare`: each pair of students, per exercise: how much code they share beyond that, and where.

Pairs are ranked per exercise by the code they share (characters of tokenised code), and across exercises by
their best place in one exercise, then that sum; the page (similarity_page.py) shows the two cells side by side
with the shared parts marked.
"""
import io
import json
import math
import tempfile
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

from ..items import ASSIGNMENT, AUTO_ITEMS, ROOT, SOLUTION_SUFFIX, solution_notebooks
from .staging import select_students, stage, staged_notebook

# copydetect's noise threshold (no match shorter than this many tokenised characters) and guarantee threshold
# (every match at least this long is found). Its defaults, 25 and 30, are for whole files: a solution cell's
# methods are a line or two, and at 25 a copy whose methods were reordered lost most of its matches. The two
# are equal, a winnowing window of 1, so every k-gram is kept: cells are small enough, and the matches then do
# not depend on Python's string hash, which copydetect uses and which changes from process to process
NOISE = 20
GUARANTEE = 20
COMMON_SHARE = 0.5  # a fingerprint in more than this share of the class's cells (and at least 3) is left out
COMMON_MIN = 3
MAX_CELL_CHARS = 200_000  # a solution cell is compared on its first this many characters
CODE_ITEMS = tuple(i for i in AUTO_ITEMS if i.code)  # exercises whose answer is code (not Q5's letter)


@dataclass
class Cells:
    """item -> student -> the student's solution code for it; `skipped`: student -> why nothing was read."""
    code: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Match:
    """Two students' code for one item: `shared` tokenised characters in common beyond what is left out,
    each cell's share of its own compared code, and where the shared parts lie in each cell ((start, end))."""
    item: str
    a: str
    b: str
    shared: int
    share_a: float
    share_b: float
    spans_a: tuple
    spans_b: tuple


def solution_sources(nb: dict) -> dict:
    """item -> the code of its solution cells (several, if the student copied one, joined in order)."""
    wanted = {f"{i.id}{SOLUTION_SUFFIX}": i.id for i in CODE_ITEMS}
    cells = nb.get("cells") if isinstance(nb, dict) else None
    found = {}
    for cell in cells if isinstance(cells, list) else []:  # a staged notebook parses, but its shapes are the student's
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        meta = cell.get("metadata")
        nbgrader = meta.get("nbgrader") if isinstance(meta, dict) else None
        grade_id = nbgrader.get("grade_id") if isinstance(nbgrader, dict) else None
        source = cell.get("source", "")
        source = "".join(map(str, source)) if isinstance(source, list) else str(source)
        if isinstance(grade_id, str) and grade_id in wanted:
            found.setdefault(wanted[grade_id], []).append(source)
    return {item: "\n".join(parts)[:MAX_CELL_CHARS] for item, parts in found.items()}


def read_cells(submitted, students=None) -> Cells:
    """Every student's solution cells, each submission staged as `grade` stages it (then thrown away)."""
    submitted = Path(submitted)
    cells = Cells(code={i.id: {} for i in CODE_ITEMS})
    with tempfile.TemporaryDirectory(prefix="lesson20-similarity-") as staging:
        for student in students if students is not None else select_students(submitted):
            staged = stage(student, submitted, Path(staging))
            if staged.problem:
                cells.skipped[student] = staged.problem
                continue
            nb = json.loads(staged_notebook(Path(staging), student).read_bytes())
            for item, source in solution_sources(nb).items():
                cells.code[item][student] = source
    return cells


def course_sources(root: Path = ROOT) -> dict:
    """item -> [the released stub's cell, the reference's cell]: code every student was given or that is right."""
    import nbformat
    sources = {i.id: [] for i in CODE_ITEMS}
    for path in (Path(root) / "lessons" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", *solution_notebooks(root)):
        for item, source in solution_sources(nbformat.read(str(path), as_version=4)).items():
            sources[item].append("\n".join(ln for ln in source.splitlines()
                                           if ln.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION")))
    return sources


def fingerprint(source: str):
    """copydetect's fingerprint of one cell, tokenised as Python."""
    from copydetect import CodeFingerprint
    return CodeFingerprint("cell.py", NOISE, GUARANTEE - NOISE + 1, fp=io.StringIO(source), language="python")


def without(fp, hashes: set):
    """`fp` with the fingerprints in `hashes` taken out (in place), its coverage counted again."""
    from copydetect.utils import get_token_coverage
    fp.hashes = fp.hashes - hashes
    fp.hash_idx = {h: i for h, i in fp.hash_idx.items() if h in fp.hashes}
    fp.token_coverage = get_token_coverage(fp.hash_idx, fp.k, len(fp.filtered_code))
    return fp


def left_out(given: list, class_prints: dict) -> set:
    """The fingerprints left out for one item: those of the code given (stub, reference), and those that more
    than COMMON_SHARE of the class's cells (and at least COMMON_MIN) hold."""
    hashes = set().union(*(fingerprint(source).hashes for source in given)) if given else set()
    counts = {}
    for fp in class_prints.values():
        for h in fp.hashes:
            counts[h] = counts.get(h, 0) + 1
    floor = max(COMMON_MIN, math.floor(COMMON_SHARE * len(class_prints)) + 1)
    return hashes | {h for h, n in counts.items() if n >= floor}


def _spans(slices) -> tuple:
    return tuple((int(s), int(e)) for s, e in zip(*slices)) if len(slices[0]) else ()


def compare_item(item: str, code: dict, given: list) -> list:
    """Every pair of students with shared code for `item`, most shared first."""
    from copydetect import compare_files
    prints = {s: fingerprint(source) for s, source in sorted(code.items())}
    common = left_out(given, prints)
    prints = {s: without(fp, common) for s, fp in prints.items()}
    matches = []
    for a, b in combinations(sorted(prints), 2):
        if prints[a].hashes.isdisjoint(prints[b].hashes):
            continue
        shared, (share_a, share_b), (slices_a, slices_b) = compare_files(prints[a], prints[b])
        if shared:
            matches.append(Match(item, a, b, int(shared), float(share_a), float(share_b),
                                 _spans(slices_a), _spans(slices_b)))
    return sorted(matches, key=lambda m: (-m.shared, -min(m.share_a, m.share_b), m.a, m.b))


def compare(cells: Cells, given: dict) -> dict:
    """item -> its matches, most shared first."""
    return {item: compare_item(item, code, given.get(item, [])) for item, code in cells.code.items()}


@dataclass(frozen=True)
class Pair:
    """Two students across the exercises: their best place in one exercise's ranking (1: the most alike pair
    of that exercise), their shared code summed over the exercises, and each exercise's Match."""
    a: str
    b: str
    best: int
    shared: int
    matches: dict


def ranking(matches: dict) -> list:
    """Every pair with a match, the pairs to review first first: by their best place in any exercise's ranking
    (so a short exercise's most alike pair is not buried under a long exercise's common code), then by the
    code they share in all."""
    pairs, best = {}, {}
    for item_matches in matches.values():
        for place, m in enumerate(item_matches, start=1):
            pairs.setdefault((m.a, m.b), {})[m.item] = m
            best[m.a, m.b] = min(best.get((m.a, m.b), place), place)
    ranked = [Pair(a, b, best[a, b], sum(m.shared for m in by_item.values()), by_item)
              for (a, b), by_item in pairs.items()]
    return sorted(ranked, key=lambda p: (p.best, -p.shared, p.a, p.b))
