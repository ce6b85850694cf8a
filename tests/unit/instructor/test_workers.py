"""workers.Workers: a worker that dies, raises or overruns costs only the key it held."""
import multiprocessing
import os
import signal
import time

from autograder.instructor.workers import Workers

SPAWN = multiprocessing.get_context("spawn")


def job(key: str):
    """What each test key does in its worker."""
    if key.startswith("die"):
        os.kill(os.getpid(), signal.SIGKILL)
    if key.startswith("raise"):
        raise ValueError(f"bad {key}")
    if key.startswith("hang"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        while True:
            time.sleep(1)
    return key.upper(), os.getpid()


def run_all(keys, count=2, deadline=60.0) -> dict:
    pool = Workers(job, count, deadline, SPAWN)
    for key in keys:
        pool.submit(key, (key,))
    try:
        return {o.key: o for o in pool.outcomes()}
    finally:
        pool.close()


def test_each_key_gets_its_own_outcome_and_only_its_own():
    keys = ["a", "die", "b", "raise", "c", "d"]
    got = run_all(keys)
    assert set(got) == set(keys)
    for key in ("a", "b", "c", "d"):
        assert got[key].error == "" and got[key].value[0] == key.upper()
    assert got["die"].error == "died" and got["die"].detail == "killed by SIGKILL"
    assert got["raise"].error == "raised" and got["raise"].detail == "ValueError: bad raise"


def test_workers_are_reused_across_keys():
    got = run_all([f"k{i}" for i in range(6)], count=2)
    assert len({o.value[1] for o in got.values()}) <= 2  # six keys, two long-lived processes


def test_a_key_past_its_deadline_is_killed_and_the_rest_go_on():
    got = run_all(["hang", "a", "b", "c"], count=2, deadline=3)
    assert got["hang"].error == "deadline" and "3 s" in got["hang"].detail
    assert all(got[k].error == "" for k in "abc")


def test_a_key_submitted_while_running_is_run_too():
    pool = Workers(job, 1, 60, SPAWN)
    pool.submit("die", ("die",))
    seen = []
    try:
        for outcome in pool.outcomes():
            seen.append((outcome.key, outcome.error))
            if outcome.key == "die":
                pool.submit("again", ("again",))
    finally:
        pool.close()
    assert seen == [("die", "died"), ("again", "")]


WARMED = {}  # in a worker: what its warm-up did


def warm(mark: str):
    WARMED["mark"] = mark


def warmed(key: str):
    return WARMED.get("mark"), os.getpid()


def failing_warm():
    raise RuntimeError("no sandbox here")


def test_workers_started_early_are_warmed_once_before_their_first_key():
    pool = Workers(warmed, 2, 60.0, SPAWN, warm=(warm, ("warm",)))
    try:
        pool.start(5)  # never more than the pool's size
        assert len(pool.workers) == 2
        for key in "abcd":
            pool.submit(key, (key,))
        got = {o.key: o for o in pool.outcomes()}
    finally:
        pool.close()
    assert all(o.error == "" and o.value[0] == "warm" for o in got.values())
    assert len({o.value[1] for o in got.values()}) <= 2  # the two warmed workers served every key


def test_a_warm_up_that_fails_leaves_the_worker_serving():
    pool = Workers(job, 1, 60.0, SPAWN, warm=(failing_warm, ()))
    pool.submit("a", ("a",))
    try:
        [outcome] = list(pool.outcomes())
    finally:
        pool.close()
    assert outcome.error == "" and outcome.value[0] == "A"
