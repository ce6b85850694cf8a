"""What a student or an instructor reads: the grader's messages, each found here by its name.

The code that decides which message applies stays where the decision is made (backends.py,
grading.py, report.py, instructor/grade.py); the words are here, grouped by who reads them:

* under a failing check (the student): a probe's answer, the sandbox's failures, the time budgets;
* above an item's checks (the student): the notebook's errors, its repairs, stand-ins, review;
* an item's report (the student): its header and rubric lines;
* the feedback page of a submission that could not be graded (the student);
* grades.json's reason (the instructor).

The status words are vocabularies, not wording: each is a Literal beside what carries it
(sandbox.errors.SandboxReason, checks.expect.CheckReason, grading.NotebookStatus,
instructor.state.StudentStatus). The last two are written to the results files and grades.json,
so their words never change.

First, `clip`: how much of a text that came from student code (or a failing tool) is kept. Such
text is whatever the code wrote, so it is always cut before it is stored or shown, and cut
without first writing out the whole value: a string is sliced, anything else is written by a
bounded repr (reprlib), which stops after a few items and levels however large the value is.
"""
import html
import reprlib
import statistics

LIMITS = {
    "name": 100,      # a name the probe looked up
    "type": 80,       # an exception's type
    "status": 40,     # a probe's status word
    "call": 300,      # the call a probe made, as shown to the student
    "where": 300,     # the line of student code that raised
    "tail": 200,      # the last line a dead process wrote to stderr
    "message": 400,   # an exception's message
    "note": 300,      # one note in a grading record
    "reason": 500,    # a grading record's reason
    "check": 1000,    # a failing check's message, as a grading record keeps it
}

_BOUNDED = reprlib.Repr()
_BOUNDED.maxlevel, _BOUNDED.maxstring, _BOUNDED.maxother, _BOUNDED.maxlong = 3, 200, 200, 200
_BOUNDED.maxlist = _BOUNDED.maxtuple = _BOUNDED.maxdict = _BOUNDED.maxset = 8


def clip(value, kind: str) -> str:
    """`value` as text, at most LIMITS[kind] characters ("" for None)."""
    if value is None:
        return ""
    if type(value) is str:
        return value[:LIMITS[kind]]
    return bounded_repr(value)[:LIMITS[kind]]


def bounded_repr(value) -> str:
    """repr(value), cut short inside: a few items of each container, a few levels, a few hundred characters."""
    try:
        return _BOUNDED.repr(value)
    except Exception as exc:  # a value whose own repr raises
        return f"<{type(value).__name__}: {type(exc).__name__} in repr>"


# ---- Under a failing check: what the student reads about one check (backends.py) ----

# how a signal that ended the child reads to a student
SIGNAL_WORDS = {
    "SIGKILL": "it was killed (out of memory, or past its CPU time)",
    "SIGXCPU": "it ran past its CPU time",
    "SIGSEGV": "it crashed (segmentation fault)",
    "SIGXFSZ": "it wrote a file that was too large",
    "SIGABRT": "it aborted",
}
# the one hint after a check's code failed in the sandbox, by SandboxError.reason
HINTS = {"timeout": "look for an endless loop.",
         "crashed": "Look for os._exit, sys.exit, or a very large allocation.",
         "refused": ("Return plain values: numbers, short strings, lists, and tensors that hold their own "
                     "memory (.clone() a view made with expand).")}
REVIEW_TEXT = ("your code reached into the grader's own code or what it relies on, so this exercise is set "
               "aside for your instructor to grade by hand")
CHECK_FAILED = "a check failed"  # an assertion that came without words


def not_defined(name: str, context: str) -> str:
    """A name the check looks up is not defined. context: "kernel" (self-check) or "sandbox"."""
    hint = ("Run the cell that defines it, and check the spelling." if context == "kernel" else
            "No cell of your notebook defined it when the notebook ran: check the spelling, and "
            "that the cell defining it ran without an error before it.")
    return f"{name} is not defined. {hint}"


def not_implemented(call: str, where: str) -> str:
    """The student's function still raises NotImplementedError (where: the line that raised, or "")."""
    return (f"{call} is not implemented yet: it raised NotImplementedError{_at(where)}. "
            "Replace the `raise NotImplementedError(...)` line with your code.")


# what torch says when code asks for a GPU the grader does not have, or mixes devices
DEVICE_TROUBLE = ("Torch not compiled with CUDA enabled", "No CUDA GPUs are available", "CUDA driver",
                  "Expected all tensors to be on the same device", "found at least two devices")
ON_CPU = (" The grader runs your code on the CPU: take the device from the model or the inputs "
          "(`p.device`, `inputs.device`), never from `DEVICE`, `.cuda()` or a default device "
          "(`torch.set_default_device`).")


def raised(call: str, exc_type: str, message: str, where: str) -> str:
    hint = ON_CPU if any(text in message for text in DEVICE_TROUBLE) else ""
    return f"{call} raised {exc_type}: {message}{_at(where)}{hint}"


def _at(where: str) -> str:
    return f" ({where})" if where else ""


def could_not_run(status: str) -> str:
    """A probe failed without a message of its own."""
    return f"the check could not run your code ({status})"


def internal_error(exc: BaseException) -> str:
    """A check itself raised: the course's bug, not the student's."""
    return f"internal error in the check ({type(exc).__name__}: {exc}); please tell your instructor"


def sandbox_failure(exc) -> str:
    """What a student reads when the sandbox timed out, died or broke down (exc: a SandboxError)."""
    doing = exc.doing or "running your code"
    if exc.reason == "refused":
        return f"what came back from your code could not be used: {exc.detail} (while {doing})"
    if exc.reason == "timeout":
        where = f": cell {exc.cell} was still running when the time ran out" if exc.cell is not None else ""
        return f"took longer than it may while {doing}{where}"
    if exc.died:
        words = SIGNAL_WORDS.get(exc.signal_name)
        if words is None:
            words = f"it exited with code {exc.status}" if exc.status is not None else "it stopped answering"
            if exc.tail:
                words += f". Last message: {clip(exc.tail, 'tail')}"
        where = f" in cell {exc.cell}" if exc.cell is not None else ""
        return f"the Python process running your code ended while {doing}{where}: {words}"
    return f"{exc.detail} (while {doing})" if exc.doing else exc.detail


def check_in_sandbox_failed(what: str, exc, reloading: bool, total_seconds: float, timeout: float) -> str:
    """A check's request to the sandbox failed (exc: a SandboxError); reloading: while the notebook ran
    again after a crash, which the whole notebook's time pays for."""
    hint = {"timeout": (f"Your notebook has {total_seconds:g} s for all exercises, running it again "
                        f"after a crash included: {HINTS['timeout']}" if reloading else
                        f"This exercise has {timeout:g} s in all: {HINTS['timeout']}"),
            "crashed": HINTS["crashed"], "refused": HINTS["refused"]}.get(exc.reason, "")
    text = f"{what}: {sandbox_failure(exc)}".rstrip(".")
    return f"{text}. {hint}".strip()


def notebook_time_used(what: str, total_seconds: float) -> str:
    return (f"{what}: not run: your notebook used up its {total_seconds:g} s for all "
            "exercises in earlier ones. Look for an endless loop there.")


def item_time_used(what: str, timeout: float) -> str:
    return (f"{what}: not run: this exercise used up its {timeout:g} s in earlier "
            f"checks. {HINTS['timeout'].capitalize()}")


def sandbox_stopped(what: str, restarts: int) -> str:
    return (f"{what}: not run: your code stopped the sandbox {restarts} times, "
            "so the rest of its checks are skipped. " + HINTS["crashed"])


def tampered(what: str) -> str:
    return f"{what}: {REVIEW_TEXT}"


# ---- Above an item's checks: what the student reads about the whole notebook (grading.py) ----

CODE_RAN = "your code ran"  # the title of the one failing check of an item whose notebook could not run


def problem_text(p: dict) -> str:
    """One error the notebook raised while it ran, as the student reads it."""
    where = f"cell {p['cell']}" + (f" (line {p['line']})" if p.get("line") else "")
    if p["type"] == "CellTimeout":
        return f"While your notebook ran, {where} {p['message']}; the cells after it still ran."
    if p["type"] == "ProcessDied":
        last = f" Its last message: {p['where']}." if p.get("where") else ""
        return (f"While your notebook ran, {where} ended the Python process running it ({p['message']}), so the "
                f"notebook was run again without that cell.{last} Look for os._exit, sys.exit, os.kill or a very "
                "large allocation, in that cell or in a function it calls.")
    if p["type"] == "MagicSkipped":
        return f"While your notebook ran, in {where}: {p['message']}."
    detail = f" at {p['where']}" if p.get("where") else ""
    hint = ON_CPU if any(text in str(p["message"]) for text in DEVICE_TROUBLE) else ""
    return f"While your notebook ran, {where} raised {p['type']}: {p['message']}{detail}{hint}"


def elsewhere(p: dict) -> str:
    """An error in a cell of no exercise (a helper's, the setup), which may be why this one fails."""
    return "Elsewhere: " + problem_text(p)


def structure_repair(text: str) -> str:
    return f"Your notebook's structure: {text}."


def set_aside(flags: list) -> str:
    return f"Set aside for review: {REVIEW_TEXT} (it was caught {'; '.join(flags)})."


def not_graded(status: str, reason: str) -> str:
    return f"Your notebook could not be graded ({status}): {reason}"


def more_not_listed(more: int, what: str) -> str:
    return f"({more} more {what} like these are not listed.)"


def stand_in(given: tuple, called: list) -> str:
    """The reference code that stood in for other exercises' while one was graded: the objects its checks
    hand over (given), and the names its own cells use (called); "" for none."""
    parts = ([f"the {', '.join(given)} its checks hand to your code"] if given else []) + (
        [f"{', '.join(called)}, which your code here uses"] if called else [])
    if not parts:
        return ""
    return (f"Graded with the reference's {' and '.join(parts)}, in place of yours: a mistake in another "
            "exercise costs points in that exercise only.")


# ---- An item's report: its header and rubric lines (report.py) ----

NOT_IMPLEMENTED = ("Not implemented yet: your code (or code it uses from an earlier exercise) still raises "
                   "NotImplementedError. Replace each "
                   "`raise NotImplementedError(...)` line with your code, run that cell, then run this check again.")
UNCHECKED = "checked only when your notebook is graded"
# a behaviour the grading machine could not check (a protection missing: instructor/protections.py); its points
# wait for the instructor, who decides it by hand
NOT_CHECKED_HERE = "not checked: this grading machine could not check it; your instructor decides it by hand"
WITHHELD = ("(this message is withheld: it quoted the reference solution's code, which the sandbox holds for "
            "other exercises while yours run; your instructor has the full record)")
NO_MEMORY_MEASURE = ("this grading machine could not measure your code's memory (it has no memory cgroup for the "
                     "sandbox), so whether one micro-batch's graph is alive at a time was not checked")
CAPPED = "A central behaviour fails, so this item keeps at most half its points."
CAUSE_FOUND = "Found first, behind several of the failures below: "  # before an item's diagnosis (runner.diagnose)
NO_CHECKS = "no checks ran"
SAME_PROBLEM = "same problem as above"  # a failing check's message when the one before said the same
CENTRAL = " (central)"                  # after a central behaviour
HIDDEN_CHECK = " (hidden check)"        # after a hidden check's title


def summary(item_id: str, passing: int, behaviours: int, score: float, points: float) -> str:
    """The header of an item whose behaviours were all checked."""
    return f"{item_id}: {passing} of {behaviours} behaviours pass, {score:g} of {points:g} points"


def partial_summary(item_id: str, passing: int, checked: int, earned: float, possible: float,
                    waiting: float) -> str:
    """The header of an item some of whose behaviours are checked only when the notebook is graded."""
    return (f"{item_id}: {passing} of {checked} behaviours checked here pass, {earned:g} of their "
            f"{possible:g} points; {waiting:g} more points are {UNCHECKED}")


# ---- The top of the feedback page: when the submission counts as submitted (instructor/announce.py) ----

def submission_line(block: dict) -> str:
    """The feedback page's first line, from grades.json's "submission" block ("" where there is no due date)."""
    if not block.get("due"):
        return ""
    when = f"at {block['time'].replace('T', ' ').replace('Z', ' UTC')}" if block.get("time") else "at a time not recorded"
    due = block["due"].replace("T", " ").replace("Z", " UTC")
    late = block.get("late_seconds")
    if late is None:
        timing = (f"Your submission counts as submitted {when}, after your due date ({due}); how late is not known "
                  "from a time you could not write, so your instructor decides it.")
    elif late > 0:
        timing = f"Your submission counts as submitted {when}, {duration(late)} after your due date ({due})."
    else:
        timing = f"Your submission counts as submitted {when}, by your due date ({due})."
    penalty = block.get("penalty") or 0
    return timing + (f" Late penalty: {penalty:g} points off your total." if penalty else "")


# ---- The feedback page of a submission that could not be graded (instructor/grade.py) ----

def failure_page(assignment: str, notebook: str, status: str, reason: str, items) -> str:
    """The whole HTML page; items: the autograded items, each scored 0."""
    rows = "".join(f"<tr><td>{html.escape(i.title)}</td><td>0 / {i.points:g}</td></tr>" for i in items)
    return (f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{assignment} feedback</title></head>"
            f"<body><h1>{assignment}: your submission could not be graded</h1>"
            f"<p>Status: {html.escape(status)}. {html.escape(reason)}</p>"
            f"<p>Submit <code>{assignment}/{notebook}</code>, saved from Jupyter, and ask your "
            f"instructor to grade it again.</p><table>{rows}</table></body></html>\n")


# ---- The feedback page's summary and folds (instructor/page_summary.py) ----

ANSWER_NOT_GRADED = "Not graded yet: your instructor reads this answer."


def lesson_fold(headings: list, cells: int) -> str:
    """The label of a folded run of the lesson's own cells: the headings in it, and how many cells it holds."""
    shown = "; ".join(headings[:3]) + ("; …" if len(headings) > 3 else "")
    count = f"{cells} cell{'s' * (cells != 1)}"
    return f"Lesson text: {shown} ({count})" if shown else f"Lesson text ({count})"


# ---- Why a submission is not simply "graded": the reason in grades.json, for the instructor ----

# grading.py: how the notebook's run went
def repaired_note(text: str) -> str:
    return f"repaired: {text}"


def raised_note(cell: int, exc_type: str) -> str:
    return f"cell {cell}: a magic or shell line was not run" if exc_type == "MagicSkipped" else f"cell {cell} raised {exc_type}"


def out_of_time_note(item_ids: list) -> str:
    return f"ran out of time in {', '.join(item_ids)}"


def review_note(flags: set) -> str:
    return f"set aside for review: {'; '.join(sorted(flags))[:300]}"


# instructor/staging.py: why a submission is not staged for grading
def linked_path(path: str, kind: str) -> str:
    """A submission refused because a path in it is a link (links.first_link)."""
    return (f"not graded: {path!r} is a {kind}, and a submission is graded only from files of its own (a link "
            "can reach any file on the grading machine); hand in the files themselves")


def duplicate_cell_id(index: int, cell_id: str, first: int) -> str:
    return repaired_note(f"cell {index} had the id {cell_id!r} of cell {first} as well: it was given a new one")


def beyond_cost(name: str, cost: int, limit: int) -> str:
    """A notebook refused before it was parsed because reading it, without its outputs, would cost too much memory
    (notebook_bounds.Measured.cost)."""
    return (f"{name} was not read: without its outputs it would take {cost / 2**20:.0f} MiB once read (at most "
            f"{limit >> 20}), more than any notebook of this lesson; it cannot be graded")


def beyond_bound(name: str, what: str, limit: int) -> str:
    """A notebook refused before it was parsed because its structure passes a bound (notebook_bounds.py)."""
    return (f"{name} was not read: it holds more than {limit:,} {what}, more than any notebook of this lesson; "
            "it cannot be graded")


# instructor/grade.py: how grading the student went
NO_RESULTS = "the grader wrote no results"
NOT_GRADED_YET = "not graded yet"  # gradebook.py: a selected student with no state file


def refused_id_cell(folder: str) -> str:
    """grades.csv's first cell for a folder whose name is not a usable student id (it was not graded): the name
    quoted, its control characters escaped, so that it starts no formula and breaks no row."""
    return f"{folder!r} (not graded: not a usable student id)"


def gradebook_error(error) -> str:
    return f"gradebook error: {error}"


def autograde_refused(error) -> str:
    """nbgrader refused the submission (e.g. broken cell metadata)."""
    return f"nbgrader could not autograde it: {error}"


def no_feedback(error) -> str:
    return f"no feedback: {error}"


def waiting_for_grade(folder) -> str:
    return (f"export: a `grade` is running in {folder}; the feedback pages are written again once it has "
            "finished (the grades are written already)")


def grader_error(detail: str) -> str:
    return f"grader error: {detail}"


def process_died(times: int, detail: str) -> str:
    return (f"its grading process died {times} times ({detail}); "
            "if memory ran out, grade it alone (--jobs 1) or with more memory")


def gradebook_error_after_timeout(exc: BaseException) -> str:
    return f"gradebook error after a timeout: {type(exc).__name__}: {exc}"


def past_deadline(limits) -> str:
    """A student still being graded at the deadline of limits.Limits.student_seconds."""
    return (f"grading it was stopped at the deadline of {limits.student_seconds:g} s per student (the "
            f"notebook's {limits.notebook_seconds:g} s, its checks' {limits.checks_seconds:g} s, and "
            f"{limits.startup_seconds:g} s to start and write the feedback)")


# ---- What `grade` shows while it works, where its output is not a terminal (instructor/progress.py) ----

def one_line(text: str, limit: int = 120) -> str:
    """`text` on one line of at most `limit` characters, with no control character (a folder name or a reason may
    hold newlines or a terminal's escape sequences)."""
    text = " ".join(str(text).split())
    text = text if text.isprintable() else ascii(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def progress_line(done: int, total: int, student: str, status: str, score: float, points: float, seconds,
                  reason: str = "") -> str:
    """One finished student: `[ 3/12] ada: graded, 11.5 of 15 points, 7.2 s`, and why, when it is not graded."""
    width = len(str(total))
    took = "time not recorded" if seconds is None else f"{seconds:.1f} s"
    line = f"[{done:>{width}}/{total}] {one_line(student, 80)}: {status}, {score:g} of {points:g} points, {took}"
    return line + (f" ({one_line(reason, 100)})" if status != "graded" and reason else "")


# ---- The class report, for the instructor (instructor/class_report.py) ----

REPORT_HEADINGS = {
    "totals": "Totals",
    "students": "Each student",
    "concepts": "The lesson's ideas across the class",
    "quiz": "The graded quiz's letters",
    "behaviours": "Behaviours across the class, worst first",
    "messages": "What the failing checks said",
    "items": "Each item's scores",
    "statuses": "Submissions not graded",
    "review": "Set aside for review",
    "written": "Written answers still to grade",
    "slowest": "Slowest submissions",
    "no_rubric": "No student's code was graded on the rubric yet.",
    "none_failing": "Every behaviour passes for every student graded.",
    "all_graded": "Every submission was graded.",
    "none_set_aside": "No item is set aside for review.",
    "none_waiting": "Every written answer has a score.",
    "no_times": "No grading time is recorded (the records predate timings).",
    "scored_by_hand": "scored by hand",
    "waiting": "waiting for a score in formgrader",
    "students_intro": "Each name opens the student's feedback page. Scores per item, in the lesson's order; "
                      "late: past the due date; set aside: items set aside for review, and submissions set aside as "
                      "not the student's.",
    "concepts_intro": "The students who pass every behaviour of an idea that they were graded on, out of those "
                      "graded on it; open one to see its behaviours.",
    "quiz_intro": "The letter each student graded on the quiz answered; the right one is marked.",
    "stubs": "Still the stub (Not implemented yet), per item",
    "no_quiz": "No student's quiz answer was graded yet.",
    "who": "who",
}
NO_MESSAGE = "(its failing checks left no message)"


def report_intro(varies: str) -> str:
    return ("Behaviours count the students whose code was graded; an item set aside for review is counted only "
            "under review. Messages are grouped by their wording with the numbers stripped: "
            f"{varies} stands for a number that differs from one student to another.")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def report_summary(students: int, statuses: dict, totals: list, review_items: int, review_students: int,
                   written: int, written_students: int) -> str:
    """The report's first line: the class, its statuses, its totals, and what is left for the instructor."""
    parts = [f"{_plural(students, 'student')}: " + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) + "."]
    if totals:
        parts.append(f"Total: mean {statistics.mean(totals):.2f}, median {statistics.median(totals):g}.")
    parts.append(f"{_plural(review_items, 'item')} set aside for review ({_plural(review_students, 'student')})."
                 if review_items else "Nothing set aside for review.")
    parts.append(f"{_plural(written, 'written answer')} still to grade ({_plural(written_students, 'student')})."
                 if written else "No written answer left to grade.")
    return " ".join(parts)


def all_pass(count: int) -> str:
    return f"{_plural(count, 'more behaviour')} pass for every student graded"


def students(count: int) -> str:
    """How many students: `1 student`, `12 students` (the class report's counts, which come first)."""
    return _plural(count, "student")


def unreadable_record(problem: str) -> str:
    return f"its record cannot be read: {problem}; grade it again (--students ID --force)"


def no_such_folder(folder) -> str:
    return f"no such folder: {folder}"


def no_graded_class(out, has_state: bool) -> str:
    where = f"{out}/state/ holds no student record" if has_state else f"{out} has no state/ folder"
    return (f"no graded class in {out}: {where} (`python -m autograder grade SUBMITTED --out {out}` writes one "
            "per student, and the report with them)")


def no_gradebook(path) -> str:
    return (f"no gradebook at {path}, though the class has student records: pass --db-url if it was graded into "
            "another database")


def gradebook_unreadable(shown_url: str, exc: BaseException) -> str:
    return f"the gradebook {shown_url} could not be read: {type(exc).__name__}: {clip(str(exc), 'message')}"


def report_failed(exc: BaseException, out) -> str:
    """`grade` finished, but writing the class report did not."""
    return (f"the grades are written, but the class report is not: {type(exc).__name__}: {clip(str(exc), 'message')}"
            f". Try `python -m autograder report --out {out}`.")


# ---- LMS grade files and the roster (instructor/lms.py) ----

def submission_note(submission) -> str:
    """What an LMS file says of a submission (grades.json's "submission", or None when grading recorded none):
    `submitted 2025-03-01 10:05 UTC, 1 h 5 min late, penalty 2 points`; "" when nothing is known."""
    if not isinstance(submission, dict):
        return ""
    parts = []
    if submission.get("time"):
        parts.append(f"submitted {_utc(submission['time'])}")
    late = submission.get("late_seconds")
    if isinstance(late, (int, float)) and not isinstance(late, bool):
        parts.append(f"{duration(late)} late" if late > 0 else "on time")
    elif parts:
        parts.append("lateness unknown")
    penalty = submission.get("penalty")
    if isinstance(penalty, (int, float)) and not isinstance(penalty, bool) and penalty:
        parts.append(f"penalty {penalty:g} point{'' if penalty == 1 else 's'}")
    return ", ".join(parts)


def _utc(stamp) -> str:
    from datetime import datetime, timezone
    try:
        when = datetime.fromisoformat(str(stamp))
    except ValueError:
        return clip(str(stamp), "name")
    when = when.astimezone(timezone.utc) if when.tzinfo else when
    return when.strftime("%Y-%m-%d %H:%M UTC")


def duration(seconds: float) -> str:
    """A lateness for people: 40 s, 33 min, 1 h 5 min, 2 d 3 h."""
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    days, hours = divmod(hours, 24)
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if n]
    return " ".join(parts) if parts else f"{secs} s"


LMS_GAPS = {  # why a student is listed beside an LMS file (instructor/lms.py)
    "not_in_roster": "graded, but not in the roster: not in the LMS file",
    "no_lms_id": "graded and in the roster, but without the LMS id the file matches on: not in the LMS file",
    "no_submission": "in the roster, but no submission was graded: not in the LMS file",
    "not_graded": "in the roster, but not graded yet: left blank in the LMS file",
}


def roster_problem(path, problem: str) -> str:
    """The roster given to `export --roster` cannot be used as it is: nothing was written."""
    return f"export: the roster {path} cannot be used: {problem}; nothing was written"


# ---- Similar solution code, for the instructor (instructor/similarity_page.py) ----

SIMILARITY = {
    "title": "similar solution code",
    "pairs": "Pairs to review first",
    "items": "Each exercise's most alike pairs",
    "side_by_side": "Side by side",
    "skipped": "Submissions not compared",
    "no_match": "No two students share code beyond what is left out.",
    "shared": "of its compared code shared",
    "pair_columns": ("#", "students", "best place in an exercise", "shared code (characters)",
                     "exercises: share of each cell"),
    "item_columns": ("#", "students", "shared code (characters)", "share of the first", "share of the second"),
}


def similarity_intro(students: int, pairs: int) -> str:
    return (f"{_plural(students, 'student')} compared, exercise by exercise; {_plural(pairs, 'pair')} share code. "
            "Left out before comparing: the released stub, the reference solution, and code that more than half "
            "of the class wrote alike, so short correct answers do not all match. Names, strings and comments "
            "are made alike first, so renamed variables, reordered lines and changed comments still match. "
            "Pairs come by their best place in one exercise, then by the code they share in all; marked: the "
            "shared parts. This is evidence to read, never a score: no grade changes.")
