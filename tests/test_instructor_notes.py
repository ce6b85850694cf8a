"""Instructor notes: the ungraded details of an exercise (edge cases no check reaches, what the reference leaves
behind, where torch differs beyond the checks' tolerance) are `# Instructor note` comments inside the instructor
notebook's solution regions. The release replaces those regions with stubs, so neither the student notebook nor the
student package holds them."""
from tests.helpers import ROOT, SOLUTION_NB, STUDENT_NB, read, solution_regions

MARK = "# Instructor note"


def instructor_notes() -> list:
    """Each note as its comment lines, from its `# Instructor note` line to the last comment line after it."""
    notes = []
    for _, lines in solution_regions(read(SOLUTION_NB)):
        note = None
        for line in lines:
            text = line.strip()
            if text.startswith(MARK):
                note = [text.lstrip("# ")]
                notes.append(note)
            elif note is not None and text.startswith("#"):
                note.append(text.lstrip("# "))
            else:
                note = None
    return notes


def note_lines() -> set:
    """The notes' lines long enough to be telling (short ones, as "returns 0.0.", could be anything)."""
    return {line for note in instructor_notes() for line in note if len(line) >= 30}


def test_the_ungraded_details_are_instructor_notes():
    text = " ".join(" ".join(note) for note in instructor_notes())
    for detail in ("19660.80078125", "returns (0.0, True)", "nothing is zeroed on return", "raises ValueError for 0"):
        assert detail in text, f"no instructor note says {detail!r}"
    assert len(note_lines()) >= 10


def test_the_student_notebook_holds_no_instructor_note():
    student = STUDENT_NB.read_text(encoding="utf-8")
    assert MARK not in student
    leaked = sorted(line for line in note_lines() if line in student)
    assert not leaked, f"instructor notes in {STUDENT_NB.name}: {leaked[:2]}"


def test_the_student_package_holds_no_instructor_note():
    """The files the wheel is built from: autograder/ but its instructor/ folder (tests/integration/test_wheel.py
    checks that the built wheel holds no more than those)."""
    files = [p for p in (ROOT / "autograder").rglob("*") if p.is_file() and "instructor" not in p.parts
             and p.suffix in (".py", ".ini", ".txt", ".md")]
    assert len(files) >= 20
    for path in files:
        text = path.read_text(encoding="utf-8")
        leaked = sorted(line for line in note_lines() if line in text)
        assert MARK not in text and not leaked, f"instructor notes in {path.relative_to(ROOT)}: {leaked[:2]}"
