"""The grader's own memory on answers built to blow it up (tests/submissions/hostile_decoding.py).

Each submission is graded in a fresh Python process, as `grade` grades one student: the reference
loaded, then grade_notebook on every item. Its peak resident memory (ru_maxrss of that process; the
sandbox's processes are not counted) must stay within RATIO of the same process's on the reference
submission. Run as a script, it prints the figures: python -m tests.test_grader_memory [NAME ...]
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.submissions import names
from tests.submissions.hostile_decoding import HOSTILE_DECODING

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
RATIO = 1.5

GRADE_ONE = '''
import json, resource, sys, time
from autograder.grading import grade_notebook
from autograder.instructor.reference import reference
from autograder.sandbox import Limits
from tests.submissions import VARIANTS, make_submission

name = sys.argv[1]
backend, nb = reference(), make_submission(name)
started = time.monotonic()
result = grade_notebook(nb, limits=Limits.for_timeout(**VARIANTS[name].limits), reference=backend)
print(json.dumps({"peak_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "seconds": round(time.monotonic() - started, 1), "status": result.status,
                  "scores": {i: r.score for i, r in result.items.items()}}))
'''


def grade_alone(name: str, timeout: float = 600) -> dict:
    """Grade variant `name` in a fresh process: its peak memory (KiB), seconds, status and scores."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", GRADE_ONE, name], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)
    assert done.returncode == 0, f"grading {name} failed:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def reference_peak():
    return grade_alone("reference")["peak_kib"]


@pytest.mark.parametrize("name", [v.name for v in HOSTILE_DECODING])
def test_a_hostile_answer_costs_the_grader_little_memory(reference_peak, name):
    got = grade_alone(name)
    ratio = got["peak_kib"] / reference_peak
    print(f"{name}: peak {got['peak_kib'] / 2**20:.2f} GiB, {ratio:.2f} x the reference's "
          f"({reference_peak / 2**20:.2f} GiB), {got['seconds']} s")
    assert ratio <= RATIO, (f"{name}: the grader's peak memory was {got['peak_kib'] / 2**20:.2f} GiB, {ratio:.2f} "
                            f"times its {reference_peak / 2**20:.2f} GiB on the reference (at most {RATIO})")


if __name__ == "__main__":
    for name in sys.argv[1:] or ["reference", *[v.name for v in HOSTILE_DECODING]]:
        assert name in names(), name
        print(name, json.dumps(grade_alone(name)), flush=True)
