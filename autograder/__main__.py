"""Command line: `python -m autograder {check,release,collect,grade,export,report,similarity,release_feedback} ...`
(see --help of each). The instructor commands work on the course in the working folder (or $LESSON20_COURSE)."""
import argparse
import sys
from pathlib import Path


def _instructor(what: str):
    try:
        import autograder.instructor.grade  # noqa: F401
    except ImportError:
        raise SystemExit(f"`{what}` is an instructor command: it needs the course repository "
                         "(solutions/ and autograder/instructor/), which the student package does not include.") from None


DEMO_TAG = "demo"  # the lesson's demonstration cells: `check --only` skips them


def only_item(name: str):
    """The auto-graded item `check --only` names: by its id, or by a name its exercise defines."""
    from .items import AUTO_ITEMS
    for item in AUTO_ITEMS:
        if name in (item.id, *item.names):
            return item
    raise SystemExit(f"--only {name}: no such exercise; name one of "
                     + ", ".join(f"{i.id} ({', '.join(i.names)})" for i in AUTO_ITEMS))


def without_demos(nb) -> int:
    """Empty the cells tagged demo, each in its place (so cell numbers in messages stay the notebook's); how many."""
    demos = [c for c in nb.cells if DEMO_TAG in c.get("metadata", {}).get("tags", [])]
    for cell in demos:
        cell["source"] = ""
    return len(demos)


def cmd_check(args):
    if args.all:
        _instructor("check --all")
    from .attachments import beside
    from .cells import read_notebook
    from .grading import grade_notebook
    from .items import AUTO_ITEMS
    items = [only_item(args.only)] if args.only else list(AUTO_ITEMS)
    try:
        nb = read_notebook(Path(args.notebook))
    except (ValueError, FileNotFoundError) as exc:
        raise SystemExit(str(exc)) from None
    if args.only:
        print(f"{items[0].id} only: {without_demos(nb)} demo cells skipped")
    reference = None
    if args.all:
        from .instructor.reference import reference as instructor_reference
        reference = instructor_reference()
    files, left_out = beside(Path(args.notebook).resolve().parent)  # as the grader hands them in, helpers and data
    for note in left_out:
        print(f"note: {note}")
    result = grade_notebook(nb, [item.id for item in items], _limits(args), reference, files=files)
    for item in items:
        print(result.report(item.id), end="\n\n")
    if args.all:
        total = sum(r.score for r in result.items.values())
        print(f"total {total:g} of {sum(i.points for i in items):g} points")
    else:  # only what the visible checks verified: the rest waits for the grader's hidden checks
        from .report import verified as verified_points
        verified, checked, waiting = (sum(v) for v in zip(*(verified_points(r) for r in result.items.values())))
        print(f"total {verified:g} of {checked:g} points verified here (visible checks only); {waiting:g} more "
              "are checked only when your notebook is graded: the grader also runs hidden ones")
    return 0 if result.status == "graded" and all(r.passed == len(r.outcomes) for r in result.items.values()) else 1


def _course():
    """(the course's folder, its settings) for an instructor command; a message naming what is missing else."""
    from .instructor.settings import CourseError, course_root, read_settings
    try:
        root = course_root()
        return root, read_settings(root)
    except CourseError as exc:
        raise SystemExit(str(exc)) from None


def _private(settings):
    """What this command writes from now on is the instructor's (and the instructors' group's): privacy.py."""
    from .instructor.privacy import set_umask
    set_umask(settings.instructors_group)


def cmd_release(args):
    _instructor("release")
    from .instructor.release import release, stale_files
    root, settings = _course()
    if args.check:
        stale = stale_files(root)
        if stale:
            print("out of date with solutions/ and the checks: " + ", ".join(stale)
                  + ". Run `python -m autograder release`.")
            return 1
        print("lessons/ and the visible checks' expected values are up to date")
        return 0
    _private(settings)
    release(root)
    return 0


def cmd_collect(args):
    _instructor("collect")
    from nbgrader.apps import CollectApp
    from nbgrader.exchange.default.exchange import Exchange
    from .instructor.collect import collect
    from .instructor.privacy import make_private
    root, settings = _course()
    _private(settings)
    app = CollectApp()  # nbgrader's own configuration: the exchange's root and the course id, as collect finds them
    app.initialize([])
    exchange = Path(args.exchange) if args.exchange else Path(Exchange(config=app.config).root)
    submitted = Path(args.submitted_dir) if args.submitted_dir else root / "submitted"
    if not submitted.exists():
        make_private(submitted, settings.instructors_group)
    try:
        manifest = collect(exchange, app.coursedir.course_id, submitted)
    except OSError as exc:
        raise SystemExit(f"collect: {exc.filename or exchange}: {exc.strerror or exc}") from None
    aside = sum(len(e["set_aside"]) for e in manifest["students"].values()) + len(manifest["set_aside"])
    taken = sum(1 for e in manifest["students"].values() if e.get("inbound"))
    print(f"{taken} students' submissions in {submitted}; {aside} submissions set aside (listed above, and in "
          f"{submitted / '.collect.json'}).")
    return 0


def cmd_grade(args):
    _instructor("grade")
    from .instructor.grade import grade_class
    from .instructor.staging import parse_shard
    try:
        shard = parse_shard(args.shard) if args.shard else None
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    root, settings = _course()
    doc = grade_class(args.submitted_dir, args.out, jobs=args.jobs, db_url=args.db_url, limits=_limits(args),
              students=args.students, shard=shard, progress=not args.quiet, force=args.force,
              allow_weaker=args.allow_weaker_isolation, course=root)
    counts = {}
    for row in doc["students"].values():
        counts[row["status"]] = counts.get(row["status"], 0) + 1
    print(f"{len(doc['students'])} students: "
          + ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))
          + f". Wrote {Path(args.out) / 'grades.json'} and grades.csv.")
    from .instructor.class_report import write_report
    from .instructor.messages import report_failed
    try:
        print(f"Class report: {write_report(args.out, args.db_url, settings=settings)}")
    except Exception as exc:  # the grades are safe; the report can be written again on its own
        print(report_failed(exc, args.out), file=sys.stderr)
    return 0


def cmd_export(args):
    _instructor("export")
    from .instructor.gradebook import export, normalise_db_url
    from .instructor.privacy import make_private
    root, settings = _course()
    _private(settings)
    roster = _roster(args)  # before anything is written: a roster that cannot be used stops here
    out = Path(args.out).resolve()
    if not out.exists():
        make_private(out, settings.instructors_group)
    db_url = normalise_db_url(args.db_url or f"sqlite:///{out / 'gradebook.db'}")
    if db_url.startswith("sqlite:///") and not db_url.startswith("sqlite:////"):  # a relative path: from here
        db_url = f"sqlite:///{Path(db_url[len('sqlite:///'):]).resolve()}"
    sources = [str(Path(source).resolve()) for source in args.sources]  # nbgrader works from the repository
    doc = export(out, db_url, sources=sources, settings=settings)
    print(f"Wrote {out / 'grades.json'} and grades.csv for {len(doc['students'])} students.")
    if roster is not None:
        _write_lms(out, doc, args, roster)
    from .instructor.messages import waiting_for_grade

    def waiting(folder):
        print(waiting_for_grade(folder), file=sys.stderr, flush=True)

    failed = {}
    if not args.no_feedback:
        from .instructor.handback import rewrite_feedback
        written, failed = rewrite_feedback(db_url, doc["students"], [out, *sources], waiting=waiting)
        print(f"Wrote the feedback pages of {len(written)} graded students again, with what the gradebook holds now.")
        for student, why in failed.items():  # the grades are written: only the page is the one `grade` wrote
            print(f"{student}: {why}; the page from `grade` is left as it was", file=sys.stderr)
    if sources:  # the shards as one class in OUT: formgrader and release_feedback work there
        from .instructor.merge import merge_class
        copied = merge_class(out, sources, doc["students"], db_url, root, waiting=waiting)
        print(f"Copied {len(copied)} students' submissions, autograded notebooks and feedback pages from the shards "
              f"into {out}; start formgrader there (nbgrader_config.py) to grade the whole class by hand.")
    return 1 if failed else 0


def _roster(args):
    """The roster for --format canvas|moodle (None for csv); a roster that cannot be used ends the command."""
    if args.format == "csv":
        if args.roster or args.per_item:
            raise SystemExit("export: --roster and --per-item are for --format canvas or moodle")
        return None
    if not args.roster:
        raise SystemExit(f"export --format {args.format} needs --roster FILE: a CSV with student_id and the LMS's "
                         "id of each student (see docs/instructors.md, \"Grades for an LMS\")")
    from .instructor.lms import RosterError, read_roster
    try:
        return read_roster(args.roster, args.format)
    except RosterError as exc:
        raise SystemExit(str(exc)) from None


def _write_lms(out: Path, doc: dict, args, roster):
    from .instructor.lms import write_lms
    from .instructor.messages import one_line
    path, written, listing, listed = write_lms(out, doc, args.format, roster, args.per_item)
    print(f"Wrote {path} for {written} students; {len(listed)} listed in {listing}" + (":" if listed else "."))
    for student, lms_id, why in listed:
        print(f"  {student!r}{f' ({one_line(lms_id, 80)})' if lms_id else ''}: {one_line(why, 200)}")


def cmd_report(args):
    _instructor("report")
    from .instructor.class_report import ReportError, write_report
    root, settings = _course()
    _private(settings)
    try:
        path = write_report(args.out, args.db_url, sources=args.sources, settings=settings)
    except ReportError as exc:
        raise SystemExit(str(exc)) from None
    print(f"Wrote {path}")
    return 0


def cmd_similarity(args):
    _instructor("similarity")
    from .instructor.similarity import compare, course_sources, ranking, read_cells
    from .instructor.similarity_page import write_page
    from .instructor.staging import select_students
    from .instructor.messages import no_such_folder, one_line
    submitted = Path(args.submitted_dir)
    if not submitted.is_dir():
        raise SystemExit(no_such_folder(submitted))
    cells = read_cells(submitted, select_students(submitted, args.students))
    matches = compare(cells, course_sources())
    pairs = ranking(matches)
    path = write_page(Path(args.out), cells, matches, pairs)
    compared = len({s for code in cells.code.values() for s in code})
    print(f"{compared} students compared, {len(cells.skipped)} not (see the page); {len(pairs)} pairs share code.")
    for place, pair in enumerate(pairs[:args.top], start=1):
        where = ", ".join(f"{item} {m.shared}" for item, m in sorted(pair.matches.items()))
        print(f"{place:>3}. {one_line(pair.a, 40)} · {one_line(pair.b, 40)}: best place {pair.best}; shared "
              f"characters: {where}")
    print(f"Wrote {path}: the pairs side by side, shared parts marked (evidence to review, not a score)")
    return 0


def cmd_release_feedback(args):
    _instructor("release_feedback")
    from .instructor.release_feedback import release_feedback
    _course()
    return release_feedback(Path(args.out).resolve(), allow_leak=args.allow_reference_leak)


def _limit_options(parser, whose: str):
    """--timeout, --memory-mb and --startup-seconds, whose defaults are Limits' own (limits.py)."""
    from .limits import Limits
    parser.add_argument("--timeout", type=float, default=None,
                        help=f"seconds per exercise{whose}: also one notebook cell's limit, and 3x for running the "
                        f"whole notebook and 3x for all its checks (default {Limits.item_seconds:g})")
    parser.add_argument("--memory-mb", type=int, default=None,
                        help=f"memory per submission in MiB (default {Limits.memory_mb})")
    parser.add_argument("--startup-seconds", type=float, default=None,
                        help="seconds allowed per student, beyond the notebook's and the checks', for starting the "
                        f"sandbox and nbgrader and writing the feedback (default {Limits.startup_seconds:g})")


def _limits(args):
    """The one Limits a command grades under, made from its command line."""
    from .limits import Limits
    fields = {name: value for name, value in (("memory_mb", args.memory_mb),
                                              ("startup_seconds", args.startup_seconds)) if value is not None}
    return Limits.for_timeout(args.timeout, **fields)


def build_parser() -> argparse.ArgumentParser:
    """The command line's parser, every subcommand and option (docs/ examples are parsed with it by tests)."""
    parser = argparse.ArgumentParser(prog="python -m autograder", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("check", help="check one notebook from a terminal (visible checks; --all adds hidden ones)")
    p.add_argument("notebook")
    p.add_argument("--all", action="store_true", help="instructors: run the hidden checks too")
    p.add_argument("--only", metavar="EXERCISE", default=None,
                   help="check one exercise (its id, as accumulate_gradients, or a name it defines, as "
                        "StaticLossScaler), skipping the lesson's demo cells: seconds instead of the whole notebook")
    _limit_options(p, "")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("release", help="regenerate lessons/ from solutions/ (nbgrader generate_assignment) and "
                       "the visible checks' expected values (autograder/checks/expected.pt)")
    p.add_argument("--check", action="store_true",
                   help="only report whether lessons/ and the expected values are up to date")
    p.set_defaults(func=cmd_release)

    p = sub.add_parser("collect", help="collect the exchange's submissions into SUBMITTED/<student_id>/lesson20/: "
                       "each student's latest own submission (by its owner and the exchange's time, never the name or "
                       "timestamp.txt it gives), links refused; the rest set aside with a reason")
    p.add_argument("submitted_dir", nargs="?", default=None,
                   help="where to put them (default: the course's submitted/)")
    p.add_argument("--exchange", default=None,
                   help="nbgrader's exchange folder (default: c.Exchange.root in nbgrader's configuration)")
    p.set_defaults(func=cmd_collect)

    p = sub.add_parser("grade", help="grade a class: SUBMITTED_DIR/<student_id>/lesson20/*.ipynb")
    p.add_argument("submitted_dir")
    p.add_argument("--out", required=True, help="folder for grades.json, grades.csv, feedback/ and the gradebook")
    p.add_argument("--jobs", type=int, default=None, help="students graded at once (default: one per core)")
    p.add_argument("--db-url", default=None, help="SQLAlchemy URL of the gradebook (default: SQLite in --out)")
    _limit_options(p, " per student")
    p.add_argument("--students", nargs="+", default=None, metavar="GLOB",
                   help="grade only students whose id matches one of these patterns, e.g. 'a*'")
    p.add_argument("--shard", default=None, metavar="I/N",
                   help="grade only shard I of N (1-based), so N machines can share one class")
    p.add_argument("--force", action="store_true",
                   help="grade the selected students again even if nothing changed since the last run")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--allow-weaker-isolation", action="store_true",
                   help="grade even where this machine lacks a protection of the sandbox (grade prints which it has): "
                        "what cannot be checked then is recorded as not checked, never as passed")
    p.set_defaults(func=cmd_grade)

    p = sub.add_parser("export", help="rewrite grades.json and grades.csv: the grader's scores from the records, the written answers and overrides from the gradebook (after grading by hand in formgrader)")
    p.add_argument("--out", required=True, help="the --out folder of a `grade` run; the files are written here")
    p.add_argument("--db-url", default=None, help="SQLAlchemy URL of the gradebook (default: SQLite in --out)")
    p.add_argument("--from", dest="sources", nargs="+", default=[], metavar="OUT_DIR",
                   help="also take the students graded into these --out folders (other shards), and copy each "
                        "one's submission, autograded notebook and feedback page into --out, with an "
                        "nbgrader_config.py: formgrader and release_feedback then work on the whole class there")
    p.add_argument("--format", choices=("csv", "canvas", "moodle"), default="csv",
                   help="csv (default): grades.json and grades.csv only; canvas or moodle: also OUT/<format>.csv, "
                        "which that LMS imports as it is, and OUT/<format>-unmatched.csv (needs --roster)")
    p.add_argument("--roster", default=None, metavar="FILE",
                   help="CSV mapping student_id to the LMS's id: sis_user_id or sis_login_id (Canvas), username "
                        "or email (Moodle)")
    p.add_argument("--per-item", action="store_true",
                   help="one LMS column per graded item instead of one for the lesson")
    p.add_argument("--no-feedback", action="store_true",
                   help="leave the feedback pages as `grade` wrote them (by default each graded student's page "
                        "is written again, with the scores and comments given in formgrader since)")
    p.set_defaults(func=cmd_export)

    p = sub.add_parser("report", help="write OUT/report.html: the class's scores, each behaviour's pass rate, what "
                       "the failing checks said, and what is left to grade by hand")
    p.add_argument("--out", required=True, help="the --out folder of a `grade` run; the report is written here")
    p.add_argument("--db-url", default=None, help="SQLAlchemy URL of the gradebook (default: SQLite in --out)")
    p.add_argument("--from", dest="sources", nargs="+", default=[], metavar="OUT_DIR",
                   help="also take the students graded into these --out folders (other shards)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("similarity", help="write OUT/similarity.html: the pairs of students whose solution code is "
                       "most alike, exercise by exercise, side by side (evidence to review, never a score)")
    p.add_argument("submitted_dir", help="the submissions, SUBMITTED_DIR/<student_id>/lesson20/*.ipynb")
    p.add_argument("--out", required=True, help="folder for similarity.html (a `grade` run's --out will do)")
    p.add_argument("--students", nargs="+", default=None, metavar="GLOB",
                   help="compare only students whose id matches one of these patterns")
    p.add_argument("--top", type=int, default=10, help="pairs printed here (default 10; the page shows more)")
    p.set_defaults(func=cmd_similarity)

    p = sub.add_parser("release_feedback", help="nbgrader release_feedback for the class in --out, once the last due "
                       "date (extensions and grace included) has passed; folders nbgrader cannot release are skipped")
    p.add_argument("--out", required=True, help="the --out folder of a `grade` run")
    p.add_argument("--allow-reference-leak", action="store_true",
                   help="release before the last due date, although a page can carry reference code from the "
                        "sandbox to a student who can still submit")
    p.set_defaults(func=cmd_release_feedback)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
