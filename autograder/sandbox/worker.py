"""The processes that run submissions' code, inside the sandbox: the zygote, and the program's entry point.

A *zygote* imports torch once, then forks one *child* per submission when the grader asks (child.py). The
child runs the submission's cells and answers probe requests over four pipes that the grader made for that
submission alone and passed in (requests, replies, stdout, stderr); each graded item's checks run in a fork
of their own. Each child enters fresh namespaces before any student code (namespaces.py), and between
submissions the zygote kills every other process in the sandbox and empties /tmp, so nothing of one
submission is left for the next (cleanup.py). The zygote itself never runs student code,
holds the only channel to the grader that outlives a submission, and is not dumpable, so a child (same
uid) cannot trace it or read its memory.

  grader -> zygote (unix seqpacket socket): {"cmd": "spawn"} + 4 fds -> {"pid": n}
                                            {"cmd": "reap"} -> {"clean": true, "status": code or null}

The parts, each a file of this folder loaded by path (`load_parts`), never imported by name, so that no
student code finds them in sys.modules: protocol (framing), process (limits, system calls), notebook (the
cells as a kernel runs them), cleanup, standins (the reference's code for other exercises), namespaces (a
fresh kernel per submission), guard (the audit hook) and child (the request loop). It decides nothing: the grader loads each answer with
weights_only=True and judges it.
"""
import builtins
import functools
import gc
import json
import os
import signal
import socket
import sys

PARTS = ("protocol", "process", "notebook", "cleanup", "standins", "namespaces", "child")  # beside worker.py


class Parts:
    """The sandbox's own files, each a module object of its own, kept out of sys.modules."""

    def __init__(self, folder: str, guard_path: str):
        self.paths = [os.path.join(folder, f"{name}.py") for name in PARTS] + [guard_path]
        for name, path in zip(PARTS + ("guard",), self.paths):
            setattr(self, name, load_module(path, f"lesson20_{name}"))


PRELOADED = ("numpy", "matplotlib", "matplotlib.pyplot", "tqdm.auto", "sklearn.datasets", "IPython.display",
             "ipywidgets", "autograder.lesson", "autograder.plots", "autograder.quiz", "autograder.selfcheck",
             "IPython.core.inputtransformer2", "pickle", "torch.serialization")


def preload(torch, probe_paths: list, parts):
    """Pay once, here, for what every submission would otherwise pay for (torch._dynamo comes with optim)."""
    import importlib
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    try:  # the first call pays for scikit-learn's lazy imports and file reads (0.7 s); library code only
        importlib.import_module("sklearn.datasets").load_digits(return_X_y=True)
    except Exception:
        pass
    namespace = {"__name__": "lesson20_probes"}
    for path in probe_paths:
        with open(path) as f:
            exec(compile(f.read(), path, "exec"), namespace)
    parts.notebook.ipython_source("%time x = 1")
    p = torch.ones(2, requires_grad=True)
    torch.optim.SGD([p], lr=0.1).step()
    torch.optim.Adam([p], lr=0.1)
    torch.nn.utils.clip_grad_norm_([p], 1.0)


def load_module(path: str, name: str):
    """A file of the grader's (guard.py, the parts) as a module object of its own, kept out of
    sys.modules: no student code finds it by name (see guard.py). Its builtins are a copy taken now, before any
    student code: a notebook that rebinds builtins.open or builtins.len changes nothing the grader's own
    code calls (inside a trusted section above all)."""
    module = type(sys)(name)
    module.__dict__["__builtins__"] = dict(vars(builtins))
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module.__dict__)
    return module


def zygote(probe_paths: list, guard_path: str, lib: str):
    parts = Parts(os.path.dirname(os.path.abspath(__file__)), guard_path)
    parts.process.prefer_for_oom_killer()
    parts.process.apply_limits()
    sys.path.insert(0, lib)  # the student package (autograder, without its instructor part), as students have it
    import torch
    torch.set_num_threads(1)
    preload(torch, probe_paths, parts)
    library_roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, "/usr/lib", "/usr/local/lib",
                     os.path.join(lib, "autograder")]
    internal_files = [*probe_paths, *parts.paths, os.path.abspath(__file__)]
    isolated = os.environ.pop("LESSON20_ISOLATED", "") == "1"
    tmp_bytes = int(os.environ.pop("LESSON20_TMP_BYTES", "0") or 0)
    parts.namespaces.join_new_session_keyring()  # no key of the grader's session is possessed in the sandbox
    fresh = isolated and fresh_namespaces_work(parts, tmp_bytes)
    keep = parts.cleanup.mounts_within(parts.cleanup.WRITABLE) if isolated else frozenset()
    if isolated:  # what warming up wrote (matplotlib's cache) is not there for the first submission either
        for folder in parts.cleanup.WRITABLE:
            parts.cleanup.empty(folder, keep)
    # what the zygote holds now (torch, the preloaded libraries: half a million objects) no child's garbage
    # collector visits: each full collection in a child would otherwise walk all of it (0.2 s a time) and
    # write to every object's header, copying the zygote's pages into the child (Python's gc.freeze advice)
    gc.freeze()
    sock = socket.socket(fileno=int(os.environ.pop("LESSON20_ZYGOTE_FD")))
    parts.process.set_dumpable(False)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the grader ends us with SIGKILL, when it wants to
    children = {}
    sock.send(json.dumps({"ready": True, "fresh_namespaces": fresh}).encode())
    while True:
        try:
            message, fds, _, _ = socket.recv_fds(sock, 1 << 16, 4)
        except OSError:
            os._exit(0)
        if not message:
            os._exit(0)  # the grader is gone
        command = json.loads(message).get("cmd")
        if command == "spawn" and len(fds) == 4:
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                try:
                    sock.close()
                    if not isolated:
                        os.setpgid(0, 0)  # so that reap can kill it and what it starts, and nothing else
                    child = functools.partial(parts.child.Child, fds, torch, parts, library_roots, internal_files,
                                              isolated)
                    if fresh:
                        run_in_fresh_namespaces(parts, child, fds, tmp_bytes)
                    else:
                        child(os.getppid(), functools.partial(parts.process.alive, os.getppid())).run()
                except BaseException:  # the grader shows the last line of stderr when a child ends
                    import traceback
                    traceback.print_exc()
                finally:
                    os._exit(0)
            children[pid] = True
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"pid": pid}).encode())
        elif command == "reap":
            for fd in fds:
                os.close(fd)
            status, clean = parts.cleanup.reap(isolated, children, keep)
            codes = [status[p] for p in children if p in status]
            children.clear()
            sock.send(json.dumps({"clean": clean, "status": codes[-1] if codes else None}).encode())
        else:
            for fd in fds:
                os.close(fd)
            sock.send(json.dumps({"error": f"unknown command {command!r}"}).encode())


def fresh_namespaces_work(parts, tmp_bytes: int) -> bool:
    """Whether this kernel lets a child enter fresh namespaces (namespaces.py): tried once, in a process of its own."""
    pid = os.fork()
    if pid == 0:
        try:
            parts.process.set_dumpable(True)
            parts.namespaces.enter(tmp_bytes)
            init, ready = parts.namespaces.start_init(())
            parts.namespaces.wait_for_init(ready)
            os.kill(init, signal.SIGKILL)  # and with it the PID namespace
            os._exit(0)
        except BaseException:  # noqa: BLE001 - whatever failed, the answer is no
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def run_in_fresh_namespaces(parts, child, fds, tmp_bytes: int):
    """The zygote's child for one submission: enter fresh namespaces, start the new PID namespace's init, run
    the notebook in its second process, and end as that process ends (its exit code is the submission's)."""
    zygote = os.getppid()  # its pid in /proc, which stays the sandbox's: the zygote is in none of our namespaces
    parts.process.set_dumpable(True)  # its /proc/self/uid_map is its own to write only while it is dumpable
    parts.namespaces.enter(tmp_bytes)
    parts.process.set_dumpable(False)  # this process runs no student code
    _, ready = parts.namespaces.start_init(fds)
    notebook = os.fork()
    if notebook == 0:
        try:
            parts.namespaces.wait_for_init(ready)
            child(zygote, functools.partial(parts.process.alive, zygote), fresh=True).run()
        except BaseException:  # the grader shows the last line of stderr when a child ends
            import traceback
            traceback.print_exc()
        finally:
            os._exit(0)
    for fd in (*fds, ready):
        os.close(fd)
    parts.namespaces.exit_as(parts.child.wait(notebook))


if __name__ == "__main__":
    zygote(sys.argv[1].split(os.pathsep), sys.argv[2], sys.argv[3])
