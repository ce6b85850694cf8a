"""Feedback goes to students only once nobody can still submit, and one odd folder never stops the class.

A later exercise's fork holds earlier exercises' reference code (stand-ins: docs/grading-design.md "No fork holds its own item's
reference"), and code that disassembles it can carry it into the check messages. scrub.py withholds what it can
find in plain encodings, but no search finds every encoding, and a student who can still submit could use
what a page gave away. So the feedback pages are released only after the last due date of the class
(course.toml's due date or latest extension, plus the grace period) has passed; before it, only with an
option that names what it costs (`--allow-reference-leak`).

GuardedReleaseFeedback is nbgrader's own release_feedback exchange step with that rule, installed by the
course's nbgrader_config.py (so `nbgrader release_feedback` obeys it), and with one more: a feedback page whose
folder lacks nbgrader's timestamp.txt or submission_secret.txt (a submission not made by nbgrader submit, a
page written for a submission that could not be graded) is skipped with a warning naming it, instead of
stopping the release for the whole class with FileNotFoundError.
"""
import glob
import os
import re
import shutil
from datetime import datetime, timezone
from pathlib import Path

from nbgrader.exchange.default.release_feedback import ExchangeReleaseFeedback
from nbgrader.utils import notebook_hash
from traitlets import Bool, Unicode

from .settings import iso, read_settings

ALLOW_LEAK = "--allow-reference-leak"


def too_early(course: str, now: datetime = None) -> str:
    """Why feedback may not be released yet ("" when it may): the last due date of the course in `course`."""
    last = read_settings(Path(course)).last_due() if course else None
    now = now or datetime.now(timezone.utc)
    if last is None or now >= last:
        return ""
    return (f"feedback is not released before {iso(last)}, the last due date of the class (extensions and the grace "
            f"period included; course.toml): a page can carry reference code from the sandbox to a student who can "
            f"still submit. To release it now anyway, pass {ALLOW_LEAK} (python -m autograder release_feedback) or "
            f"--GuardedReleaseFeedback.allow_reference_leak=True (nbgrader release_feedback)")


class GuardedReleaseFeedback(ExchangeReleaseFeedback):

    course = Unicode("", help="The course whose course.toml holds the due dates (course.course_config sets "
                     "it).").tag(config=True)
    allow_reference_leak = Bool(False, help="Release feedback before the last due date has passed, although a page "
                                "can carry reference code to a student who can still submit.").tag(config=True)

    def copy_files(self):
        early = too_early(self.course)
        if early and not self.allow_reference_leak:
            self.fail(early)
        exclude = set(self.coursedir.student_id_exclude.split(",")) if self.coursedir.student_id_exclude else set()
        pattern = re.escape(os.path.sep).join([
            self.coursedir.format_path(self.coursedir.feedback_directory, "(?P<student_id>.*)",
                                       self.coursedir.assignment_id, escape=True), "(?P<notebook_id>.*).html"])
        for html_file in sorted(glob.glob(os.path.join(self.src_path, "*.html"))):
            found = re.match(pattern, html_file)
            if found is None or found["student_id"] in exclude:
                continue
            self._release(html_file, found["student_id"], found["notebook_id"])

    def _release(self, html_file: str, student: str, notebook: str):
        folder = os.path.dirname(html_file)
        try:
            with open(os.path.join(folder, "submission_secret.txt")) as secret, \
                    open(os.path.join(folder, "timestamp.txt")) as stamp:
                submission_secret, timestamp = secret.read(), stamp.read()
        except (OSError, UnicodeError) as exc:
            self.log.warning(f"Not released: the feedback of {student!r} ({folder}) has no readable "
                             f"{Path(getattr(exc, 'filename', '') or 'exchange file').name}: its submission was not made "
                             "by nbgrader submit, or could not be graded")
            return
        checksum = notebook_hash(secret=submission_secret, notebook_id=notebook)
        part = os.path.join(self.dest_path, f"{checksum}-tmp.html")
        shutil.copy(html_file, part)
        shutil.move(part, os.path.join(self.dest_path, f"{checksum}.html"))  # whole, old or new
        self.log.info(f"Released feedback for {student!r} on {self.coursedir.assignment_id}/{notebook} ({timestamp})")


def release_feedback(out: Path, allow_leak: bool = False) -> int:
    """`python -m autograder release_feedback`: nbgrader's release_feedback, run in the class folder `out`
    (whose nbgrader_config.py loads the course's), with the rule above."""
    from nbgrader.apps import ReleaseFeedbackApp
    from ..items import ASSIGNMENT
    here = os.getcwd()
    os.chdir(out)
    try:
        app = ReleaseFeedbackApp()
        app.initialize([ASSIGNMENT, *(["--GuardedReleaseFeedback.allow_reference_leak=True"] if allow_leak else [])])
        try:
            app.start()
        except SystemExit as exc:  # nbgrader's fail(): the reason is logged
            return int(exc.code or 1)
    finally:
        os.chdir(here)
    return 0
