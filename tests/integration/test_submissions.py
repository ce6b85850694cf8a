"""Grade the whole corpus of submissions (tests/submissions) and hold each to what its kind promises.

The reference scores full marks and the untouched student notebook 0; every buggy variant loses
points on the item it breaks, and only there (each item is graded with the reference's code standing in
for the other exercises' code); every correct
alternative keeps full marks; every hostile one is contained: no more than its honest code earns,
no file written outside, no connection made, no process or cgroup left, in bounded time.

The corpus is graded once for the run (tests/corpus.py), by one grading process per core, as `python -m
autograder grade --jobs N` would: each process keeps one sandbox and reuses it for submission after
submission, so a submission that leaves something behind would hurt the next one here.
"""
import time
from pathlib import Path

import pytest

from tests.corpus import JOBS, processes_of, what_it_left
from tests.submissions import VARIANTS, judge, names
from tests.submissions.hostile import NETWORK_PORT, OUTSIDE_PATHS
from tests.submissions.unseen import names_cause

pytestmark = pytest.mark.slow


def scores_of(graded_corpus, name):
    g = graded_corpus["graded"][name]
    return g.status, g.scores


def problems(graded_corpus, name):
    g = graded_corpus["graded"][name]
    twin = graded_corpus["graded"][VARIANTS[name].twin].scores if VARIANTS[name].twin else None
    found = judge(name, g.status, g.scores, twin, g.review)
    found += what_it_left(g)
    return found


def detail(graded_corpus, name) -> str:
    g = graded_corpus["graded"][name]
    lines = [f"{name}: {VARIANTS[name].doc}", f"status {g.status} ({g.reason[:300]}), {g.seconds:.1f} s",
             f"scores {g.scores}"]
    for item, failed in g.messages.items():
        lines += [f"  {item} FAIL {title}: {message[:300]}" for title, message in failed[:4]]
    return "\n".join(lines)


def test_reference_scores_full_marks(graded_corpus):
    assert not problems(graded_corpus, "reference"), detail(graded_corpus, "reference")


def test_untouched_student_notebook_scores_zero(graded_corpus):
    assert not problems(graded_corpus, "stub"), detail(graded_corpus, "stub")


@pytest.mark.parametrize("name", names("buggy"))
def test_buggy_submission_loses_points_on_its_item_only(graded_corpus, name):
    found = problems(graded_corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(graded_corpus, name)


@pytest.mark.parametrize("name", names("alternative"))
def test_correct_alternative_keeps_full_marks(graded_corpus, name):
    found = problems(graded_corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(graded_corpus, name)


@pytest.mark.parametrize("name", names("hostile"))
def test_hostile_submission_is_contained(graded_corpus, name):
    found = problems(graded_corpus, name)
    assert not found, "; ".join(found) + "\n" + detail(graded_corpus, name)


def test_buggy_submissions_are_told_why(graded_corpus):
    """Every failed check of a broken item says something, and no check broke on the student's data."""
    for name in names("buggy"):
        g = graded_corpus["graded"][name]
        failed = g.messages[VARIANTS[name].item]
        assert failed and all(message.strip() for _, message in failed), detail(graded_corpus, name)
    for name, g in graded_corpus["graded"].items():
        for item, failed in g.messages.items():
            for title, message in failed:
                assert "internal error in the check" not in message, f"{name}, {item}, {title}: {message}"


def test_first_failing_message_names_the_cause(graded_corpus):
    """The first failing message of a broken item names the mistake, as the student would recognise it."""
    unnamed = [n for n in names("buggy") if not VARIANTS[n].cause.strip()]
    assert not unnamed, f"buggy variants without a cause: {unnamed}"
    vague = []
    for name in names("buggy"):
        variant = VARIANTS[name]
        failed = graded_corpus["graded"][name].messages[variant.item]
        first = failed[0][1] if failed else ""
        if not names_cause(variant, first):
            vague.append(f"{name} (cause {variant.cause!r}, or {list(variant.synonyms)}): {first}")
    assert not vague, f"{len(vague)} first failing messages do not name the cause:\n" + "\n".join(vague)


def test_every_submission_is_graded_in_bounded_time(graded_corpus):
    from autograder.limits import Limits
    for name, g in graded_corpus["graded"].items():
        limits = Limits.for_timeout(**VARIANTS[name].limits)
        # docs/grading-design.md's worst case per submission: 3 x timeout for the notebook's runs, 3 x timeout for all
        # the checks, and a minute for starting sandboxes (the per-student deadline of `grade`)
        bound = limits.student_seconds
        assert g.seconds < bound, f"{name} took {g.seconds:.0f} s (bound {bound} s)"


def test_nothing_is_left_running_or_mounted(graded_corpus):
    """Once the grading processes are gone, so is every process and cgroup their sandboxes had."""
    from autograder.sandbox import sandbox_uid
    deadline = time.monotonic() + 10
    left = {}
    while time.monotonic() < deadline:
        left = {w: processes_of(sandbox_uid(w)) for w in graded_corpus["workers"] if sandbox_uid(w) is not None}
        left = {w: p for w, p in left.items() if p}
        if not left:
            break
        time.sleep(0.2)
    assert not left, f"processes of the sandboxes' uids still running: {left}"
    stale = [d for root in ("/sys/fs/cgroup", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup/cpu")
             for w in graded_corpus["workers"] for d in Path(root).glob(f"lesson20-{w}-*")]
    assert not stale, f"cgroups left behind: {stale}"


def test_no_file_is_written_outside_the_sandbox(graded_corpus):
    written = [p for p in OUTSIDE_PATHS if Path(p).exists()]
    assert not written, f"a submission wrote {written}"


def test_no_connection_reaches_the_grading_machine(graded_corpus):
    listener = graded_corpus["listener"]
    if not listener.listening:
        pytest.skip(f"port {NETWORK_PORT} is taken on this machine")
    assert listener.connections == [], f"a submission connected from {listener.connections}"


def test_corpus_size_and_time(graded_corpus, record_property):
    counts = {kind: len(names(kind)) for kind in ("buggy", "alternative", "hostile")}
    assert counts["buggy"] >= 30 and counts["alternative"] >= 8 and counts["hostile"] >= 10, counts
    record_property("corpus_seconds", round(graded_corpus["seconds"], 1))
    print(f"graded {len(graded_corpus['graded'])} submissions in {graded_corpus['seconds']:.0f} s with {JOBS} processes")
