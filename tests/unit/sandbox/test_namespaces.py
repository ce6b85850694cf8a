"""autograder.sandbox.namespaces: a fresh kernel for each submission. Each case runs in a process of its own,
which enters new namespaces and reports what it sees."""
import json
import os
import subprocess
import sys

import pytest

from autograder.sandbox import namespaces
from autograder.sandbox.uids import UIDS

ENTER = '''
import json, os, socket
from autograder.sandbox import namespaces
before = {n: os.readlink(f"/proc/self/ns/{n}") for n in ("ipc", "mnt", "net", "uts", "user")}
open("/tmp/lesson20-namespaces-test-left", "w").close()
namespaces.enter(1 << 20)
init, ready = namespaces.start_init(())
namespaces.wait_for_init(ready)
child = os.fork()
if child == 0:
    os._exit(0 if os.getpid() == 2 else 1)
_, status = os.waitpid(child, 0)
caps = [line.split()[1] for line in open("/proc/self/status") if line.startswith("CapEff")][0]
lo = socket.socket(); lo.bind(("127.0.0.1", 0)); lo.listen()
print(json.dumps({"changed": sorted(n for n, v in before.items() if os.readlink(f"/proc/self/ns/{n}") != v),
                  "tmp": os.listdir("/tmp"), "cwd": os.getcwd(), "uid": os.getuid(), "caps": int(caps, 16),
                  "second_pid": os.waitstatus_to_exitcode(status) == 0}))
os.kill(init, 9)
'''


def test_entering_gives_new_namespaces_an_empty_tmp_and_no_capability():
    probe = subprocess.run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).unshare(0x10000000))"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "0":
        pytest.skip("this kernel refuses unprivileged user namespaces")
    done = subprocess.run([sys.executable, "-c", ENTER], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got["changed"] == ["ipc", "mnt", "net", "user", "uts"] and got["tmp"] == [] and got["cwd"] == "/tmp"
    assert got["uid"] == os.getuid() and got["caps"] == 0 and got["second_pid"], got
    assert os.path.exists("/tmp/lesson20-namespaces-test-left")  # the host's /tmp is untouched
    os.unlink("/tmp/lesson20-namespaces-test-left")


@pytest.mark.parametrize("status", [0, 3, -9, -11])
def test_a_process_ends_as_the_notebooks_process_ended(status):
    code = f"from autograder.sandbox import namespaces\nnamespaces.exit_as({status})"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert done.returncode == status


def test_only_the_outermost_mounts_under_the_writable_folders_are_carried(tmp_path, monkeypatch):
    info = tmp_path / "mountinfo"
    info.write_text("".join(f"1 2 0:1 / {point} rw - tmpfs tmpfs rw\n" for point in
                            ("/", "/tmp", "/tmp/venv", "/tmp/venv/lib", "/dev/shm", "/dev/shm/x", "/usr")))
    real_open = open
    monkeypatch.setattr("builtins.open", lambda path, *a, **k: real_open(info if path == "/proc/self/mountinfo"
                                                                         else path, *a, **k))
    assert namespaces._mounts_within(namespaces.WRITABLE) == ["/tmp/venv", "/dev/shm/x"]


LOCK = '''
import json, os, sys
from autograder.sandbox import namespaces
library = open(os.__file__, "rb")
if os.getuid() == 0:  # as in the sandbox: a uid that is not root (mapping root needs CAP_SETFCAP)
    os.setgroups([])
    os.setgid(int(sys.argv[1]))
    os.setuid(int(sys.argv[1]))
    __import__("ctypes").CDLL(None).prctl(4, 1, 0, 0, 0)  # dumpable again, as the sandbox's processes are
namespaces.enter(1 << 20)
with open("/dev/shm/pool", "wb") as f:
    f.write(b"x" * 4096)
pool = open("/dev/shm/pool", "r+b")
namespaces.lock_for_measurement({0, 1, 2})
pool.write(b"y" * 8192)
pool.flush()
try:
    open("/tmp/new", "w")
    tmp = "writable"
except OSError as exc:
    tmp = exc.strerror
print(json.dumps({"pool": os.path.getsize("/dev/shm/pool"), "tmp": tmp, "library": len(library.read(10)),
                  "pool_fd": os.readlink(f"/proc/self/fd/{pool.fileno()}")}))
'''


def test_a_measured_fork_has_no_writable_tmpfs_and_none_of_the_notebooks_descriptors():
    """What a measured call could cut or write into without a new charge: a tmpfs file (by its path, or by a
    descriptor the notebook kept). Read-only, and the descriptor now /dev/null; a library file kept open to
    read is left as it is."""
    probe = subprocess.run([sys.executable, "-c", "import ctypes; print(ctypes.CDLL(None).unshare(0x10000000))"],
                           capture_output=True, text=True)
    if probe.stdout.strip() != "0":
        pytest.skip("this kernel refuses unprivileged user namespaces")
    done = subprocess.run([sys.executable, "-c", LOCK, str(UIDS[-1])], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got == {"pool": 4096, "tmp": "Read-only file system", "library": 10, "pool_fd": "/dev/null"}, got
