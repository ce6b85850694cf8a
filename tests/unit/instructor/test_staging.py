"""autograder.instructor.staging: which notebook is graded, and why a submission has nothing to grade."""
import json
import shutil

import pytest

from autograder.instructor.grade import gradable
from autograder.instructor.staging import (MAX_NOTEBOOK_BYTES, MAX_SOURCE_STRINGS, select_students, stage,
                                           staged_notebook, submission_fingerprint)
from tests.helpers import SOLUTION_NB, STUDENT_NB
from tests.unit.instructor.test_links import CASES, LEVELS, clean_submission, linked_submission


def submit(root, student, name="lesson20.ipynb", data=None):
    path = root / student / "lesson20" / name
    path.parent.mkdir(parents=True)
    if data is None:
        shutil.copyfile(STUDENT_NB, path)
    else:
        path.write_bytes(data)


def test_staging(tmp_path):
    sub, staging = tmp_path / "submitted", tmp_path / "staging"
    submit(sub, "ok")
    submit(sub, "renamed", "lesson20 (1).ipynb")
    submit(sub, "broken", data=b"{")
    huge = json.loads(STUDENT_NB.read_text())
    huge["cells"][0]["source"] = "x" * (MAX_NOTEBOOK_BYTES + 1)  # code, not outputs: too large to grade
    submit(sub, "huge", data=json.dumps(huge).encode())
    (sub / "empty" / "lesson20").mkdir(parents=True)
    (sub / "bad id").mkdir()
    assert stage("ok", sub, staging).problem == "" and staged_notebook(staging, "ok").exists()
    renamed = stage("renamed", sub, staging)
    assert renamed.notes == ["graded lesson20 (1).ipynb as lesson20.ipynb"] and renamed.problem == ""
    assert "could not be read as a Jupyter notebook" in stage("broken", sub, staging).problem
    assert "without its outputs it would take" in stage("huge", sub, staging).problem
    assert stage("empty", sub, staging).problem == "no notebook in lesson20/"
    assert "not a usable student id" in stage("bad id", sub, staging).problem
    assert stage("absent", sub, staging).problem == "no lesson20/ folder in the submission"


def test_saved_outputs_do_not_count_against_the_size_limit(tmp_path):
    """A notebook holding 25 MB of saved plots is graded (nbgrader clears outputs anyway); the outputs are
    left out of the staged copy, and the code cells are as submitted."""
    nb = json.loads(STUDENT_NB.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["outputs"] = [{"output_type": "display_data", "metadata": {},
                        "data": {"image/png": "A" * (25 * 2**20)}}]
    sub, staging = tmp_path / "submitted", tmp_path / "staging"
    submit(sub, "plots", data=json.dumps(nb).encode())
    staged = stage("plots", sub, staging)
    assert staged.problem == "" and "saved outputs (25 MiB) were left out" in staged.notes[0]
    copy = json.loads(staged_notebook(staging, "plots").read_text())
    assert [c["source"] for c in copy["cells"]] == [c["source"] for c in nb["cells"]]
    assert staged_notebook(staging, "plots").stat().st_size < MAX_NOTEBOOK_BYTES


def test_shards_split_a_class_exactly(tmp_path):
    for i in range(20):
        (tmp_path / f"s{i}").mkdir()
    shards = [set(select_students(tmp_path, shard=(i, 3))) for i in (1, 2, 3)]
    assert set.union(*shards) == set(select_students(tmp_path)) and sum(map(len, shards)) == 20
    assert select_students(tmp_path, ["s1*"]) == ["s1", "s10", "s11", "s12", "s13", "s14", "s15", "s16", "s17",
                                                  "s18", "s19"]


@pytest.mark.parametrize("level,how", CASES)
def test_a_submission_holding_a_link_is_refused_with_the_link_named(tmp_path, level, how):
    """A lesson20/ linked to the instructor's solutions had the solution graded (14/14) and shown in the feedback."""
    submitted, staging = linked_submission(tmp_path, level, how), tmp_path / "staging"
    staged = stage("s", submitted, staging)
    kind = "symbolic link" if how == "symlink" else "hard link"
    assert f"{LEVELS[level]!r} is a {kind}" in staged.problem
    assert not staged_notebook(staging, "s").exists() and not gradable("s", tmp_path / "out")
    assert not any(p.is_file() for p in (staging / "s").rglob("*"))  # nothing of it was copied
    clean = tmp_path / "clean"
    clean_submission(clean)
    assert submission_fingerprint(submitted / "s") != submission_fingerprint(clean / "s")


def test_a_clean_submission_is_staged_with_its_files(tmp_path):
    clean_submission(tmp_path / "submitted")
    staged = stage("s", tmp_path / "submitted", tmp_path / "staging")
    assert (staged.problem, staged.notes) == ("", [])
    folder = tmp_path / "staging" / "s" / "lesson20"
    assert sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()) == [
        "data/table.csv", "helpers.py", "lesson20.ipynb"]
    assert (folder / "lesson20.ipynb").read_bytes() == STUDENT_NB.read_bytes()


def test_the_fingerprint_follows_no_link_and_sees_one_undone(tmp_path):
    submitted = linked_submission(tmp_path, "notebook", "hardlink")
    linked = submission_fingerprint(submitted / "s")
    (tmp_path / "instructor" / "s" / "lesson20" / "lesson20.ipynb").unlink()  # the same bytes, one name now
    assert submission_fingerprint(submitted / "s") != linked
    outside = linked_submission(tmp_path / "again", "assignment folder", "symlink")
    before = submission_fingerprint(outside / "s")
    (tmp_path / "again" / "instructor" / "s" / "lesson20" / "helpers.py").write_text("changed outside\n")
    assert submission_fingerprint(outside / "s") == before  # what the link leads to is not read


def strings_notebook(count: int = 2_100_000) -> bytes:
    """A correct notebook but for one cell's source: `count` one-character strings (18 MiB at 2.1 million)."""
    nb = json.loads(SOLUTION_NB.read_text())
    code = next(c for c in nb["cells"] if c["cell_type"] == "code")
    code["source"] = ["x"] * count
    return json.dumps(nb, indent=1).encode()


def test_a_notebook_past_a_structure_bound_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    from autograder.instructor import staging
    sub = tmp_path / "submitted"
    submit(sub, "strings", data=strings_notebook())
    submit(sub, "ok", data=strings_notebook(MAX_SOURCE_STRINGS))  # at the bound: graded
    parsed = []
    monkeypatch.setattr(staging, "parse_notebook", lambda data, path: parsed.append(path))
    staged = stage("strings", sub, tmp_path / "staging")
    assert parsed == [] and not staged_notebook(tmp_path / "staging", "strings").exists()
    assert f"more than {MAX_SOURCE_STRINGS:,} strings in one list" in staged.problem
    assert "lesson20.ipynb" in staged.problem
    assert stage("ok", sub, tmp_path / "staging").problem == "" and len(parsed) == 1


def test_duplicate_cell_ids_are_given_new_ones_and_noted(tmp_path):
    nb = json.loads(SOLUTION_NB.read_text())
    nb["cells"][5]["id"] = nb["cells"][2]["id"]
    sub = tmp_path / "submitted"
    submit(sub, "dup", data=json.dumps(nb).encode())
    staged = stage("dup", sub, tmp_path / "staging")
    assert staged.problem == "" and staged.notes == [f"repaired: cell 5 had the id {nb['cells'][2]['id']!r} of cell 2 "
                                                     "as well: it was given a new one"]
    ids = [c["id"] for c in json.loads(staged_notebook(tmp_path / "staging", "dup").read_text())["cells"]]
    assert len(set(ids)) == len(ids) and ids[:5] == [c["id"] for c in nb["cells"][:5]]


def test_a_student_folder_linked_to_anything_is_selected_and_refused(tmp_path):
    submitted = tmp_path / "submitted"
    clean_submission(submitted, "ok")
    (submitted / "notes.txt").write_text("not a student")
    (submitted / "to-a-file").symlink_to(STUDENT_NB)
    (submitted / "dangling").symlink_to(tmp_path / "gone")
    assert select_students(submitted) == ["dangling", "ok", "to-a-file"]
    for student in ("dangling", "to-a-file"):
        assert f"{student!r} is a symbolic link" in stage(student, submitted, tmp_path / "staging").problem
