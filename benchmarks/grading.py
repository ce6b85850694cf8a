"""Grading throughput: `python -m autograder grade --jobs 2` (sandbox on) against plain serial
`nbgrader autograde` with nbgrader's defaults, on the same class, in the same run.

The class comes from the project's corpus of submissions (tests/submissions): the reference, the
untouched stub, buggy variants spread over the items, a few valid alternatives and a few hostile
ones. Each grader runs as a child process; a sampler adds up the resident memory of its whole
process tree (kernels and sandboxes included) every 0.25 s.
"""
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from autograder.items import ASSIGNMENT
from autograder.sandbox.isolation import remove_cgroup

from .common import ROOT, busy_seconds, format_table, mib

TARGET_RATIO = 0.30  # ours against plain nbgrader, with whole notebooks executed
SAMPLE_S = 0.25  # memory sampling period: reading PSS costs CPU that the graders would otherwise get


@dataclass
class Config:
    students: int = 24
    jobs: int = 2
    alternatives: int = 2
    # hostile variants that plain nbgrader can also grade in bounded time, and that write nothing outside
    # their folder (both graders run them: plain nbgrader without a sandbox)
    hostile: tuple = ("hostile_patch_comparisons", "hostile_lying_float", "hostile_tampered_test_cell",
                      "hostile_exit_in_function")
    timeout: float = 60.0       # our grader: seconds per item (its default)
    limit_s: int = 3600         # either grader is stopped after this long
    keep: str = ""              # keep the class, both outputs and the logs in this folder


CPU = Config()
QUICK = Config(students=3, alternatives=0, hostile=())


# ---- the class ----

def pick_variants(config: Config) -> list:
    """Variant names for the class: reference, stub, the hostile ones named and a few alternatives,
    then buggy ones taken round-robin over the items they break."""
    corpus = _corpus()
    unknown = [n for n in config.hostile if n not in corpus.VARIANTS]
    if unknown:
        raise SystemExit(f"grading: no variants {', '.join(unknown)} in tests/submissions")
    chosen = ["reference", "stub", *config.hostile] + corpus.names("alternative")[:config.alternatives]
    by_item = {}
    for name in corpus.names("buggy"):
        by_item.setdefault(corpus.VARIANTS[name].item, []).append(name)
    queues = list(by_item.values())
    while len(chosen) < config.students and any(queues):
        for queue in queues:
            if queue and len(chosen) < config.students:
                chosen.append(queue.pop(0))
    return chosen[:config.students]


def _corpus():
    """tests/submissions: the project's corpus of submissions, built from the notebooks."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests import submissions
    return submissions


def write_class(folder: Path, config: Config) -> dict:
    """folder/<student>/lesson20/lesson20.ipynb; returns student id -> (variant, kind)."""
    corpus = _corpus()
    names = pick_variants(config)
    students = [f"{i:02d}_{name}" for i, name in enumerate(names)]
    corpus.write_class(folder, names, students)
    return {s: (n, corpus.VARIANTS[n].kind) for s, n in zip(students, names)}


# ---- running a grader and measuring it ----

def measured(cmd: list, cwd: Path, log: Path, limit_s: float) -> dict:
    """Run cmd; return its wall seconds, the peak memory of its process tree and of one process, and
    how many cores other work on the machine took meanwhile (a shared machine slows what it measures).

    The tree's memory is the sum of PSS (shared pages split between the processes that map them):
    RSS would count torch's libraries, and the pages forked sandboxes share, once per process.
    Its CPU seconds are the kernel's count for every process of the tree, short-lived ones included (a
    sandbox's fork for each item, which sampling would miss): a cpuacct cgroup of its own where this process
    may make one (`cpu_counted`), else the rusage of this process's children, a lower bound (a process killed
    with SIGKILL leaves uncounted what its own children used). "cpu_counted_by" says which.
    """
    import resource

    import psutil
    env = dict(os.environ, PATH=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    env.pop("NBGRADER_EXECUTION", None)
    me, machine_before = psutil.Process(), busy_seconds()
    mine_before = sum(me.cpu_times()[:2])
    reaped_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    peak = {"tree_pss": 0, "tree_rss": 0, "process_rss": 0}
    with open(log, "w") as out, cpu_counted() as (prefix, counted):
        proc = psutil.Popen(prefix + cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            pss = rss = 0
            for p in [proc] + _children(proc):
                try:
                    with p.oneshot():
                        info = p.memory_full_info()
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                pss, rss = pss + getattr(info, "pss", info.rss), rss + info.rss
                peak["process_rss"] = max(peak["process_rss"], info.rss)
            peak["tree_pss"], peak["tree_rss"] = max(peak["tree_pss"], pss), max(peak["tree_rss"], rss)
            if time.perf_counter() - start > limit_s:
                for p in _children(proc) + [proc]:
                    try:
                        p.kill()
                    except psutil.NoSuchProcess:
                        pass
            time.sleep(SAMPLE_S)
        wall = time.perf_counter() - start
        tree = counted()
        if tree is None:
            reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
            tree = (reaped.ru_utime - reaped_before.ru_utime) + (reaped.ru_stime - reaped_before.ru_stime)
    others = busy_seconds() - machine_before - tree - (sum(me.cpu_times()[:2]) - mine_before)
    tail = log.read_text(errors="replace").strip().splitlines()[-5:]
    return {"wall_s": wall, **{f"peak_{k}": v for k, v in peak.items()}, "cpu_s_tree": tree,
            "cpu_counted_by": "cgroup" if prefix else "rusage (a lower bound)",
            "other_cores": max(others, 0.0) / wall, "returncode": proc.returncode, "log_tail": tail}


@contextlib.contextmanager
def cpu_counted():
    """A cgroup v1 cpuacct group of its own for a command: yields (the prefix that runs a command in it, a
    function giving the CPU seconds counted so far), or ([], a function giving None) where none can be made
    (not root; cgroup v2 only, or cpuacct mounted with the cpu controller: there a sandbox's own cgroup,
    sandbox/isolation.py's Cgroup, would take its processes out of this one)."""
    cgroups = Path("/sys/fs/cgroup")
    folder = cgroups / "cpuacct" / f"lesson20-benchmark-{os.getpid()}-{time.monotonic_ns()}"
    start = None
    try:
        if (cgroups / "cpu").resolve() != (cgroups / "cpuacct").resolve():
            folder.mkdir()
            start = int((folder / "cpuacct.usage").read_text())
    except (OSError, ValueError):
        pass
    if start is None:
        with contextlib.suppress(OSError):
            folder.rmdir()
        yield [], lambda: None
        return

    def counted(linger_s: float = 10.0) -> float:
        """Once the group's last process has ended (or after `linger_s`), the seconds its processes used."""
        until = time.monotonic() + linger_s
        while (folder / "cgroup.procs").read_text().split() and time.monotonic() < until:
            time.sleep(0.05)
        return (int((folder / "cpuacct.usage").read_text()) - start) / 1e9

    try:
        yield ["/bin/sh", "-c", f'echo $$ > {folder / "cgroup.procs"} && exec "$@"', "sh"], counted
    finally:
        remove_cgroup(folder, kill=False, seconds=10)  # the last processes of the tree may still be exiting


def _children(proc):
    import psutil
    try:
        return proc.children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def grade_ours(work: Path, config: Config) -> dict:
    out = work / "ours"
    run = measured([sys.executable, "-m", "autograder", "grade", str(work / "submitted"), "--out", str(out),
                    "--jobs", str(config.jobs), "--timeout", str(config.timeout), "--quiet"],
                   ROOT, work / "ours.log", config.limit_s)
    doc = json.loads((out / "grades.json").read_text()) if (out / "grades.json").exists() else {"students": {}}
    run["scores"] = {s: row.get("total") for s, row in doc["students"].items()}
    run["statuses"] = {s: row.get("status") for s, row in doc["students"].items()}
    return run


PLAIN_CONFIG = f'''# nbgrader's defaults: no custom preprocessors, Execute with its 30 s per cell
c = get_config()  # noqa: F821
c.CourseDirectory.course_id = "{ASSIGNMENT}"
'''


def grade_plain(work: Path, config: Config) -> dict:
    """A bare nbgrader course with the same notebooks: generate_assignment, then serial autograde."""
    course = work / "plain"
    (course / "source" / ASSIGNMENT).mkdir(parents=True)
    shutil.copy(ROOT / "solutions" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb", course / "source" / ASSIGNMENT)
    shutil.copytree(work / "submitted", course / "submitted")
    (course / "nbgrader_config.py").write_text(PLAIN_CONFIG)
    nbgrader = [sys.executable, "-m", "nbgrader"]
    generate = measured(nbgrader + ["generate_assignment", ASSIGNMENT, "--force"], course,
                        work / "plain-generate.log", config.limit_s)
    run = measured(nbgrader + ["autograde", ASSIGNMENT], course, work / "plain-autograde.log", config.limit_s)
    run["generate_s"] = generate["wall_s"]
    run["scores"], run["statuses"] = _plain_scores(course, (work / "plain-autograde.log").read_text(errors="replace"))
    return run


def _plain_scores(course: Path, log: str):
    """Autograded points per student from nbgrader's gradebook; "failed" where its log says so."""
    from nbgrader.api import Gradebook, MissingEntry
    failed = set(re.findall(r"error processing assignment '[^']*' for student '([^']+)'", log))
    scores, statuses = {}, {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", course_id=ASSIGNMENT) as gb:
        for student in sorted(p.name for p in (course / "submitted").iterdir()):
            try:
                submission = gb.find_submission(ASSIGNMENT, student)
            except MissingEntry:
                scores[student], statuses[student] = None, "failed"
                continue
            scores[student] = submission.code_score
            statuses[student] = "failed" if student in failed else "graded"
    return scores, statuses


# ---- the benchmark ----

def run(config: Config, device: torch.device) -> dict:
    from autograder.sandbox import have_bwrap
    work = Path(config.keep) if config.keep else Path(tempfile.mkdtemp(prefix="lesson20-grading-"))
    if config.keep:
        shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True, exist_ok=True)
    try:
        students = write_class(work / "submitted", config)
        n = len(students)
        ours = grade_ours(work, config)
        plain = grade_plain(work, config)
    finally:
        if not config.keep:
            shutil.rmtree(work, ignore_errors=True)
    rows = []
    for label, r in ((f"autograder grade --jobs {config.jobs}", ours), ("nbgrader autograde (serial)", plain)):
        rows.append({"grader": label, "wall_s": r["wall_s"], "per_submission_s": r["wall_s"] / n,
                     "peak_tree_pss_mib": mib(r["peak_tree_pss"]), "peak_tree_rss_mib": mib(r["peak_tree_rss"]),
                     "peak_process_rss_mib": mib(r["peak_process_rss"]),
                     "cpu_s_tree": r["cpu_s_tree"], "cpu_counted_by": r["cpu_counted_by"], "other_cores": r["other_cores"], "returncode": r["returncode"],
                     "graded": sum(s == "graded" for s in r["statuses"].values()), "log_tail": r["log_tail"]})
    kinds = {}
    for student, (_variant, kind) in students.items():
        kinds.setdefault(kind, []).append(student)
    by_kind = {kind: {"students": len(members),
                      "ours_mean_total": _mean(ours["scores"].get(s) for s in members),
                      "nbgrader_mean_total": _mean(plain["scores"].get(s) for s in members)}
               for kind, members in kinds.items()}
    summary = {
        "students": n, "sandbox": "bubblewrap" if have_bwrap() else "resource-limited subprocess (weaker)",
        "ratio": ours["wall_s"] / plain["wall_s"],
        "ratio_with_generate": ours["wall_s"] / (plain["wall_s"] + plain["generate_s"]),
        "plain_generate_s": plain["generate_s"], "target_ratio": TARGET_RATIO,
        "within_target": ours["wall_s"] / plain["wall_s"] <= TARGET_RATIO,
        "by_kind": by_kind,
        "class": {s: v for s, (v, _) in students.items()},
        "scores": {s: {"ours": ours["scores"].get(s), "nbgrader": plain["scores"].get(s),
                       "ours_status": ours["statuses"].get(s)} for s in students},
    }
    return {"rows": rows, "summary": summary}


def _mean(values):
    values = [v for v in values if v is not None]
    return sum(values) / len(values) if values else None


def table(result: dict) -> str:
    s = result["summary"]
    columns = [("grader", "grader", ""), ("wall s", "wall_s", ".1f"), ("s / submission", "per_submission_s", ".2f"),
               ("peak MiB, tree PSS", "peak_tree_pss_mib", ".0f"),
               ("peak MiB, one process", "peak_process_rss_mib", ".0f"), ("CPU s", "cpu_s_tree", ".0f"),
               ("other work, cores", "other_cores", ".2f"), ("graded", "graded", "d")]
    kinds = [{"kind": k, **v} for k, v in s["by_kind"].items()]
    return (format_table(result["rows"], columns)
            + f"\n{s['students']} submissions; sandbox: {s['sandbox']}; nbgrader's generate_assignment"
            f" (not timed above) {s['plain_generate_s']:.1f} s"
            f"\nratio ours / nbgrader: {s['ratio']:.2f} (with generate_assignment: {s['ratio_with_generate']:.2f});"
            f" target <= {s['target_ratio']}: {'met' if s['within_target'] else 'NOT met'}\n\n"
            + format_table(kinds, [("kind", "kind", ""), ("students", "students", "d"),
                                   ("mean total, ours", "ours_mean_total", ".2f"),
                                   ("mean total, nbgrader", "nbgrader_mean_total", ".2f")]))
