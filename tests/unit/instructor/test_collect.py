"""autograder.instructor.collect: each folder of the exchange's inbound/ is checked for who owns it, when it last
changed and what it holds; only a student's own genuine submission is collected, without following a link, and
the rest is set aside with a reason. The folders are made here by root and given to the machine's system
accounts (daemon, bin) as owners, standing in for students."""
import json
import os
import pwd
import shutil
import time

import pytest

from autograder.instructor.arrival import MANIFEST
from autograder.instructor.collect import collect
from autograder.instructor.staging import submission_fingerprint

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: gives folders to other accounts")
ALICE, BOB = "daemon", "bin"  # two accounts every Debian has
STAMP = "2026-12-10 05:10:00.000000 UTC"


def uid(name):
    return pwd.getpwnam(name).pw_uid


def submit(inbound, owner, claimed=None, stamp=STAMP, nonce="x1", notebook=b'{"cells": []}', secret=True):
    folder = inbound / f"{claimed or owner}+lesson20+{stamp}+{nonce}"
    folder.mkdir()
    (folder / "lesson20.ipynb").write_bytes(notebook)
    (folder / "timestamp.txt").write_text(stamp)
    if secret:
        (folder / "submission_secret.txt").write_text("s" * 128)
    for path in [folder, *folder.iterdir()]:
        os.chown(path, uid(owner), -1, follow_symlinks=False)
    return folder


@pytest.fixture
def exchange(tmp_path):
    inbound = tmp_path / "exchange" / "lesson20" / "inbound"
    inbound.mkdir(parents=True)
    return tmp_path / "exchange", inbound, tmp_path / "submitted"


def test_a_genuine_submission_is_collected_with_the_exchanges_time(exchange):
    root, inbound, submitted = exchange
    submit(inbound, ALICE, notebook=b'{"alice": 1}')
    manifest = collect(root, "lesson20", submitted, say=lambda _: None)
    entry = manifest["students"][ALICE]
    assert (submitted / ALICE / "lesson20" / "lesson20.ipynb").read_bytes() == b'{"alice": 1}'
    assert entry["owner"] == ALICE and entry["claimed"] == "2026-12-10T05:10:00Z" and not entry["set_aside"]
    assert entry["fingerprint"] == submission_fingerprint(submitted / ALICE)
    assert json.loads((submitted / MANIFEST).read_text()) == manifest
    # the time that counts is the kernel's change time: now, whatever the name and timestamp.txt say
    assert abs(time.time() - _epoch(entry["time"])) < 120


def test_impersonation_is_set_aside_naming_both_accounts_and_the_victims_own_work_is_collected(exchange):
    root, inbound, submitted = exchange
    submit(inbound, BOB, nonce="own", notebook=b'{"bob": "own"}')
    submit(inbound, ALICE, claimed=BOB, stamp="2099-01-01 00:00:00.000000 UTC", nonce="forged",
           notebook=b'{"alice": "as bob"}')
    manifest = collect(root, "lesson20", submitted, say=lambda _: None)
    assert (submitted / BOB / "lesson20" / "lesson20.ipynb").read_bytes() == b'{"bob": "own"}'
    aside = manifest["students"][BOB]["set_aside"]
    assert len(aside) == 1 and ALICE in aside[0]["reason"] and BOB in aside[0]["reason"] and aside[0]["owner"] == ALICE
    assert ALICE not in manifest["students"]  # nothing is collected as alice's either


def test_a_victim_without_work_of_their_own_gets_an_empty_folder_and_the_reason(exchange):
    root, inbound, submitted = exchange
    submit(inbound, ALICE, claimed=BOB)
    manifest = collect(root, "lesson20", submitted, say=lambda _: None)
    assert (submitted / BOB).is_dir() and not (submitted / BOB / "lesson20").exists()
    assert manifest["students"][BOB]["set_aside"] and "inbound" not in manifest["students"][BOB]


@pytest.mark.parametrize("kind", ["symlink", "hardlink", "secret", "fifo", "foreign"])
def test_a_folder_holding_a_link_or_lacking_nbgraders_files_is_set_aside(exchange, tmp_path, kind):
    root, inbound, submitted = exchange
    submit(inbound, ALICE, nonce="older", notebook=b'{"older": 1}')
    time.sleep(0.05)
    target = tmp_path / "solutions.ipynb"
    target.write_text('{"the": "solution"}')
    folder = submit(inbound, ALICE, nonce="newer", notebook=b'{"newer": 1}', secret=kind != "secret")
    if kind == "symlink":
        (folder / "data.csv").symlink_to(target)
    elif kind == "hardlink":
        os.link(target, folder / "data.csv")
        os.chown(folder / "data.csv", uid(ALICE), -1)
    elif kind == "fifo":
        os.mkfifo(folder / "pipe")
        os.chown(folder / "pipe", uid(ALICE), -1)
    elif kind == "foreign":
        (folder / "helper.py").write_text("x = 1\n")
        os.chown(folder / "helper.py", uid(BOB), -1)
    manifest = collect(root, "lesson20", submitted, say=lambda _: None)
    got = submitted / ALICE / "lesson20"
    assert (got / "lesson20.ipynb").read_bytes() == b'{"older": 1}'  # the newer one was not taken
    assert not (got / "data.csv").exists()
    reason = manifest["students"][ALICE]["set_aside"][0]["reason"]
    assert {"symlink": "symbolic link", "hardlink": "hard link", "secret": "submission_secret.txt",
            "fifo": "neither a file nor a folder", "foreign": f"belongs to {BOB}"}[kind] in reason


def test_an_id_that_cannot_be_held_is_set_aside_for_the_class_and_stops_nobody(exchange):
    root, inbound, submitted = exchange
    submit(inbound, ALICE)
    long_id = "a" * 243
    folder = inbound / f"{long_id}+lesson20+1"
    folder.mkdir()
    os.chown(folder, uid(BOB), -1)
    (inbound / "not-nbgraders-name").mkdir()
    manifest = collect(root, "lesson20", submitted, say=lambda _: None)
    assert (submitted / ALICE / "lesson20" / "lesson20.ipynb").is_file()
    reasons = [e["reason"] for e in manifest["set_aside"]]
    assert len(reasons) == 2 and any("cannot be held" in r for r in reasons)
    assert not any(len(p.name) > 200 for p in submitted.iterdir())


def test_collecting_again_keeps_what_is_unchanged_and_takes_a_newer_submission(exchange):
    root, inbound, submitted = exchange
    submit(inbound, ALICE, nonce="first", notebook=b'{"v": 1}')
    first = collect(root, "lesson20", submitted, say=lambda _: None)["students"][ALICE]
    assert collect(root, "lesson20", submitted, say=lambda _: None)["students"][ALICE] == first
    time.sleep(1.1)
    submit(inbound, ALICE, nonce="second", notebook=b'{"v": 2}')
    second = collect(root, "lesson20", submitted, say=lambda _: None)["students"][ALICE]
    assert second["inbound"].endswith("second") and _epoch(second["time"]) > _epoch(first["time"])
    assert (submitted / ALICE / "lesson20" / "lesson20.ipynb").read_bytes() == b'{"v": 2}'
    shutil.rmtree(inbound)


def _epoch(text):
    from datetime import datetime
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
