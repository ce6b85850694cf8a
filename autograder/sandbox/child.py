"""One submission's child: it runs the notebook, then serves as the template from which each graded item's
checks get a fork of their own.

The grader's first line gives the cells, each cell's time, the probes' files and their SHA-256, a nonce and
an HMAC key; every message is signed with a key and every reply carries its request's nonce, so what the
student's code writes to the reply pipe cannot pass for an answer. Before the first cell an audit hook
(guard.py) closes the side doors to the grader's code, and a snapshot is taken of what the probes rely on.

Then, for each item, in the lesson's order (see stand_in_plan.py for why the order matters):
  grader -> template: {"fork": item, "nonce"}      template forks; the fork says {"forked": item, "nonce"}
  grader -> fork:     {"key", "imports", "units", "bind", "nonce"}: the item's own key and its stand-ins,
                      read by the fork alone (the template never holds them) -> {"item_ready": true, "nonce"}
  grader -> fork:     {"id", "probe", "size", "cpu_seconds", "nonce"} + spec -> {"id", "size", "nonce"} + answer
  grader -> fork:     {"end": true}; the fork exits, the template ends every process the item started, puts
                      /tmp and /dev/shm back as the notebook left them -> {"item_done": item, "status", "clean"}
A fork that dies mid-request is reported the same way ({"item_done"}), and the template stays: the item's
next request gets a new fork, without running the notebook again.

The template runs no student code of its own accord: its signal handlers and timers are reset, and it is
not dumpable, so no process of the same uid (an item's fork) can read or write its memory.
"""
import gc
import hashlib
import io
import os
import signal
import sys
import types

SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


class Replies:
    """What the child and its forks write to the grader: signed messages, and tamper flags."""

    def __init__(self, parts):
        self.parts = parts
        # our own references, taken before any student code: it may rebind module attributes and builtins
        import json
        self.dumps, self.loads = json.dumps, json.loads
        self.write, self.str = os.write, str
        self.hmac_digest = parts.process.hmac_function()
        self.key = b""                   # the key of whoever writes now: the child's, or the item's fork's
        self.replies, self.reader = None, None
        self.changed = lambda: []        # the integrity check, once the snapshot is taken
        self.take_flags = lambda: []     # the audit hook's, once it is installed

    def plain_line(self, header: dict) -> bytes:
        """The header, without json (which the student's code may have rebound): our own values only, and
        the flag that says why."""
        parts = []
        for name, value in header.items():
            if name in ("flags", "problems"):
                continue
            if value is True or value is False or value is None:
                text = {True: "true", False: "false", None: "null"}[value]
            elif type(value) is int:
                text = self.str(value)
            elif type(value) is str and all(c in SAFE for c in value):
                text = '"' + value + '"'
            else:
                continue
            parts.append('"' + name + '": ' + text)
        if "ready" in header:
            parts.append('"problems": []')
        if "id" in header:
            parts = [p for p in parts if not p.startswith('"size"')] + ['"size": 0']
        parts.append('"flags": ["rebinding what the grader\'s replies rely on"]')
        return ("{" + ", ".join(parts) + "}").encode()

    def send(self, header: dict, payload: bytes = b""):
        # signed with the grader's key, which no student code can read (see protocol.py)
        if self.changed():
            line, payload = self.plain_line(header), b""
        else:
            line = self.dumps(header).encode()
        self.parts.process.write_all(self.replies, self.parts.protocol.signed(self.key, line, payload,
                                                                              self.hmac_digest), self.write)

    def flags(self) -> list:
        try:
            return self.take_flags() + [f"rebinding {name}, which the grader relies on" for name in self.changed()]
        except BaseException:  # the check itself was broken: that too is tampering
            return ["breaking the grader's own checks"]

    def next_message(self):
        """The grader's next JSON line, or None at the end of the pipe."""
        line = self.reader.line()
        return None if line is None else self.loads(line)



class Template(Replies):
    """The child once its notebook has run: it forks one process per item, one at a time, and cleans up after
    each (a base of Child, whose serve_item each fork runs)."""

    def become_template(self) -> list:
        """Fork the template off the notebook's process, which then exits: the notebook's threads end with it,
        and every other process the notebook started is ended, so that nothing but the item's own fork can
        use or free memory while an item's call is measured. Returns the flags for what is left running."""
        process = self.parts.process
        flush(self.stdout, self.stderr)
        self.one_thread()
        gc.collect()  # here, where the student's finalizers may still run: as student code, judged like any other
        # the notebook's processes are ended first (a fork bomb's sleepers would leave no process to fork); its
        # threads are no flag here, where they end with the process
        early = [f for f in self.alone() if "thread" not in f]
        try:
            pid = os.fork()
        except OSError:  # still none to be had: this process serves as the template, threads and all
            return early + ["leaving the grader no process to fork"]
        if pid != 0:
            os._exit(0)  # the notebook's process, and its threads with it
        # what exists now the forks' garbage collector never visits: a collection would write to every object's
        # header and so copy every page of the template into the fork, memory a measured call would be charged
        gc.freeze()
        process.quiet_signals()
        with self.trusted:  # ctypes, for prctl: the audit hook's door for the grader's own calls
            process.set_dumpable(False)
            process.become_subreaper()
        left = self.alone()
        left += [f for f in early if f not in left]
        with self.trusted:
            if self.isolated:  # the sandbox's own IPC namespace; outside it these are the machine's
                self.parts.cleanup.remove_ipc()
            process.privatize_shared_memory()
            self.malloc_trim()
        return left

    def alone(self) -> list:
        """End every other process of the sandbox but the zygote; a flag if this process runs another thread
        (started by code the student registered to run at a fork)."""
        cleanup = self.parts.cleanup
        # the zygote by its pid in /proc: in fresh namespaces it is in no PID namespace of ours
        others = {pid: there for pid, there in cleanup.processes(self.isolated, os.getpgid(0)).items()
                  if there != self.zygote}
        ended = cleanup.end_processes(others)
        threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else 1
        return ([] if ended else ["leaving processes the grader could not end"]) + (
            [] if threads == 1 else ["running code of its own while the grader forks (a thread)"])

    def fresh_probes(self) -> dict:
        """A new copy of the probes, for one request."""
        return self.fresh_namespace("lesson20_probes")

    def fresh_namespace(self, name: str) -> dict:
        """The probes' files executed into a new namespace: each request has two, the probes' own and the one the
        objects they hand to the student's code come from (harness.Context's props)."""
        namespace = {"__name__": name}
        for code in self.probes_code:
            self.exec_(code, namespace)
        return namespace

    def traceback_entries(self, tb) -> list:
        return self.parts.notebook.traceback_entries(tb, self.trusted)

    def serve_items(self):
        """Fork one process per item the grader names, one at a time, and clean up after each."""
        cleanup = self.parts.cleanup
        keep = cleanup.mounts_within(cleanup.WRITABLE) if self.isolated else frozenset()
        snapshot = cleanup.Snapshot(cleanup.WRITABLE, keep) if self.isolated else None
        while True:
            command = self.next_message()
            if command is None or "fork" not in command:
                return
            item, nonce = self.str(command.get("fork")), self.str(command.get("nonce", ""))
            flush(self.stdout, self.stderr)  # what is buffered is written once, not by every fork
            self.one_thread()
            with self.trusted:  # no code of the student's runs in the fork before its first request
                pid = self.parts.process.raw_fork()
            if pid == 0:
                try:
                    self.serve_item(item, nonce)
                finally:
                    os._exit(0)
            status = wait(pid)
            left = self.alone()
            if self.isolated:
                with self.trusted:
                    cleanup.remove_ipc()
            restored = snapshot.restore() if snapshot is not None else True  # False: too large to keep, left as is
            self.send({"item_done": item, "nonce": nonce, "status": status, "clean": not left, "restored": restored,
                       "flags": left})


class Child(Template):
    """The request loop of one submission: the notebook, the template's loop, and one item's fork."""

    def __init__(self, fds, torch, parts, library_roots, internal_files, isolated=True, zygote=None,
                 zygote_alive=lambda: True, fresh=False):
        """zygote: its pid in /proc (the sandbox's PID namespace); zygote_alive: whether it still runs; fresh:
        whether this child entered namespaces of its own (namespaces.py), which a measured fork can do again."""
        super().__init__(parts)
        self.fresh = fresh
        self.fds, self.torch = fds, torch
        self.library_roots, self.internal_files, self.isolated = library_roots, internal_files, isolated
        self.save, self.load, self.exec_, self.read, self.int = torch.save, torch.load, exec, os.read, int
        self.one_thread = lambda: torch.set_num_threads(1)  # OpenMP's thread pool does not survive a fork
        self.malloc_trim = parts.process.heap_trimmer()
        self.stdout, self.stderr = sys.__stdout__, sys.__stderr__
        self.trusted = parts.notebook._Untrusted()
        self.zygote, self.zygote_alive = zygote, zygote_alive
        self.namespace = self.probes_code = None

    # ---- the notebook ----

    def run(self):
        requests, self.replies, out, err = self.fds
        for fd, target in ((requests, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
            os.close(fd)
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        self.parts.process.set_dumpable(True)  # for itself and its own children; the zygote stays undumpable
        read = self.read
        self.reader = self.parts.protocol.Reader(lambda: read(0, 1 << 20) or None)  # the requests pipe, on fd 0
        sys.stdin = io.StringIO()  # input() gets EOFError, as in a kernel without stdin; fd 0 is the requests pipe
        notebook = self.next_message() or {}
        nonce = self.str(notebook.get("nonce", ""))
        self.key = bytes.fromhex(notebook.pop("key", ""))
        self.probes_code = compile_probes(notebook)
        if self.probes_code is None:
            self.send({"ready": False, "nonce": nonce, "error": "the probes' files do not match the grader's"})
            return
        nb = self.parts.notebook
        nb.put_files(notebook.pop("files", None) or {}, self.isolated)
        self.namespace = nb.main_namespace()
        shell = self.namespace["get_ipython"].shell
        checking = None
        if notebook.get("audit_hook", True) is not False:  # off only by the tests' switch (session.py)
            self.trusted, self.take_flags, checking = self.parts.guard.install(self.library_roots, self.internal_files)
        self.changed = self.parts.guard.integrity_check(nb.guarded_namespaces(self.torch),
                                                        self.parts.guard.library_files(self.library_roots))
        describe_exception, entries = self.fresh_probes()["describe_exception"], self.traceback_entries
        describe = lambda exc: describe_exception(exc, entries)  # noqa: E731
        problems = nb.load_cells(notebook.get("cells", []), self.namespace, describe, notebook.get("cell_seconds", 0),
                                 lambda index: self.send({"cell": index}), self.zygote_alive, self.trusted, shell)
        with self.trusted:  # freed heap memory goes back to the system: the grader's memory baseline holds no cache
            self.malloc_trim()
        if checking is not None:
            checking()  # the grader's probes run from now on: reading frames or the garbage collector is flagged
        alone = self.become_template()
        self.send({"ready": True, "nonce": nonce, "problems": problems, "flags": self.flags() + alone})
        self.serve_items()

    # ---- one item's fork ----

    def serve_item(self, item: str, nonce: str):
        """Receive the item's key and stand-ins, then answer its probe requests until the grader ends it."""
        self.one_thread()
        with self.trusted:
            self.parts.process.set_dumpable(True)
        self.send({"forked": item, "nonce": nonce})
        setup = self.next_message()
        if setup is None:
            return
        self.key = bytes.fromhex(self.str(setup.pop("key", "")))
        if setup.get("measured") and self.fresh:  # before any student code runs in this fork (memory.py)
            with self.trusted:
                try:
                    self.parts.namespaces.lock_for_measurement({0, 1, 2, self.replies})
                except OSError:  # the kernel refused: the call is measured as the notebook left the fork
                    pass
        stand_ins = self.parts.standins.compile_stand_ins(setup.get("imports", ""), setup.get("units") or [],
                                                          self.exec_)
        bind = [self.str(n) for n in setup.get("bind") or [] if self.str(n) in stand_ins]
        ready = {"item_ready": True, "nonce": self.str(setup.get("nonce", ""))}
        if setup.get("census"):  # the tests' switch only (session.py): what this fork can reach
            restore = self.parts.standins.bind_stand_ins(self.namespace, stand_ins, bind)
            with self.trusted:
                ready["census"] = census(setup["census"])
            restore()
        del setup
        self.send({**ready, "flags": self.flags()})
        while True:
            request = self.next_message()
            if request is None or request.get("end"):
                return
            data = self.reader.exact(self.int(request["size"]))
            if data is None:
                return
            self.answer(request, data, stand_ins, bind)

    def answer(self, request: dict, data: bytes, stand_ins: dict, bind: list):
        process = self.parts.process
        process.cpu_budget(request.get("cpu_seconds"))
        spec = self.load(io.BytesIO(data), weights_only=True)
        # the probes' traceback reader is the sandbox's own, bound before any student code (what the probes' files
        # would look up now, `types` or `BaseException`, the notebook may have rebound)
        props = self.fresh_namespace("lesson20_props")
        probes = self.fresh_probes()
        restore = self.parts.standins.bind_stand_ins(self.namespace, stand_ins, bind)
        try:
            answer = probes["run"](self.namespace, request["probe"], spec, "cpu", props, self.traceback_entries)
        finally:
            restore()
        if not self.zygote_alive():  # the code killed the zygote: the sandbox is going down, this probe did it
            os._exit(70)
        reply = {"id": request["id"], "nonce": self.str(request.get("nonce", "")), "flags": self.flags()}
        if reply["flags"]:  # what would write the answer may be the student's now: send no answer
            self.send({**reply, "size": 0})
            return
        buffer = io.BytesIO()
        self.save(answer, buffer)
        payload = buffer.getvalue()
        del answer, buffer
        with self.trusted:
            self.malloc_trim()
        self.send({**reply, "size": len(payload)}, payload)


def compile_probes(notebook: dict, sha256=hashlib.sha256):
    """The probes' files, in order (isolation.PROBE_FILES), compiled as the grader hashed them; None if any
    differs or is missing."""
    code = []
    paths, hashes = list(notebook.get("probes") or []), list(notebook.get("probes_sha256") or [])
    for path, digest in zip(paths, hashes):
        with open(path, "rb") as f:
            source = f.read()
        if sha256(source).hexdigest() != digest:
            return None
        code.append(compile(source, path, "exec"))
    return code if paths and len(code) == len(paths) == len(hashes) else None


def flush(*streams):
    for stream in streams:
        try:
            stream.flush()
        except (OSError, ValueError, AttributeError):
            pass


def wait(pid: int):
    """The exit code of the item's fork (negative: the signal that ended it)."""
    while True:
        try:
            _, code = os.waitpid(pid, 0)
            return os.waitstatus_to_exitcode(code)
        except InterruptedError:
            continue
        except ChildProcessError:
            return None


def census(wanted: dict) -> dict:
    """Which of these SHA-256 digests of stripped source lines occur in any text this process can reach:
    every object the garbage collector tracks, what they refer to, code objects' constants, and the locals of
    every frame on the stack. {"forbidden": [...], "expected": [...]} -> the same keys, with the digests found."""
    digests = {str(d) for key in ("forbidden", "expected") for d in wanted.get(key) or []}
    found = set()
    roots = gc.get_objects() + [sys.modules]
    frame = sys._getframe(0)
    while frame is not None:
        roots += [frame.f_locals, frame.f_globals, frame.f_code]
        frame = frame.f_back
    seen, stack = set(), roots
    while stack:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (str, bytes, bytearray)):
            text = obj if isinstance(obj, str) else bytes(obj).decode("utf-8", "replace")
            for line in text.splitlines():
                digest = hashlib.sha256(line.strip().encode("utf-8", "surrogatepass")).hexdigest()
                if digest in digests:
                    found.add(digest)
            continue
        if isinstance(obj, types.CodeType):
            stack += [*obj.co_consts, obj.co_filename, *obj.co_names]
        stack += gc.get_referents(obj)
    return {key: sorted(found & {str(d) for d in wanted.get(key) or []}) for key in ("forbidden", "expected")}
