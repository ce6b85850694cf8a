"""The commands the README and docs/ show exist and take the options shown.

Every command in a ```bash block or an inline code span is read as a shell would split it, and checked without
running it: `python -m autograder ...` is parsed by the CLI's own parser (autograder.__main__.build_parser), an
autograder fragment (`export --format canvas --roster ROSTER.csv`) has only options its subcommand takes,
`python -m <module>` names a module that imports (a benchmark's name is one `python -m benchmarks` knows),
`make <target>` a target of the Makefile, `nbgrader <subcommand>` one of nbgrader's, and `deploy/...` a script
of the repository that can be run.
"""
import contextlib
import importlib.util
import io
import os
import re
import shlex

import pytest

from autograder.__main__ import build_parser
from tests.helpers import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`]+)`")
SEPARATORS = {"&&", "||", ";", "|", "&", ">", ">>", "<", ">&", "2>&1"}
STARTS = re.compile(r"(^|\s)(\S*python3?\s+-m\s|make\s|nbgrader\s|deploy/|sh\s+-c\s)")


def _subparsers() -> dict:
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


SUBCOMMANDS = _subparsers()


def shown(text: str) -> list:
    """(line number, command text) for each command the markdown `text` shows: each line of a bash block
    (continuations joined), and each inline code span."""
    found = []
    for block in FENCE.finditer(text):
        if block.group(1) not in ("bash", "sh", "shell"):
            continue
        first = text.count("\n", 0, block.start(2)) + 1
        lines = block.group(2).split("\n")
        number, pending = first, ""
        for offset, line in enumerate(lines):
            if not pending:
                number = first + offset
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1] + " "
                continue
            if (pending + line).strip():
                found.append((number, pending + line))
            pending = ""
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for span in SPAN.finditer(prose):
        found.append((prose.count("\n", 0, span.start()) + 1, span.group(1).replace("\n", " ")))
    return found


def simple_commands(line: str) -> list:
    """The simple commands of one shell line: its words split at `&&`, `|`, `;`, redirections; comments left out.
    An arithmetic expansion, `$((I+1))`, stands for a number."""
    line = re.sub(r"\$\(\([^()]*\)\)", "1", line)
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    words, commands = [], []
    for word in lexer:
        if word in SEPARATORS or set(word) <= set("&|;<>"):
            commands.append(words)
            words = []
        else:
            words.append(word)
    commands.append(words)
    return [c for c in commands if c]


def makefile_targets() -> set:
    return {m.group(1) for m in re.finditer(r"^([A-Za-z][\w.-]*):", (ROOT / "Makefile").read_text(), re.M)}


def _argparse_error(parser, args: list) -> str:
    """What `parser` says when it refuses `args` ("" when it takes them)."""
    said = io.StringIO()
    with contextlib.redirect_stderr(said):
        try:
            parser.parse_args(args)
        except SystemExit as exit_:
            if exit_.code:
                return said.getvalue().strip().splitlines()[-1]
    return ""


def problems_of(words: list) -> list:
    """What is wrong with one simple command as the docs show it ([] when it exists and parses)."""
    while words and (re.match(r"^[A-Za-z_]\w*=", words[0]) or words[0] in ("sudo", "exec", "nice")):
        words = words[3:] if words[:2] == ["nice", "-n"] else words[1:]  # `nice -n 10 python -m ...`
    if not words:
        return []
    program = words[0]
    if program == "sh" and len(words) >= 3 and words[1] == "-c":
        return [p for command in simple_commands(words[2]) for p in problems_of(command)]
    if re.search(r"(^|/)python3?$", program) and len(words) >= 3 and words[1] == "-m":
        module, args = words[2], words[3:]
        if module == "autograder":
            if (len(args) == 1 or "..." in args) and args[0] in SUBCOMMANDS:  # named in prose, or elided:
                return _unknown_options(args)                                 # `python -m autograder grade ...`
            error = _argparse_error(build_parser(), args)
            return [f"python -m autograder refuses {shlex.join(args)!r}: {error}"] if error else []
        if module == "benchmarks":
            from benchmarks import BENCHMARKS
            unknown = [a for a in args if not a.startswith("-") and "=" not in a and a not in BENCHMARKS]
            return [f"python -m benchmarks has no benchmark {', '.join(unknown)}"] if unknown else []
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            return [f"python -m {module}: no module {module} here"]
        return []
    if program == "make":
        targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
        missing = [t for t in targets if t not in makefile_targets()]
        return [f"make: the Makefile has no target {', '.join(missing)}"] if missing else []
    if program == "nbgrader":
        from nbgrader.apps.nbgraderapp import NbGraderApp
        if len(words) < 2 or words[1] not in NbGraderApp.subcommands:
            return [f"nbgrader has no subcommand {words[1:2]}"]
        return []
    if program.startswith("deploy/"):
        missing = [w for w in words if w.startswith("deploy/") and not (ROOT / w).is_file()]
        if missing:
            return [f"{', '.join(missing)}: no such file in the repository"]
        return [] if os.access(ROOT / program, os.X_OK) else [f"{program} is not executable"]
    if program in SUBCOMMANDS and any(w.startswith("--") for w in words[1:]):  # a fragment: `release --check`
        return _unknown_options(words)
    return []


def _unknown_options(words: list) -> list:
    """An autograder subcommand and some of its options, as prose shows them: the options it does not take."""
    options = SUBCOMMANDS[words[0]]._option_string_actions
    unknown = [w.split("=")[0] for w in words[1:] if w.startswith("--") and w.split("=")[0] not in options]
    return [f"python -m autograder {words[0]} has no option {', '.join(unknown)}"] if unknown else []


def problems(text: str) -> list:
    """(line, command, what is wrong) for each command shown in `text` that would not run as shown."""
    found = []
    for number, line in shown(text):
        is_fragment = line.split()[0] in SUBCOMMANDS if line.split() else False
        if not (STARTS.search(line) or is_fragment):
            continue
        try:
            commands = simple_commands(line)
        except ValueError as error:  # unbalanced quotes: not shell, or shown wrong
            found.append((number, line, f"cannot be split as a shell would: {error}"))
            continue
        found += [(number, line, p) for command in commands for p in problems_of(command)]
    return found


@pytest.mark.parametrize("doc", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_every_command_the_docs_show_exists_and_parses(doc):
    wrong = problems(doc.read_text(encoding="utf-8"))
    assert not wrong, f"{doc.relative_to(ROOT)} shows commands that would not run as shown (fix the doc):\n" + \
        "\n".join(f"  line {n}: `{line.strip()}`: {why}" for n, line, why in wrong)


def test_the_docs_show_each_kind_of_command():
    """The reading finds what the docs show: without this, a parser that found nothing would pass."""
    text = "\n".join(p.read_text(encoding="utf-8") for p in DOCS)
    programs = {c[0].rsplit("/", 1)[-1] if c[0].startswith("deploy/") else c[0]
                for _, line in shown(text) if STARTS.search(line) for c in simple_commands(line)}
    shown_autograder = [line for _, line in shown(text) if re.search(r"python3?\s+-m\s+autograder\s", line)]
    assert {"make", "nbgrader", "submit"} <= programs and len(shown_autograder) >= 15, (programs, shown_autograder)


@pytest.mark.parametrize("text,why", [
    ("```bash\n.venv/bin/python -m autograder grade SUBMITTED --out OUT --bogus 2\n```", "unrecognized arguments: --bogus"),
    ("Run `python -m autograder grade SUBMITTED` then", "the following arguments are required: --out"),
    ("```bash\npython -m autograder export --out OUT \\\n    --format excel\n```", "invalid choice: 'excel'"),
    ("`python -m autograder regrade OUT`", "invalid choice: 'regrade'"),
    ("named in prose, `python -m autograder regrade`, a command", "invalid choice: 'regrade'"),
    ("`export --out OUT --per-student`", "export has no option --per-student"),
    ("`make lessons`", "the Makefile has no target lessons"),
    ("`nbgrader grade lesson20`", "nbgrader has no subcommand ['grade']"),
    ("`deploy/slurm/sumbit --array=1-8 deploy/slurm/grade.sbatch`", "deploy/slurm/sumbit: no such file"),
    ("`python -m benchmarks speed`", "python -m benchmarks has no benchmark speed"),
    ("`python -m no_such_module`", "no module no_such_module"),
    ("`nice -n 10 python -m autograder grade s --out o --jobs two`", "invalid int value: 'two'"),
    ("`python -m autograder grade --forced ...`", "grade has no option --forced"),
    ("`cd /srv && python -m autograder collect && python -m autograder grade submitted --out grading --jobs x`",
     "argument --jobs: invalid int value: 'x'"),
    ("`sh -c 'python -m autograder grade /data --out /o --shard $((J+1))/8 --quite'`", "unrecognized arguments: --quite"),
])
def test_a_wrong_command_is_named_with_why(text, why):
    found = problems(text)
    assert len(found) == 1 and why in found[0][2], found


def test_what_the_docs_may_show_passes():
    text = ("```bash\n# a comment\nexport DB=postgresql://x\n.venv/bin/python -m autograder grade /s --out /o \\\n"
            "    --db-url \"$DB\" --shard $I/$N --jobs 8 --quiet   # shard I of N\n```\n"
            "`make lesson LAB_ARGS=\"--no-browser\"`, `release --check`, `nbgrader fetch_feedback lesson20`, "
            "`python -m benchmarks memory -o key=value`, `python -m autograder export`,  `deploy/slurm/submit --array=1-8 deploy/slurm/grade.sbatch`")
    assert problems(text) == []
