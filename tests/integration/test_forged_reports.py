"""Forging earns nothing: graded through the sandbox with the guard switched off (session.AUDIT_HOOK_OFF) and every
report of every answer rewritten to the reference's (backends.FORGE_REPORTS), as code that can write every byte
of the sandbox could.

* the corpus's forging attacks (tests/submissions/hostile_forging.py, and the guard corpus's and red team's that
  fake what a probe observes) earn no more than their honest twins graded as usual;
* the mistakes whose points once rested on a report (aliasing, in place, leaves, a generator, dtypes, batch
  sizes, scaler calls, a returned type, the exception) keep every point they lose without the hook, and only
  the small shares checks/answers.py names may rise.

tests/test_reports.py holds the same for the whole buggy corpus, graded in this process.
"""
import concurrent.futures as futures
import multiprocessing
import os

import pytest

from autograder.backends import FORGE_REPORTS
from autograder.checks.answers import SMALL_SHARES
from autograder.sandbox import have_bwrap
from autograder.sandbox.session import AUDIT_HOOK_OFF
from tests.corpus import JOBS, grade_variant
from tests.submissions import VARIANTS, full_marks

pytestmark = [pytest.mark.slow, pytest.mark.skipif(not have_bwrap(), reason="bubblewrap is not installed")]

ATTACKS = ["forging_unscale_out_of_place", "forging_aliased_masters", "forging_batch_sizes", "hostile_frames_to_probe",
           "hostile_hooks_by_hand", "hostile_globals_of_a_prop", "hostile_patch_tensor_attributes",
           "redteam_bypasses_batch_recorder"]
# the mistakes whose points a report once decided, one or more per behaviour that was left to the guard
ONCE_REPORTED = ["static_not_in_place", "master_float_aliases", "master_no_requires_grad", "master_not_detached",
                 "master_returns_generator", "master_copy_back_replaces_data", "master_grads_alias_fp32",
                 "accumulate_full_batch_forward", "step_no_update", "step_update_twice", "step_update_only_when_stepping",
                 "token_empty_batch_returns_nan", "underflow_returns_tensor", "accumulate_returns_tensor",
                 "accumulate_one_backward_of_summed_losses"]  # its guide forged, the measured memory decides


def forging(on: bool):
    """A grading process's environment: the guard off and every report forged, or as usual."""
    for name in (AUDIT_HOOK_OFF, FORGE_REPORTS):
        if on:
            os.environ[name] = "1"
        else:
            os.environ.pop(name, None)


def graded(names: list, on: bool) -> dict:
    pool = futures.ProcessPoolExecutor(max_workers=JOBS, mp_context=multiprocessing.get_context("spawn"),
                                       initializer=forging, initargs=(on,))
    with pool:
        return dict(zip(names, pool.map(grade_variant, names)))


@pytest.fixture(scope="module")
def results(graded_corpus):
    """The forged gradings, and the twins' as the corpus graded them (as usual: the guard on, no report forged)."""
    twins = sorted({VARIANTS[a].twin for a in ATTACKS} | set(ONCE_REPORTED))
    return {"forged": graded(ATTACKS + ONCE_REPORTED, on=True),
            "plain": {name: graded_corpus["graded"][name] for name in twins}}


@pytest.mark.parametrize("name", ATTACKS)
def test_a_forging_attack_earns_no_more_than_its_twin(results, name):
    got, twin = results["forged"][name], results["plain"][VARIANTS[name].twin]
    more = {item: (score, twin.scores[item]) for item, score in got.scores.items() if score > twin.scores[item] + 1e-9}
    assert got.status == "graded" and not more, (
        f"{name} ({VARIANTS[name].doc}), guard off and every report forged: {got.status}, items scoring more than "
        f"its twin {VARIANTS[name].twin}: {more}")


@pytest.mark.parametrize("name", ONCE_REPORTED)
def test_a_mistake_once_decided_by_a_report_still_loses_its_points(results, name):
    variant, got, plain = VARIANTS[name], results["forged"][name], results["plain"][name]
    assert got.scores[variant.item] < full_marks()[variant.item], (
        f"{name} ({variant.doc}) keeps full marks on {variant.item} with every report forged")
    rose = {item: (plain.scores[item], score) for item, score in got.scores.items()
            if score > plain.scores[item] + 1e-9 and not any(i == item for i, _ in SMALL_SHARES)}
    assert not rose, f"{name}: items that score more with every report forged (without -> with): {rose}"
