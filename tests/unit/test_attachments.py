"""autograder.attachments: what of a submission's folder goes into the sandbox beside the notebook."""
import os

from autograder import attachments


def test_helpers_and_data_are_taken_notebooks_checkpoints_and_links_are_not(tmp_path):
    (tmp_path / "lesson20.ipynb").write_text("{}")
    (tmp_path / "other.ipynb").write_text("{}")
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "tokens.txt").write_text("a b c")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "helpers-checkpoint.py").write_text("old")
    (tmp_path / "__pycache__").mkdir()
    (tmp_path / "__pycache__" / "helpers.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "timestamp.txt").write_text("2026-12-01")
    os.symlink("/etc/passwd", tmp_path / "passwd.txt")
    files, notes = attachments.beside(tmp_path, ignore=("timestamp.txt",))
    assert files == {"data/tokens.txt": b"a b c", "helpers.py": b"X = 1\n"}
    assert notes == []


def test_sizes_and_counts_are_capped_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(attachments, "MAX_FILES", 3)
    (tmp_path / "big.bin").write_bytes(b"x" * (attachments.MAX_FILE_BYTES + 1))
    for i in range(5):
        (tmp_path / f"part{i}.txt").write_text(str(i))
    files, notes = attachments.beside(tmp_path)
    assert sorted(files) == ["part0.txt", "part1.txt", "part2.txt"]
    assert any("big.bin" in n and "larger than" in n for n in notes)
    assert any("part3.txt" in n and "at most 3 files" in n for n in notes)


def test_odd_names_and_deep_folders_are_left_out(tmp_path):
    (tmp_path / "we ird;name.py").write_text("x")
    deep = tmp_path / "a" / "b" / "c" / "d"
    deep.mkdir(parents=True)
    (deep / "too_deep.txt").write_text("x")
    (tmp_path / "a" / "ok.txt").write_text("y")
    files, notes = attachments.beside(tmp_path)
    assert files == {"a/ok.txt": b"y"}
    assert any("we ird;name.py" in n for n in notes)


def test_a_missing_folder_gives_nothing(tmp_path):
    assert attachments.beside(tmp_path / "nope") == ({}, [])
