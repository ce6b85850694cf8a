"""deploy/slurm/grade.sbatch, as shipped, on a one-node Slurm cluster started for the test.

The fixture starts munged, slurmctld and slurmd with a slurm.conf for this machine's cores
(`slurmd -C`), everything in a temporary folder, and stops them by their pid files at the end.
A class is graded by a 3-task array into PostgreSQL (tests/integration/test_postgres.py's server), one task
is cancelled part-way, and the array submitted again must grade only what that task left; the
exported grades must be those of one `grade` run on one machine into SQLite.
"""
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from autograder.instructor.staging import select_students
from autograder.items import ITEMS
from tests.helpers import ROOT
from tests.submissions import write_class
from tests.integration.test_grade_cli import counts, grade
from tests.integration import test_postgres
from tests.integration.test_postgres import _dump

pytestmark = [pytest.mark.slow, pytest.mark.postgres]  # postgres: the gradebook the tasks share
postgres_url = test_postgres.postgres_url  # the fixture: a PostgreSQL server for this module
SBATCH = ROOT / "deploy" / "slurm" / "grade.sbatch"
TASKS = 3
KILLED = 2  # the task cancelled part-way, once it has graded two of its three students
# students per shard, and what they hand in: mostly the stub, which grades fast
CLASS = {1: ["reference", "stub", "stub"],
         2: ["stub", "underflow_threshold", "stub"],
         3: ["stub", "static_int_scale", "reference"]}


def slurm_present() -> bool:
    return all(shutil.which(tool) for tool in ("munged", "slurmctld", "slurmd", "sbatch"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(base: Path) -> str:
    node = subprocess.run(["slurmd", "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    host = re.search(r"NodeName=(\S+)", node).group(1)
    return "\n".join([
        "ClusterName=lesson20test",
        f"SlurmctldHost={host}(127.0.0.1)",
        f"SlurmctldPort={_free_port()}", f"SlurmdPort={_free_port()}",
        "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={base / 'munge' / 'munge.socket'}",
        # no Slurm cgroups: the grader puts each sandbox in cgroups of its own
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "SelectType=select/cons_tres", "SelectTypeParameters=CR_Core",
        "SchedulerType=sched/builtin", "ReturnToService=2", "MpiDefault=none",
        "JobAcctGatherType=jobacct_gather/none", "AccountingStorageType=accounting_storage/none",
        f"StateSaveLocation={base / 'state'}", f"SlurmdSpoolDir={base / 'spool'}",
        f"SlurmctldPidFile={base / 'slurmctld.pid'}", f"SlurmdPidFile={base / 'slurmd.pid'}",
        f"SlurmctldLogFile={base / 'slurmctld.log'}", f"SlurmdLogFile={base / 'slurmd.log'}",
        f"{node} NodeAddr=127.0.0.1 State=UNKNOWN",
        "PartitionName=lesson20 Nodes=ALL Default=YES MaxTime=INFINITE State=UP", ""])


def _stop(pid_file: Path):
    try:
        pid = int(pid_file.read_text())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and Path(f"/proc/{pid}").exists():
        time.sleep(0.1)


@pytest.fixture(scope="module")
def slurm():
    """The environment (SLURM_CONF) of a one-node cluster that lives as long as this module's tests."""
    if not slurm_present():
        pytest.skip("Slurm is not installed: apt-get install -y slurm-wlm munge")
    if os.geteuid() != 0:
        pytest.skip("the one-node Slurm cluster is started as root")
    base = Path(tempfile.mkdtemp(prefix="lesson20-slurm-"))
    base.chmod(0o755)  # munged runs as munge
    munge = pwd.getpwnam("munge")
    (base / "munge").mkdir(mode=0o700)
    key = base / "munge" / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    for path in (base / "munge", key):
        os.chown(path, munge.pw_uid, munge.pw_gid)
    for folder in ("state", "spool"):
        (base / folder).mkdir()
    (base / "slurm.conf").write_text(_conf(base))
    env = {**os.environ, "SLURM_CONF": str(base / "slurm.conf")}
    try:
        m = base / "munge"
        subprocess.run(["runuser", "-u", "munge", "--", "munged", "--force", f"--socket={m / 'munge.socket'}",
                        f"--key-file={key}", f"--pid-file={m / 'munged.pid'}", f"--log-file={m / 'munged.log'}",
                        f"--seed-file={m / 'munged.seed'}"], check=True, timeout=30)
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([daemon], env=env, check=True, timeout=30)
        deadline = time.monotonic() + 60
        while (state := subprocess.run(["sinfo", "-h", "-o", "%T"], env=env, capture_output=True,
                                       text=True).stdout.strip()) != "idle":
            assert time.monotonic() < deadline, f"node {state!r}:\n" + (base / "slurmctld.log").read_text()
            time.sleep(0.2)
        yield env
    finally:
        for pid_file in ("slurmd.pid", "slurmctld.pid", "munge/munged.pid"):
            _stop(base / pid_file)
        shutil.rmtree(base, ignore_errors=True)


def _write_class(folder: Path) -> dict:
    """CLASS written into folder, its students named so that the hash puts each in the shard it is listed in."""
    wanted = {shard: list(kinds) for shard, kinds in CLASS.items()}
    chosen, probe = {}, folder.parent / "probe"
    for n in range(1000):
        name = f"s{n:03d}"
        (probe / name).mkdir(parents=True)
        shard = next(i for i in wanted if select_students(probe, [name], (i, TASKS)))
        if wanted[shard]:
            chosen[name] = wanted[shard].pop(0)
        if not any(wanted.values()):
            break
    shutil.rmtree(probe)
    write_class(folder, list(chosen.values()), list(chosen))
    return chosen


# the states a task ends in (Slurm's job_state_string); "COMPLETED" alone with exit code 0 is success
ENDED = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "PREEMPTED", "BOOT_FAIL",
         "DEADLINE"}


def _tasks(env, job: str) -> list:
    """(state, exit code) of each record of the array job: one per task once it has started, one for the pending
    rest. slurmctld keeps an ended job's record for MinJobAge (300 s by default), long enough to read it."""
    out = subprocess.run(["scontrol", "-o", "show", "job", job], env=env, capture_output=True, text=True).stdout
    records = [dict(field.split("=", 1) for field in line.split() if "=" in field) for line in out.splitlines()]
    return [(r.get("JobState", ""), r.get("ExitCode", "")) for r in records if r.get("ArrayJobId") == job]


def _running(tasks: list) -> bool:
    """Whether the array is still going: no record yet, or a task not yet in a state it ends in."""
    return not tasks or any(state not in ENDED for state, _ in tasks)


def _wait(env, job: str, proc_output: str, deadline_s: float = 600) -> int:
    """What `sbatch --wait` returns for the array (0 only if every task completed with exit code 0), polling
    every 0.2 s: sbatch itself sleeps 2, 8 then 32 s between its polls, most of a minute idle per array here."""
    deadline = time.monotonic() + deadline_s
    while _running(tasks := _tasks(env, job)):
        assert time.monotonic() < deadline, f"array {job} still running: {tasks}\n{proc_output}"
        time.sleep(0.2)
    return 0 if all(state == "COMPLETED" and code == "0:0" for state, code in tasks) else 1


def _sbatch(env, cwd: Path, grading: Path, name: str, kill_after: int = 0):
    """Submit the array and wait for it; with kill_after, cancel task KILLED once it has graded that many."""
    done = subprocess.run(["sbatch", "--parsable", f"--array=1-{TASKS}", "--cpus-per-task=1", f"--job-name={name}",
                           str(SBATCH)], env=env, cwd=cwd, capture_output=True, text=True, timeout=60)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    job = done.stdout.strip().split(";")[0]
    cancelled = None
    if kill_after:
        state = grading / f"shard-{KILLED}" / "state"
        deadline = time.monotonic() + 300
        while len(list(state.glob("*.json"))) < kill_after:
            assert _running(_tasks(env, job)) and time.monotonic() < deadline, output
            time.sleep(0.05)
        subprocess.run(["scancel", f"{job}_{KILLED}"], env=env, check=True)
        cancelled = {p.stem for p in state.glob("*.json")}
    returncode = _wait(env, job, output)
    logs = {int(m.group(1)): p.read_text() for p in cwd.glob("lesson20-grade-*_*.out")
            if (m := re.search(r"_(\d+)\.out$", p.name))}
    for p in cwd.glob("lesson20-grade-*.out"):
        p.unlink()
    return returncode, output, logs, cancelled


def _scores(grades_json: Path) -> dict:
    return {s: (row["status"], row["total"], {i: r["score"] for i, r in row["items"].items()})
            for s, row in json.loads(grades_json.read_text())["students"].items()}


def test_a_slurm_array_grades_like_one_machine_and_resumes_a_cancelled_task(slurm, postgres_url, tmp_path):
    submitted, grading = tmp_path / "submitted", tmp_path / "grading"
    kinds = _write_class(submitted)
    shards = {i: select_students(submitted, shard=(i, TASKS)) for i in CLASS}
    assert [len(shards[i]) for i in CLASS] == [len(CLASS[i]) for i in CLASS]
    env = {**slurm, "LESSON20_SUBMITTED": str(submitted), "LESSON20_GRADING": str(grading),
           "LESSON20_DB_URL": postgres_url, "LESSON20_REPO": str(ROOT)}

    # a variable missing: every task says which, and grades nothing
    rc, output, logs, _ = _sbatch({k: v for k, v in env.items() if k != "LESSON20_DB_URL"}, tmp_path,
                                  grading, "missing")
    assert rc != 0 and sorted(logs) == [1, 2, 3], output
    assert all("LESSON20_DB_URL not set" in log for log in logs.values()), logs
    assert not grading.exists()

    # the array, with task KILLED cancelled part-way
    started = time.monotonic()
    rc, output, logs, finished = _sbatch(env, tmp_path, grading, "first", kill_after=2)
    first_s = time.monotonic() - started
    assert rc != 0, output  # a cancelled task fails the array
    left = sorted(set(shards[KILLED]) - finished)
    assert finished and left, (finished, shards[KILLED])
    records = {p: p.read_bytes() for p in grading.rglob("state/*.json")}

    # the same array again grades only what the cancelled task left
    started = time.monotonic()
    rc, output, logs, _ = _sbatch(env, tmp_path, grading, "again")
    again_s = time.monotonic() - started
    assert rc == 0, output + "".join(logs.values())
    assert {i: counts(log) for i, log in logs.items()} == {
        i: (len(left), len(shards[i]) - len(left)) if i == KILLED else (0, len(shards[i])) for i in CLASS}, logs
    changed = sorted(p.stem for p in grading.rglob("state/*.json") if records.get(p) != p.read_bytes())
    assert changed == left
    # a task's log is not a terminal: one line per student it graded, with status, score and seconds
    lines = [ln for ln in logs[KILLED].splitlines() if re.match(r"\[\s*\d+/\d+\] ", ln)]
    assert len(lines) == len(left) and all(" points, " in ln and ln.endswith(" s") for ln in lines), logs[KILLED]
    tables = _dump(postgres_url)
    assert len(tables["submitted_notebook"]) == len(kinds)
    assert len(tables["grade"]) == len(kinds) * len(ITEMS), "one grade per cell, no duplicates"

    done = subprocess.run([sys.executable, "-m", "autograder", "export", "--out", str(grading / "all"),
                           "--db-url", postgres_url, "--from", *map(str, sorted(grading.glob("shard-*")))],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr

    # one machine, one run, SQLite
    started = time.monotonic()
    grade(submitted, tmp_path / "one", "--jobs", "2")
    one_s = time.monotonic() - started
    assert _scores(grading / "all" / "grades.json") == _scores(tmp_path / "one" / "grades.json")
    print(f"{len(kinds)} students: slurm array {first_s:.1f} s with task {KILLED} cancelled, "
          f"{again_s:.1f} s again for its {len(left)} left; one grade --jobs 2: {one_s:.1f} s")


# ---- docs/instructors.md's own command: deploy/slurm/submit, sbatch --wait that stops ----

SUBMIT_LINE = re.compile(r"^\s*(deploy/slurm/submit .*grade\.sbatch)")


def docs_submit_command() -> list:
    """docs/instructors.md's `deploy/slurm/submit ...` line (its comment left out), split as a shell would."""
    import shlex
    found = [m.group(1) for line in (ROOT / "docs" / "instructors.md").read_text().splitlines() if (m := SUBMIT_LINE.match(line))]
    assert len(found) == 1, f"docs/instructors.md should give one deploy/slurm/submit command, not {found}"
    return shlex.split(found[0])


def _database(postgres_url: str, name: str) -> str:
    """A new empty database on the module's PostgreSQL server: its URL."""
    import psycopg2
    from sqlalchemy.engine import make_url
    url = make_url(postgres_url)
    conn = psycopg2.connect(host=url.host, port=url.port, user=url.username, dbname="postgres")
    conn.autocommit = True
    conn.cursor().execute(f"CREATE DATABASE {name}")
    conn.close()
    return url.set(database=name).render_as_string(hide_password=False)


def _node_cpus(env) -> int:
    return int(subprocess.run(["sinfo", "-h", "-o", "%c"], env=env, capture_output=True, text=True).stdout.split()[0])


def _submit(env, cwd: Path, command: list, timeout: float = 600):
    """Run the docs' command from `cwd`, where deploy/ is the repository's (its logs are written there)."""
    if not (cwd / "deploy").exists():
        (cwd / "deploy").symlink_to(ROOT / "deploy")
    started = time.monotonic()
    done = subprocess.run(command, env={**env, "LESSON20_POLL_SECONDS": "1"}, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout + done.stderr, time.monotonic() - started


def _with_option(command: list, *options: str) -> list:
    """The docs' command with sbatch options added before the script."""
    return [command[0], *options, *command[1:]]


def test_the_docs_command_grades_a_class_on_this_node(slurm, postgres_url, tmp_path):
    command = docs_submit_command()
    submitted, grading = tmp_path / "submitted", tmp_path / "grading"
    students = ["ada", "bob", "cy"]
    write_class(submitted, ["stub"] * len(students), students)
    env = {**slurm, "LESSON20_SUBMITTED": str(submitted), "LESSON20_GRADING": str(grading),
           "LESSON20_DB_URL": _database(postgres_url, "readme"), "LESSON20_REPO": str(ROOT)}
    rc, output, seconds = _submit(env, tmp_path, command)
    logs = "".join(p.read_text() for p in tmp_path.glob("lesson20-grade-*.out"))
    assert rc == 0, output + logs
    tasks = int(re.search(r"--array=1-(\d+)", " ".join(command)).group(1))
    assert f"completed, {tasks} task(s)" in output, output
    graded = {p.stem: json.loads(p.read_text())["status"] for p in grading.glob("shard-*/state/*.json")}
    assert graded == {s: "graded" for s in students}, (graded, logs)
    print(f"docs command on a {_node_cpus(slurm)}-CPU node: rc {rc} in {seconds:.1f} s, {tasks} tasks, "
          f"{len(students)} students graded")


def test_a_job_no_node_can_run_is_refused_before_it_is_submitted(slurm, tmp_path):
    cpus = _node_cpus(slurm)
    command = _with_option(docs_submit_command(), f"--cpus-per-task={4 * cpus}")
    env = {**slurm, "LESSON20_SUBMITTED": str(tmp_path / "submitted"), "LESSON20_GRADING": str(tmp_path / "grading"),
           "LESSON20_DB_URL": "sqlite:////nowhere.db", "LESSON20_REPO": str(ROOT)}
    jobs_before = subprocess.run(["squeue", "-h", "-o", "%i"], env=slurm, capture_output=True, text=True).stdout
    rc, output, seconds = _submit(env, tmp_path, command, timeout=120)
    assert rc == 2 and "can never start this job, so it was not submitted" in output, output
    assert "--cpus-per-task" in output, output  # what to ask for instead
    assert seconds < 30, seconds
    jobs_after = subprocess.run(["squeue", "-h", "-o", "%i"], env=slurm, capture_output=True, text=True).stdout
    assert jobs_after == jobs_before and not (tmp_path / "grading").exists()
    print(f"--cpus-per-task={4 * cpus} on a {cpus}-CPU node: exit code {rc} after {seconds:.1f} s: {output.strip()}")


def _pending_job(env, name: str, deadline_s: float = 60) -> str:
    deadline = time.monotonic() + deadline_s
    while not (jobs := subprocess.run(["squeue", "-h", "-n", name, "-o", "%i"], env=env, capture_output=True,
                                      text=True).stdout.split()):
        assert time.monotonic() < deadline, f"no job {name} in squeue"
        time.sleep(0.2)
    return jobs[0].split("_")[0]


def test_a_job_the_partition_stops_fitting_is_cancelled_with_its_reason(slurm, tmp_path):
    cpus = _node_cpus(slurm)
    if cpus < 2:
        pytest.skip("needs a node with 2 CPUs or more")
    name = "lesson20-unfit"
    command = _with_option(docs_submit_command(), "--hold", f"--cpus-per-task={cpus}", f"--job-name={name}")
    env = {**slurm, "LESSON20_SUBMITTED": str(tmp_path), "LESSON20_GRADING": str(tmp_path / "grading"),
           "LESSON20_DB_URL": "sqlite:////nowhere.db", "LESSON20_REPO": str(ROOT), "LESSON20_POLL_SECONDS": "1"}
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        job = _pending_job(slurm, name)
        subprocess.run(["scontrol", "update", "PartitionName=lesson20", f"MaxCPUsPerNode={cpus - 1}"], env=slurm,
                       check=True)
        subprocess.run(["scontrol", "release", job], env=slurm, capture_output=True)  # says the partition won't do
        started = time.monotonic()
        output, _ = proc.communicate(timeout=120)
        seconds = time.monotonic() - started
    finally:
        subprocess.run(["scontrol", "update", "PartitionName=lesson20", "MaxCPUsPerNode=UNLIMITED"], env=slurm,
                       check=True)
        proc.kill()
    assert proc.returncode == 2, output
    assert f"cancelled job {job}" in output and "Reason=PartitionConfig" in output, output
    assert not subprocess.run(["squeue", "-h", "-j", job], env=slurm, capture_output=True, text=True).stdout.strip()
    print(f"held job released into Reason=PartitionConfig: exit code 2 after {seconds:.1f} s: {output.strip()}")


def test_a_cancelled_job_is_not_a_success(slurm, tmp_path):
    name = "lesson20-cancelled"
    command = _with_option(docs_submit_command(), "--hold", f"--job-name={name}")
    env = {**slurm, "LESSON20_SUBMITTED": str(tmp_path), "LESSON20_GRADING": str(tmp_path / "grading"),
           "LESSON20_DB_URL": "sqlite:////nowhere.db", "LESSON20_REPO": str(ROOT), "LESSON20_POLL_SECONDS": "1"}
    (tmp_path / "deploy").symlink_to(ROOT / "deploy")
    proc = subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        job = _pending_job(slurm, name)
        subprocess.run(["scancel", job], env=slurm, check=True)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 1, output  # sbatch --wait alone returns 0 here
    assert "did not complete" in output and "CANCELLED" in output, output
