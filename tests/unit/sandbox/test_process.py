"""autograder.sandbox.process: the sandboxed processes' own settings."""
import os
import resource
import signal
import subprocess
import sys

from autograder.sandbox import process


def test_alive_sees_a_running_process_and_not_a_finished_one():
    assert process.alive(os.getpid())
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    assert not process.alive(done.pid)


def test_a_requests_cpu_budget_and_the_quiet_signals_hold_in_a_process_of_their_own():
    code = ("import resource, signal\n"
            "from autograder.sandbox import process\n"
            "signal.signal(signal.SIGUSR1, lambda *a: None)\n"
            "signal.setitimer(signal.ITIMER_REAL, 100)\n"
            "process.cpu_budget(5)\n"
            "soft, hard = resource.getrlimit(resource.RLIMIT_CPU)\n"
            "process.quiet_signals()\n"
            "print(soft, signal.getsignal(signal.SIGUSR1) is signal.SIG_DFL, signal.getitimer(signal.ITIMER_REAL)[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert 5 <= int(out[0]) <= 7 and out[1:] == ["True", "0.0"]
    assert resource.getrlimit(resource.RLIMIT_CPU)[0] == resource.RLIM_INFINITY or signal  # this process untouched


def test_shared_mappings_become_private_with_their_contents():
    """After privatize_shared_memory, what a fork writes into a mapping made shared no longer reaches the parent
    (so the fork pays for every page it writes), and the contents are kept."""
    code = ("import mmap, os\n"
            "from autograder.sandbox import process\n"
            "shared = mmap.mmap(-1, 1 << 16)\n"
            "shared[:5] = b'kept!'\n"
            "made = process.privatize_shared_memory()\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    shared[:5] = b'fork!'\n"
            "    os._exit(0)\n"
            "os.waitpid(pid, 0)\n"
            "print(made >= 1 << 16, bytes(shared[:5]).decode())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "kept!"]
