"""What the instructor reads: the grader's messages for the instructor's commands, each found here by its name.

Grouped by where they show: why a submission is not staged or graded (grades.json's reason), what `grade` prints
while it works, the class report, the LMS files' gaps and the similarity page. What a student reads is in
autograder/text.py, with `clip`, which cuts any text that came from student code.
"""
import statistics

from ..text import clip, repaired_note


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
