"""autograder.sandbox.cleanup: the writable folders put back as they were, the processes an item started ended."""
import os
import subprocess
import sys

from autograder.sandbox.cleanup import Snapshot, end_processes, processes


def test_a_snapshot_puts_files_folders_and_links_back(tmp_path):
    (tmp_path / "kept").mkdir()
    (tmp_path / "kept" / "mp_utils.py").write_text("X = 1\n")
    os.symlink("kept/mp_utils.py", tmp_path / "link")
    snapshot = Snapshot([str(tmp_path)])
    assert snapshot.restore() and snapshot.complete  # nothing changed: nothing to do
    (tmp_path / "kept" / "mp_utils.py").write_text("X = 2\n")
    (tmp_path / "stash.pt").write_bytes(b"the last item's answer")
    os.unlink(tmp_path / "link")
    assert snapshot.restore()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kept", "link"]
    assert (tmp_path / "kept" / "mp_utils.py").read_text() == "X = 1\n" and os.readlink(tmp_path / "link") == "kept/mp_utils.py"


def test_a_folder_too_large_to_keep_is_said_so(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 2048)
    snapshot = Snapshot([str(tmp_path)], max_bytes=1024)
    (tmp_path / "new").write_text("y")
    assert not snapshot.complete and not snapshot.restore()


def test_the_processes_started_since_are_ended():
    group = os.getpgid(0)
    before = processes(False, group)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = {pid: there for pid, there in processes(False, group).items() if pid not in before}
    assert started.get(child.pid) == child.pid  # one PID namespace here: the same pid in /proc
    assert end_processes(started) and child.poll() is not None


def test_a_process_whose_first_thread_ended_alone_still_counts_as_running():
    """Its /proc entry says zombie, yet its other thread runs: it is ended like any other (round 6's helper)."""
    code = ("import ctypes, threading, time\n"
            "threading.Thread(target=lambda: time.sleep(60)).start()\n"
            "time.sleep(0.2)\n"
            "ctypes.CDLL(None).syscall(60, 0)  # SYS_exit: this thread only\n")
    child = subprocess.Popen([sys.executable, "-c", code])
    import time
    time.sleep(1.0)
    from autograder.sandbox.cleanup import running
    assert running(child.pid)
    assert end_processes({child.pid: child.pid}) and child.wait(timeout=5) is not None
