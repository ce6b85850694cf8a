"""autograder.instructor.staging: which notebook is graded, and why a submission has nothing to grade."""
import json
import shutil

from autograder.instructor.staging import MAX_NOTEBOOK_BYTES, select_students, stage, staged_notebook
from tests.helpers import STUDENT_NB


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
    assert "larger than 20 MiB even without its outputs" in stage("huge", sub, staging).problem
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
