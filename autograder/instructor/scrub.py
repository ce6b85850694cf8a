"""No reference code in what a student reads: text from the sandbox that quotes the reference is withheld.

While an item is graded, its fork holds the reference's code for the exercises before it (stand-ins, docs/grading-design.md
"No fork holds its own item's reference"). Code that disassembles a stand-in and raises the result would put
reference code into the check messages, hence into the feedback page. So every text that came from the sandbox
(check messages, the notebook's errors, the reason) is searched for the reference's own code in plain
encodings, and a text that holds any is replaced, whole, by a notice (text.WITHHELD):

* source: a solution line (16 characters or more, not in the student notebook), with runs of white space as
  one and repr's escapes undone;
* bytecode: 8 bytes in a row of a reference code object's co_code (4 distinct values or more: not a run of
  zeros), written as hex, base64, a bytes repr or a list of numbers;
* disassembly: two or more of dis's instruction names;
* names and constants: a quoted name of the reference's code that neither the student notebook nor torch's
  API uses (co_names, co_varnames: a repr of those tuples), or one of its string constants that the notebook
  lacks.

What is public is left alone: a line or name that the student notebook, the checks (visible and hidden, whose
messages quote their own hints) or the rubric's descriptions hold is no secret.

This is defence in depth: feedback is not released to students before the last due date has passed
(release_feedback.py), since no search can find every encoding.
"""
import ast
import base64
import binascii
import builtins
import dis
import functools
import json
import keyword
import re
from dataclasses import dataclass
from pathlib import Path

from ..items import ASSIGNMENT
from ..text import WITHHELD

MIN_LINE = 16
GRAM = 8
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
HEX_RUN = re.compile(r"(?:[0-9a-fA-F]{2}[\s:,-]?){8,}")
B64_RUN = re.compile(r"[A-Za-z0-9+/_-]{12,}={0,2}")
ESCAPES = re.compile(r"(?:\\x[0-9a-fA-F]{2}|\\[nrt0\\'\"]|[ -\[\]-~]){8,}")  # a lone backslash ends a run
NUMBERS = re.compile(r"(?:\b\d{1,3}\b[\s,]+){8,}")
OPNAMES = frozenset(name for name in dis.opname if not name.startswith("<") and "_" in name)
QUOTED = re.compile(r"""['"]([A-Za-z_][A-Za-z0-9_]*)['"]""")


@dataclass(frozen=True)
class Secrets:
    lines: tuple          # normalised solution lines the student notebook does not hold
    grams: frozenset      # GRAM-byte windows of the reference's bytecode
    names: frozenset      # names of the reference's code that the student notebook does not hold
    strings: tuple        # string constants of the reference's code that the student notebook does not hold


def _normal(text: str) -> str:
    return " ".join(text.split())


def _code_objects(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            yield from _code_objects(const)


def public_words() -> set:
    """Names anyone may quote: Python's builtins and keywords, and the API of torch's tensors, modules and
    optimizers (a message about the student's own code names them)."""
    import torch
    api = set(dir(torch)) | set(dir(torch.Tensor)) | set(dir(torch.nn.Module)) | set(dir(torch.optim.Optimizer))
    return api | set(dir(builtins)) | set(keyword.kwlist)


def secrets_of(sources: list, public_text: str) -> Secrets:
    """The reference's secrets from its stand-in sources, less what `public_text` (the student notebook, the
    checks, the rubric) holds anyway."""
    public_flat = _normal(public_text)
    known_words = set(WORD.findall(public_text)) | public_words()
    lines, grams, names, strings = set(), set(), set(), set()
    for source in sources:
        for line in source.splitlines():
            line = _normal(line)
            if len(line) >= MIN_LINE and line not in public_flat:
                lines.add(line)
        try:
            top = compile(ast.parse(source), "<reference>", "exec")
        except SyntaxError:
            continue
        for code in _code_objects(top):
            raw = code.co_code
            grams.update(raw[i:i + GRAM] for i in range(len(raw) - GRAM + 1) if len(set(raw[i:i + GRAM])) >= 4)
            names.update(n for n in code.co_names + code.co_varnames
                         if n not in known_words and len(n) > 2 and not n.startswith("__"))
            strings.update(c for c in code.co_consts if isinstance(c, str) and len(c) >= 8 and c not in public_text)
    return Secrets(tuple(sorted(lines)), frozenset(grams), frozenset(names), tuple(sorted(strings)))


@functools.lru_cache(maxsize=4)
def reference_secrets(root: Path) -> Secrets:
    """The secrets of the course's reference (its stand-in units), against what is public: its student notebook,
    the checks' files and the rubric's descriptions."""
    from ..items import CHECKS_DIR, EXERCISES_DIR, HIDDEN_DIR
    from ..rubric import RUBRIC
    from .reference import stand_in_units
    units = stand_in_units(Path(root))["units"]
    try:
        nb = json.loads((Path(root) / "lessons" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb").read_text())
        public = ["".join(c.get("source", "")) for c in nb.get("cells", [])]
    except (OSError, ValueError):
        public = []
    # the checks' shared files, and each exercise's probes, checks, smoke case and diagnosis (not the oracles)
    files = [*CHECKS_DIR.glob("*.py"), *EXERCISES_DIR.glob("*/*.py"), *HIDDEN_DIR.glob("*.py"), *HIDDEN_DIR.glob("*/*.py")]
    public += [path.read_text() for path in sorted(files) if path.name not in ("__init__.py", "oracles.py")]
    public += [b.text for behaviours in RUBRIC.values() for b in behaviours]
    return secrets_of([u["source"] for u in units], "\n".join(public))


def _decoded(text: str):
    """Byte strings a text may hold in plain encodings: hex, base64, a bytes repr, a list of numbers."""
    for run in HEX_RUN.findall(text):
        digits = re.sub(r"[^0-9a-fA-F]", "", run)
        for start in (0, 1):
            chunk = digits[start:]
            yield bytes.fromhex(chunk[:len(chunk) // 2 * 2])
    for run in B64_RUN.findall(text):
        for start in range(4):
            chunk = run.rstrip("=")[start:]
            # its last group padded (the text's own end), or cut (a message cut inside a group)
            for whole in (chunk + "=" * (-len(chunk) % 4), chunk[:len(chunk) // 4 * 4]):
                for decode in (base64.b64decode, base64.urlsafe_b64decode):
                    try:
                        yield decode(whole)
                    except (binascii.Error, ValueError):
                        pass
    for run in ESCAPES.findall(text):
        for cut in range(4):  # a message cut short may end inside an escape
            try:
                yield run[:len(run) - cut].encode("latin-1", "replace").decode("unicode_escape").encode("latin-1")
                break
            except (UnicodeError, ValueError):
                continue
    for run in NUMBERS.findall(text):
        values = [int(v) for v in re.findall(r"\d+", run)]
        if all(v < 256 for v in values):
            yield bytes(values)


def leak(text: str, secrets: Secrets) -> str:
    """What of the reference `text` holds ("" for nothing): "source", "bytecode", "disassembly" or "names"."""
    if not text:
        return ""
    plain = _normal(text)
    unescaped = _normal(text.replace("\\n", "\n").replace("\\t", "\t").replace("\\'", "'").replace('\\"', '"'))
    if any(line in plain or line in unescaped for line in secrets.lines):
        return "source"
    if any(s in text or s in unescaped for s in secrets.strings):
        return "names"
    if len(set(WORD.findall(text)) & OPNAMES) >= 2:
        return "disassembly"
    if set(QUOTED.findall(text)) & secrets.names:
        return "names"
    for data in _decoded(text):
        if any(data[i:i + GRAM] in secrets.grams for i in range(len(data) - GRAM + 1)):
            return "bytecode"
        decoded = _normal(data.decode("utf-8", "replace"))
        if any(line in decoded for line in secrets.lines):
            return "source"
    return ""


def scrub(text, secrets: Secrets):
    """`text`, or the notice that withholds it when it quotes the reference."""
    return WITHHELD if isinstance(text, str) and leak(text, secrets) else text


def scrub_result(result, secrets: Secrets):
    """Withhold, in place, every text of a grading.SubmissionResult that came from the sandbox and quotes the
    reference: the checks' messages, the review flags, the notebook's errors and the reason."""
    for item in result.items.values():
        for outcome in item.outcomes:
            outcome.message = scrub(outcome.message, secrets)
        item.review = [scrub(flag, secrets) for flag in item.review]
    for problem in result.problems:
        for key in ("message", "where"):
            if key in problem:
                problem[key] = scrub(problem[key], secrets)
    result.reason = scrub(result.reason, secrets)
    return result
