"""What a student or an instructor reads: the grader's messages, each found here by its name.

The code that decides which message applies stays where the decision is made (backends.py,
grading.py, report.py, instructor/grade.py); the words are here, grouped by who reads them:

* under a failing check (the student): a probe's answer, the sandbox's failures, the time budgets;
* above an item's checks (the student): the notebook's errors, its repairs, stand-ins, review;
* an item's report (the student): its header and rubric lines;
* the feedback page of a submission that could not be graded (the student);
* the reasons the notebook's run gives grades.json (the instructor).

What only the instructor reads (staging's and grading's reasons, progress, the class report, the LMS files,
the similarity page) is in instructor/messages.py.

The status words are vocabularies, not wording: each is a Literal beside what carries it
(sandbox.errors.SandboxReason, checks.read.CheckReason, grading.NotebookStatus,
instructor.state.StudentStatus). The last two are written to the results files and grades.json,
so their words never change.

First, `clip`: how much of a text that came from student code (or a failing tool) is kept. Such
text is whatever the code wrote, so it is always cut before it is stored or shown, and cut
without first writing out the whole value: a string is sliced, anything else is written by a
bounded repr (reprlib), which stops after a few items and levels however large the value is.
"""
import html
import reprlib

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
