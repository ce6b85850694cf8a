"""A PostgreSQL gradebook graded by two `grade` shards at the same time, as two machines would.

The fixture starts a real PostgreSQL server (initdb in a temporary folder, loopback only, a free
port) and stops it at the end. The tests are skipped only where no PostgreSQL server is installed.
"""
import hashlib
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from glob import glob
from pathlib import Path

import pytest

from autograder.instructor.staging import select_students
from autograder.instructor.gradebook import normalise_db_url
from autograder.items import ASSIGNMENT, AUTO_ITEMS, ITEMS
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB
from tests.integration.test_grade_cli import FULL, counts, grade_command

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def _server_binaries():
    found = shutil.which("pg_ctl")
    if found and shutil.which("initdb"):
        return Path(found).resolve().parent
    versions = sorted(glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return Path(versions[-1]).parent if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    """postgresql://… of an empty database on a server that lives as long as this module's tests."""
    pytest.importorskip("psycopg2", reason="psycopg2 is needed for a PostgreSQL gradebook: pip install psycopg2-binary")
    bindir = _server_binaries()
    if bindir is None:
        pytest.skip("no PostgreSQL server is installed (initdb and pg_ctl not found): "
                    "apt-get install postgresql to run the PostgreSQL gradebook tests")
    as_user = []
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            account = pwd.getpwnam("nobody")
        as_user = ["setpriv", f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}", "--clear-groups"]
    base = Path(tempfile.mkdtemp(prefix="lesson20-pg-"))
    if as_user:
        os.chown(base, account.pw_uid, account.pw_gid)
    data, port = base / "data", _free_port()
    env = {**os.environ, "LC_ALL": "C", "LANG": "C"}
    run = lambda *cmd: subprocess.run(as_user + [str(bindir / cmd[0]), *cmd[1:]], env=env, cwd=base,  # noqa: E731
                                      capture_output=True, text=True, timeout=120)
    done = run("initdb", "-D", str(data), "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
    assert done.returncode == 0, done.stdout + done.stderr
    options = f"-c listen_addresses=127.0.0.1 -p {port} -k {base} -c fsync=off -c max_connections=100"
    done = run("pg_ctl", "-D", str(data), "-o", options, "-l", str(base / "server.log"), "-w", "-t", "60", "start")
    assert done.returncode == 0, done.stdout + done.stderr + (base / "server.log").read_text()
    try:
        import psycopg2
        conn = psycopg2.connect(host="127.0.0.1", port=port, user="postgres", dbname="postgres")
        conn.autocommit = True
        conn.cursor().execute("CREATE DATABASE gradebook")
        conn.close()
        yield f"postgresql://postgres@127.0.0.1:{port}/gradebook"
    finally:
        run("pg_ctl", "-D", str(data), "-m", "fast", "-w", "stop")
        shutil.rmtree(base, ignore_errors=True)


def _class(folder: Path) -> dict:
    """Shard 1 of 2 gets the reference and an unreadable notebook, shard 2 the stub and another."""
    wanted = {1: ["broken", "ref"], 2: ["broken", "stub"]}
    chosen, probe = {}, folder / "probe"
    for n in range(200):
        name = f"s{n:03d}"
        (probe / name).mkdir(parents=True)
        shard = 1 if select_students(probe, [name], (1, 2)) else 2
        if wanted[shard]:
            chosen[name] = wanted[shard].pop()
        if not any(wanted.values()):
            break
    shutil.rmtree(probe)
    for name, kind in chosen.items():
        path = folder / name / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        path.parent.mkdir(parents=True)
        if kind == "broken":
            path.write_text('{"cells": [')
        else:
            shutil.copyfile(SOLUTION_NB if kind == "ref" else STUDENT_NB, path)
    return chosen


def _shards_at_once(submitted, outs, db_url) -> list:
    procs = [subprocess.Popen(grade_command(submitted, out, "--db-url", db_url, "--jobs", "1",
                                            "--shard", f"{i}/2"), cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
             for i, out in enumerate(outs, 1)]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    for p, text in zip(procs, outputs):
        assert p.returncode == 0, text
    return outputs


def _dump(db_url) -> dict:
    """Every row of every gradebook table, to compare two states of the database."""
    from sqlalchemy import create_engine, inspect, text
    engine = create_engine(normalise_db_url(db_url))
    try:
        with engine.connect() as conn:
            return {table: sorted(map(repr, conn.execute(text(f'SELECT * FROM "{table}"')).all()))
                    for table in inspect(engine).get_table_names()}
    finally:
        engine.dispose()


def test_two_shards_at_once_fill_one_postgres_gradebook(postgres_url, tmp_path):
    from nbgrader.api import Gradebook
    submitted = tmp_path / "submitted"
    kinds = _class(submitted)
    outs = [tmp_path / "shard1", tmp_path / "shard2"]
    started = time.monotonic()
    outputs = _shards_at_once(submitted, outs, postgres_url)  # a fresh database: both race to set it up
    elapsed = time.monotonic() - started

    shard_students = [select_students(submitted, shard=(i, 2)) for i in (1, 2)]
    assert not set(shard_students[0]) & set(shard_students[1])
    for out, students, output in zip(outs, shard_students, outputs):
        assert counts(output) == (len(students), 0)
        assert sorted(json.loads((out / "grades.json").read_text())["students"]) == students

    rows = {s: r for out in outs for s, r in json.loads((out / "grades.json").read_text())["students"].items()}
    with Gradebook(normalise_db_url(postgres_url), course_id="lesson20") as gb:
        assert [a.name for a in gb.assignments] == [ASSIGNMENT]
        assert [n.name for n in gb.find_assignment(ASSIGNMENT).notebooks] == [ASSIGNMENT]
        assert sorted(s.id for s in gb.students) == sorted(kinds)
        for student, kind in kinds.items():
            notebook = gb.find_submission_notebook(ASSIGNMENT, ASSIGNMENT, student)  # exactly one, or it raises
            grades = {g.name: g for g in notebook.grades}
            assert sorted(grades) == sorted(i.id for i in ITEMS), f"{student}: one grade per cell, no duplicates"
            for item in AUTO_ITEMS:
                expected = float(item.points) if kind == "ref" else 0.0
                assert grades[item.id].score == expected, (student, item.id, kind, rows[student])
    tables = _dump(postgres_url)
    assert len(tables["submitted_assignment"]) == len(kinds)
    assert len(tables["submitted_notebook"]) == len(kinds)
    assert len(tables["grade"]) == len(kinds) * len(ITEMS)

    # again, both at once: nothing is graded twice and nothing changes
    files = {out: {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}
             for out in outs}
    again = _shards_at_once(submitted, outs, postgres_url)
    for out, students, output in zip(outs, shard_students, again):
        assert counts(output) == (0, len(students))
        assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()} \
            == files[out]
    assert _dump(postgres_url) == tables

    # one grades.json for the whole class, from the shards' output folders
    merged = tmp_path / "all"
    done = subprocess.run([sys.executable, "-m", "autograder", "export", "--out", str(merged), "--db-url",
                           postgres_url, "--from", *map(str, outs)], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = json.loads((merged / "grades.json").read_text())
    assert {s: row["total"] for s, row in doc["students"].items()} == {
        s: FULL if kind == "ref" else 0.0 for s, kind in kinds.items()}
    assert sorted(row["status"] for row in doc["students"].values()) == ["failed", "failed", "graded", "graded"]
    print(f"two shards graded {len(kinds)} students in {elapsed:.1f} s")
