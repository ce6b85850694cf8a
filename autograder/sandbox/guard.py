"""The audit hook that keeps a submission's code away from the grader's code in the same process.

The child runs the student's cells, then the probes, in one interpreter. What the probes record
and send back is only worth something if the student's code cannot reach them: not by name (the
probes are loaded after the cells, in a namespace nothing hands out), and not by the side doors
Python offers to any code, which this hook closes before the first cell runs (hooks cannot be
removed; see NOTES.md, "Python audit hooks"):

* frames (sys._getframe, a traceback's tb_frame, a generator's gi_frame): the way from a student
  function called by a probe up to the probe's locals;
* the garbage collector's object lists, ctypes, tracing and profiling, new audit hooks, code
  objects made or swapped by hand, marshal: ways to find or rewrite any object in the process;
* opening the sandbox's own files (but for library code: linecache quoting a traceback),
  /proc/<pid>/mem, and writing compiled code (.pyc, .so) to import.

Library code keeps what it needs: frame access is allowed when the code that reads the frame is library
code (collections.namedtuple and typing.NamedTuple finding their caller's module, logging finding its
caller, traceback formatting an exception, matplotlib naming the line that warned), unless it is one of the
library functions that hand the frame back (inspect.currentframe, inspect.stack, traceback.walk_stack)
called from student code. Library code is code whose file is a real file of the read-only installation
(or one of the interpreter's frozen modules, named when the hook is installed): a name the student's code
cannot claim, since compiling code under such a name, or making a code object by hand, is itself flagged.
Every denial raises an exception in the student's code and is kept as a flag: the grader sets the
submission aside for review instead of trusting what the probes saw.

The guard is defence in depth and evidence: the design does not depend on it (see child.py and
stand_in_plan.py: nothing the student's code could read in the sandbox earns a point).

Only the standard library: the zygote loads this file from its read-only folder, before any
student code, and keeps nothing of it where a student's code could find it by name.
"""
import _thread
import builtins
import gc
import os
import sys

# introspection that debugging code uses too: while the notebook runs (when nothing of the grader's exists
# but the child's own locals) it is denied without a flag; while the checks run it is flagged
INTROSPECTION = {"reading the interpreter's frames", "tracing the interpreter", "profiling the interpreter",
                 "listing every object through the garbage collector", "finding objects through the garbage collector"}
# library functions that hand the frames they or the functions they call read back to their caller, when
# student code calls them (bdb's and asyncio's get_stack among them)
HANDS_FRAMES_BACK = {"currentframe", "stack", "trace", "getouterframes", "getinnerframes", "walk_stack", "walk_tb",
                     "get_stack"}
# library functions that read the frame of the code that calls them and keep what they read (the caller's module
# name, a printed stack): the only ones student code may call itself; any other library function that reads a
# frame may hand it back (logging.currentframe is a lambda), so it reads frames only when library code called it
KEEPS_FRAMES = {"namedtuple", "print_stack", "format_stack", "extract_stack"}
TRACING = {"sys.settrace": "tracing the interpreter", "sys.setprofile": "profiling the interpreter"}
ALWAYS_DENIED = {
    "sys._current_frames": "reading every thread's frame",
    "sys._current_exceptions": "reading every thread's exception",
    "gc.get_objects": "listing every object through the garbage collector",
    "gc.get_referrers": "finding objects through the garbage collector",
    "gc.get_referents": "finding objects through the garbage collector",
    "sys.addaudithook": "adding an audit hook",
}
FRAME_ATTRIBUTES = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
COMPILED_SUFFIXES = (".pyc", ".so", ".pyd")
MAX_FLAGS = 20
# torch.set_default_tensor_type rebinds torch.Storage; torch.compile marks nn.Module
REBOUND_BY_API = {"torch.Storage", "torch.nn.Module.___needs_generation_tag_patch"}


class Denied(RuntimeError, ValueError):
    """What the student's code gets for using a door the sandbox keeps shut (a ValueError too, so that
    logging, which expects one when it cannot find its caller, goes on working)."""


def install(library_roots, internal_files):
    """Add the hook; return (trusted, take_flags, checking): a context manager under which the grader's own
    code may use frames (to describe a student's exception), a function that returns the flags raised
    since its last call, and one to call once the notebook has run, from which on introspection is
    flagged too. All stay in the caller's locals, which frames no longer reach."""
    # everything the hook calls is captured now, before any student code could rebind it: C functions only (a
    # Python function of the standard library, os.path.realpath say, looks its module's globals up when called)
    getframe, fspath, opener, get_ident = sys._getframe, os.fspath, open, _thread.get_ident
    gc_enabled, gc_disable, gc_enable = gc.isenabled, gc.disable, gc.enable
    len, isinstance, any = builtins.len, builtins.isinstance, builtins.any  # noqa: A001
    str, bytes, int = builtins.str, builtins.bytes, builtins.int  # noqa: A001
    PathLike, writes = os.PathLike, os.O_WRONLY | os.O_RDWR
    realpath = resolver()
    roots = tuple(os.path.join(realpath(r), "") for r in library_roots if r)
    internal = {realpath(p) for p in internal_files} | {str(p) for p in internal_files}
    state = {"checking": False}
    inside, trusted, collecting = set(), {}, {}  # thread ids: judging now; in a trusted section (how deep); gc paused
    flags, new = [], []

    is_library_file = library_files(library_roots, realpath)
    frozen = is_library_file.frozen

    texts = {}  # library file name -> its text, for part_of_file

    def part_of_file(source, name) -> bool:
        """Whether the code compiled under a library file's name is text of that very file."""
        if isinstance(source, bytes):
            source = source.decode("utf-8", "replace")
        if not isinstance(source, str) or not source.strip() or not is_library_file(name) or name in frozen:
            return False
        if name not in texts and len(texts) < 1000:
            try:
                with opener(name, encoding="utf-8", errors="replace") as f:
                    texts[name] = f.read()
            except OSError:
                texts[name] = ""
        return source.strip() in texts.get(name, "")

    def is_library(frame) -> bool:
        return frame is None or is_library_file(frame.f_code.co_filename)  # None: called from C

    def library_callers() -> bool:
        """The code whose action raised the event and its caller are both library code (frame 3: frames
        0 to 2 are this function, judge() and hook()): for capabilities (ctypes, tracing, compiling) that
        library code must not use on the student's behalf."""
        caller = getframe(3)
        return is_library(caller) and is_library(caller.f_back) if caller is not None else True

    def library_reader() -> bool:
        """The code whose action raised the event is library code (frame 3: frames 0 to 2 are this function,
        judge() and hook()), and does not hand what it read back to student code: the library function the
        student's code called (the outermost of the library's frames under it) is none that hands frames back,
        and is the reader itself only if it keeps what it reads (KEEPS_FRAMES). Library code all the way up (a
        thread of the library's own) may read frames."""
        reader = getframe(3)
        if reader is None or not is_library(reader):
            return reader is None
        entry = reader
        while entry.f_back is not None and is_library(entry.f_back):
            entry = entry.f_back
        if entry.f_back is None:
            return True
        if entry is reader:
            return reader.f_code.co_name in KEEPS_FRAMES
        return entry.f_code.co_name not in HANDS_FRAMES_BACK

    def flagged(what: str):
        if what in INTROSPECTION and not state["checking"]:
            raise Denied(f"the grader's sandbox does not allow {what}: it is how code reaches the grader's own "
                         "code. Leave it out of the notebook you hand in.")
        if what not in flags and len(flags) < MAX_FLAGS:
            flags.append(what)
            new.append(what)
        raise Denied(f"the grader's sandbox does not allow {what}: it is how code reaches the grader's own "
                     "code. Your instructor will grade this submission by hand.")

    def judge(event, args):
        if event in ALWAYS_DENIED:
            flagged(ALWAYS_DENIED[event])
        elif event in TRACING:  # a library's (doctest, cProfile) trace or profile function never reaches student code
            if not library_callers():
                flagged(TRACING[event])
        elif event == "sys._getframe" or (event == "object.__getattr__" and args[1] in FRAME_ATTRIBUTES):
            if not library_reader():
                flagged("reading the interpreter's frames")
        elif event == "code.__new__":  # torch.compile's bytecode rewriting is library code making code objects
            if not library_callers():
                flagged("building a code object by hand")
        elif event == "object.__setattr__" and args[1] in ("__code__", "__globals__"):
            flagged(f"replacing a function's {args[1]}")
        elif event.startswith("ctypes.") or event == "marshal.loads":
            if not library_callers():
                flagged("using ctypes" if event.startswith("ctypes.") else "loading compiled code with marshal")
        elif event == "compile" and isinstance(args[1], str) and args[1] in internal:
            flagged("compiling code under the grader's own file name")  # the grader compiles its own before the hook
        elif event == "compile" and isinstance(args[1], str) and (args[1] in frozen or realpath(args[1]).startswith(roots)):
            # a traceback printed while student code runs parses a library file's own line: that is no claim
            if not library_callers() and not part_of_file(args[0], args[1]):
                flagged("compiling code under a library's file name")
        elif event == "open" and isinstance(args[0], (str, bytes, PathLike)):
            path = realpath(fspath(args[0]) if not isinstance(args[0], bytes) else args[0].decode(errors="replace"))
            mode = args[1] if isinstance(args[1], str) else ""
            writing = any(c in mode for c in "wax+") or (isinstance(args[2], int) and args[2] & writes)
            if path in internal and not library_callers():  # linecache may read them for a traceback
                flagged(f"opening the sandbox's own file {path}")
            elif path.startswith("/proc/") and path.endswith("/mem"):
                flagged("opening a process's memory")
            elif writing and path.endswith(COMPILED_SUFFIXES) and not library_callers():  # torch.compile's .so
                flagged("writing compiled code to import")
        elif event in ("os.rename", "os.link", "os.symlink") and len(args) > 1:
            target = args[1]
            if isinstance(target, (str, PathLike)) and fspath(target).endswith(COMPILED_SUFFIXES) \
                    and not library_callers():
                flagged("writing compiled code to import")

    def grader_code(frame) -> bool:
        return frame is not None and frame.f_code.co_filename in internal

    def hook(event, args):
        me = get_ident()
        if me in inside:  # the hook's own events (reading a frame, opening a library file)
            return
        inside.add(me)
        try:
            # frame 1 raised the event: inside a trusted section, the grader's own code goes unjudged; anyone
            # else's that runs there (a signal handler, a callback, another thread) is judged as anywhere
            if me in trusted and grader_code(getframe(1)):
                return
            judge(event, args)
        finally:
            inside.discard(me)

    class Trusted:
        """While this lasts, the grader's own code on this thread may use the doors; no garbage collection
        (whose callbacks and finalizers are the student's) starts on its own."""

        def __enter__(self):
            me = get_ident()
            if me not in trusted:
                collecting[me] = gc_enabled()
                gc_disable()
            trusted[me] = trusted.get(me, 0) + 1

        def __exit__(self, *exc):
            me = get_ident()
            trusted[me] = trusted.get(me, 1) - 1
            if trusted[me] <= 0:
                del trusted[me]
                if collecting.pop(me, False):
                    gc_enable()

    def take_flags() -> list:
        taken = list(new)
        new.clear()
        return taken

    def checking():
        state["checking"] = True

    sys.addaudithook(hook)
    return Trusted(), take_flags, checking


def resolver():
    """os.path.realpath from C functions only, bound now: the kernel's own answer (an O_PATH descriptor's
    /proc/self/fd link), for a path that does not exist yet its folder's. A path that cannot be opened at all
    comes back as it is."""
    open_path, readlink, close, flags = os.open, os.readlink, os.close, os.O_PATH | os.O_CLOEXEC
    isinstance, str = builtins.isinstance, builtins.str  # noqa: A001

    def canonical(path, tail=""):
        try:
            fd = open_path(path, flags)
        except (OSError, ValueError, TypeError):
            return None
        try:
            found = readlink("/proc/self/fd/" + str(fd))
        except OSError:
            return None
        finally:
            close(fd)
        return found + tail if found.startswith("/") else None

    def realpath(path):
        if isinstance(path, bytes):
            path = path.decode(errors="replace")
        if not isinstance(path, str):
            return path
        found = canonical(path)
        if found is None:
            folder, _, name = path.rpartition("/")
            found = canonical(folder or ("/" if path.startswith("/") else "."), "/" + name if name else "")
        return (found.replace("//", "/") if found is not None else path) or path

    return realpath


def library_files(library_roots, realpath=None):
    """A function that tells whether a code object's file name is library code: a real file of the read-only
    installation (it cannot change, so each name is looked at once), or one of the interpreter's frozen
    modules, named now, before any student code."""
    realpath, stat, len = realpath or resolver(), os.stat, builtins.len  # noqa: A001

    def isfile(name) -> bool:
        try:
            return (stat(name).st_mode & 0o170000) == 0o100000
        except (OSError, ValueError, TypeError):
            return False

    roots = tuple(os.path.join(realpath(r), "") for r in library_roots if r)
    frozen = {f"<frozen {name}>" for name in (*_frozen_names(), "importlib._bootstrap",
                                               "importlib._bootstrap_external")}
    known = {}

    def is_library_file(name) -> bool:
        if name in frozen:
            return True
        found = known.get(name)
        if found is None:
            found = name.startswith(roots) and isfile(name) and realpath(name).startswith(roots)
            if len(known) < 100_000:
                known[name] = found
        return found

    is_library_file.frozen = frozen
    return is_library_file


def _frozen_names() -> list:
    """The interpreter's frozen modules (os, codecs, importlib's bootstrap...), whose code has no file."""
    try:
        import _imp
        return list(_imp._frozen_module_names())
    except (ImportError, AttributeError):
        return []


def integrity_check(namespaces, is_library_file=lambda name: False):
    """A function that lists which of these namespaces' entries were rebound or deleted since now.

    namespaces: {label: a module's dict, or a class}, e.g. the builtins, torch, sys.modules, torch.Tensor.
    What the probes and the child's own reply-writing rely on lives there; a submission that swaps any of
    it is flagged. A module's new entries are not changes (lazy imports add them); a class's are (they
    shadow what its bases define). What library code puts there is no tampering (torch.compile rebinds
    torch.manual_seed and wraps nn.Module.__init__): a function whose code is a library file's. The check uses only what it captured here, so a rebound builtin cannot blind it."""
    saved = []
    for label, namespace in namespaces.items():
        is_class = isinstance(namespace, type)
        entries = vars(namespace) if is_class else namespace
        saved.append((label, entries, tuple(entries.items()), frozenset(entries) if is_class else None))
    missing, len, function = object(), builtins.len, type(integrity_check)  # noqa: A001

    def by_library(value) -> bool:
        return type(value) is function and is_library_file(function.__code__.__get__(value).co_filename)

    def changed() -> list:
        found = []
        for label, entries, items, keys in saved:
            get = entries.get
            for key, value in items:
                now = get(key, missing)
                if now is not value and f"{label}.{key}" not in REBOUND_BY_API and not (now is not missing
                                                                                       and by_library(now)):
                    found.append(f"{label}.{key}")
            if keys is not None:  # copyreg caches __slotnames__ in a class when an instance is first copied
                found += [f"{label}.{key}" for key in entries.keys() - keys if key != "__slotnames__"
                          and f"{label}.{key}" not in REBOUND_BY_API and not by_library(get(key))]
            if len(found) >= MAX_FLAGS:
                return found[:MAX_FLAGS]
        return found

    return changed
