"""The grader's own memory on answers built to blow it up (tests/submissions/hostile_decoding.py), and on
notebooks built to blow up their parsing (`STRUCTURE_HOSTILE`).

Each submission is graded in a fresh Python process, as `grade` grades one student: the reference
loaded, then grade_notebook on every item. Its peak resident memory (ru_maxrss of that process; the
sandbox's processes are not counted) must stay within RATIO of the same process's on the reference
submission. The processes are independent and each measures only itself, so `graded_alone` runs them as
many at a time as the corpus grades at once (tests/corpus.JOBS, one per core).
Run as a script, it prints the figures: python -m tests.integration.test_grader_memory [NAME ...]
"""
import concurrent.futures as futures
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.corpus import JOBS
from tests.submissions import names
from tests.submissions.hostile_decoding import HOSTILE_DECODING

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]
RATIO = 1.5

GRADE_ONE = '''
import json, resource, sys, time
from autograder.grading import grade_notebook
from autograder.instructor.reference import reference
from autograder.limits import Limits
from tests.submissions import VARIANTS, make_submission

name = sys.argv[1]
backend, nb = reference(), make_submission(name)
started = time.monotonic()
result = grade_notebook(nb, limits=Limits.for_timeout(**VARIANTS[name].limits), reference=backend)
print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "seconds": round(time.monotonic() - started, 1), "status": result.status,
                  "scores": {i: r.score for i, r in result.items.items()}}))
'''


# staged, then read as nbgrader's Autograde reads the staged copy: with nbgrader and nbconvert imported, as in
# the grading process
STAGE_ONE = '''
import json, resource, sys
from pathlib import Path
from autograder.instructor import pipeline  # noqa: F401
from autograder.instructor.staging import stage, staged_notebook
import nbformat
submitted, staging = Path(sys.argv[1]), Path(sys.argv[2])
found = stage("s", submitted, staging)
if staged_notebook(staging, "s").exists():
    nbformat.read(str(staged_notebook(staging, "s")), as_version=4)
try:  # this process's own high-water mark: ru_maxrss starts at the forking parent's (Linux keeps it across exec)
    peak = int(next(ln for ln in open("/proc/self/status") if ln.startswith("VmHWM:")).split()[1])
except OSError:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_kib": peak, "problem": found.problem}))
'''


def one_cell(source) -> bytes:
    """The reference notebook with its first code cell's source replaced, saved as Jupyter saves it."""
    nb = json.loads((ROOT / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    next(c for c in nb["cells"] if c["cell_type"] == "code")["source"] = source
    return json.dumps(nb, indent=1).encode()


# notebooks whose parsing would cost the grader far more than their bytes: (name, bytes, the bound named)
STRUCTURE_HOSTILE = {
    "two_million_strings": (lambda: one_cell(["x"] * 2_100_000), "strings in one list"),  # 18 MiB: 1.69 GiB before
    "million_lines": (lambda: one_cell("x\n" * 1_000_000), "lines of code and output"),
    "deep_nesting": (lambda: one_cell("").replace(b'"metadata": {', b'"metadata": {"x": ' + b"[" * 10_000
                                                  + b"]" * 10_000 + b", ", 1), "levels of nested lists"),
}


def with_text(text: str, where: str = "outputs") -> bytes:
    """The reference notebook with `text` as its first code cell's one output string, or as its source."""
    nb = json.loads((ROOT / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    if where == "outputs":
        cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": text}]
    else:
        cell["source"] = text
    return json.dumps(nb, indent=1, ensure_ascii=False).encode()


def many_keys(count: int) -> bytes:
    nb = json.loads((ROOT / "solutions" / "lesson20" / "lesson20.ipynb").read_text())
    nb["cells"][0]["metadata"] = {f"k{i}": 0 for i in range(count)}
    return json.dumps(nb, indent=1).encode()


ASTRAL = "\U0001F600"  # 4 bytes a character in every string that holds one, once parsed
# notebooks up to nbgrader's size limit (max_file_size: 100,000 KiB) whose reading costs more than their bytes:
# (name, the notebook, "" if it is graded or the words of the bound that refuses it)
SIZE_HOSTILE = {
    "astral_output_96_mib": (lambda: with_text("x" * (96 * 2**20) + ASTRAL), ""),  # 0.77 GiB before: 5.1x
    "astral_source_4_mib": (lambda: with_text("x" * (4 * 2**20) + ASTRAL, "source"), ""),
    "astral_source_19_mib": (lambda: with_text("x" * (19 * 2**20) + ASTRAL, "source"), "without its outputs"),
    "wide_source_7_mib": (lambda: with_text("x" * (7 * 2**20) + "\u0394", "source"), ""),
    "keys_130_thousand": (lambda: many_keys(130_000), ""),
    "keys_300_thousand": (lambda: many_keys(300_000), "without its outputs"),
}


def stage_alone(tmp: Path, data: bytes) -> dict:
    """Stage a notebook in a fresh process and read the staged copy: that process's peak memory and the problem."""
    folder = tmp / "submitted" / "s" / "lesson20"
    folder.mkdir(parents=True)
    (folder / "lesson20.ipynb").write_bytes(data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", STAGE_ONE, str(tmp / "submitted"), str(tmp / "staging")], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(STRUCTURE_HOSTILE))
def test_a_notebook_built_to_blow_up_parsing_is_refused_in_little_memory(tmp_path, name):
    make, bound = STRUCTURE_HOSTILE[name]
    correct = stage_alone(tmp_path / "correct", one_cell("x = 1\n"))
    got = stage_alone(tmp_path / "hostile", make())
    assert correct["problem"] == "" and bound in got["problem"], got["problem"]
    ratio = got["peak_kib"] / correct["peak_kib"]
    print(f"{name}: peak {got['peak_kib'] / 1024:.0f} MiB, {ratio:.2f} x a correct notebook's "
          f"({correct['peak_kib'] / 1024:.0f} MiB)")
    assert ratio <= RATIO, (f"{name}: staging and reading it took {got['peak_kib'] / 1024:.0f} MiB, {ratio:.2f} "
                            f"times a correct notebook's {correct['peak_kib'] / 1024:.0f} MiB (at most {RATIO})")


@pytest.mark.parametrize("name", sorted(SIZE_HOSTILE))
def test_staging_costs_at_most_1_5_times_a_correct_notebooks_memory_at_any_size(tmp_path, name):
    """Issue 44, point 6: a 96 MiB output string of astral characters took staging to 0.77 GiB against 0.15 GiB."""
    make, refused = SIZE_HOSTILE[name]
    data = make()
    assert len(data) <= 100_000 * 1024  # within nbgrader's own size limit
    correct = stage_alone(tmp_path / "correct", one_cell("x = 1\n"))
    got = stage_alone(tmp_path / "hostile", data)
    assert (refused in got["problem"]) if refused else got["problem"] == "", got["problem"]
    ratio = got["peak_kib"] / correct["peak_kib"]
    print(f"{name} ({len(data) / 2**20:.0f} MiB): peak {got['peak_kib'] / 1024:.0f} MiB, {ratio:.2f} x a correct "
          f"notebook's ({correct['peak_kib'] / 1024:.0f} MiB)")
    assert ratio <= RATIO, (f"{name}: staging and reading it took {got['peak_kib'] / 1024:.0f} MiB, {ratio:.2f} "
                            f"times a correct notebook's {correct['peak_kib'] / 1024:.0f} MiB (at most {RATIO})")


def grade_alone(name: str, timeout: float = 600) -> dict:
    """Grade variant `name` in a fresh process: its peak memory (KiB), seconds, status and scores."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", GRADE_ONE, name], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"grading {name} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def graded_alone() -> dict:
    """name -> grade_alone(name) for the reference and every HOSTILE_DECODING variant, JOBS processes at a
    time (each process's own peak is what is measured, so they need not wait for one another)."""
    wanted = ["reference", *[v.name for v in HOSTILE_DECODING]]
    with futures.ThreadPoolExecutor(max_workers=JOBS) as pool:
        return dict(zip(wanted, pool.map(grade_alone, wanted)))


@pytest.mark.parametrize("name", [v.name for v in HOSTILE_DECODING])
def test_a_hostile_answer_costs_the_grader_little_memory(graded_alone, name):
    got, reference_peak = graded_alone[name], graded_alone["reference"]["peak_kib"]
    ratio = got["peak_kib"] / reference_peak
    print(f"{name}: peak {got['peak_kib'] / 2**20:.2f} GiB, {ratio:.2f} x the reference's "
          f"({reference_peak / 2**20:.2f} GiB), {got['seconds']} s")
    assert ratio <= RATIO, (f"{name}: the grader's peak memory was {got['peak_kib'] / 2**20:.2f} GiB, {ratio:.2f} "
                            f"times its {reference_peak / 2**20:.2f} GiB on the reference (at most {RATIO})")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["reference", *[v.name for v in HOSTILE_DECODING]]:
        assert name in names(), name
        print(name, json.dumps(grade_alone(name)), flush=True)
