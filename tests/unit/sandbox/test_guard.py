"""autograder.sandbox.guard: the audit hook denies the side doors to student code, lets library code use
frames, and flags each denial; the integrity check sees rebound names. An audit hook cannot be removed,
so each case runs in a fresh interpreter."""
import json
import subprocess
import sys
import textwrap
import pytest

from autograder.items import PACKAGE_DIR

GUARD = PACKAGE_DIR / "sandbox" / "guard.py"

SETUP = f'''
import importlib.util, json, os, sys, tempfile
spec = importlib.util.spec_from_file_location("guard", {str(GUARD)!r})
guard = importlib.util.module_from_spec(spec)
spec.loader.exec_module(guard)
GRADER = os.path.join(tempfile.mkdtemp(), "grader.py")  # stands for the sandbox's own files
with open(GRADER, "w") as f:
    f.write("import sys\\ndef read_frame():\\n    return sys._getframe()\\n")
grader = {{}}
exec(compile(open(GRADER).read(), GRADER, "exec"), grader)
trusted, take_flags, checking = guard.install([sys.prefix, sys.base_prefix, "/usr/lib"], [{str(GUARD)!r}, GRADER])

CHECKING

def student(source):
    """Run source as a notebook cell would; return "denied" or "allowed"."""
    try:
        exec(compile(source, "<cell 1>", "exec"), {{}})
        return "allowed"
    except guard.Denied:
        return "denied"
'''


DOCTEST = 'import doctest\ndef f():\n    """\n    >>> 1 + 1\n    2\n    """\ndoctest.run_docstring_examples(f, {})'


def run(body: str, checking: bool = True) -> dict:
    script = SETUP.replace("CHECKING", "checking()  # as while the probes run" if checking else "")
    script += f"DOCTEST = {DOCTEST!r}\n" + textwrap.dedent(body)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("source", [
    "import sys; sys._getframe()",
    "import inspect; inspect.currentframe().f_back",
    "import inspect; inspect.stack()",
    "import traceback; list(traceback.walk_stack(None))",
    # library functions that hand back a frame they read, under names of their own
    "import logging; logging.currentframe()",
    "import bdb\ntry:\n    1 / 0\nexcept Exception as e:\n    bdb.Bdb().get_stack(None, e.__traceback__)",
    "import inspect\ntry:\n    1 / 0\nexcept Exception:\n    inspect.trace()",
    "import traceback\ntry:\n    1 / 0\nexcept Exception as e:\n    next(traceback.walk_tb(e.__traceback__))",
    "try:\n    1 / 0\nexcept Exception as e:\n    e.__traceback__.tb_frame",
    "def g():\n    yield 1\ng().gi_frame",
    "import gc; gc.get_objects()",
    "import gc; gc.get_referrers(object())",
    "import ctypes; ctypes.CDLL(None)",
    "import sys; sys.settrace(lambda *a: None)",
    "import bdb; bdb.Bdb().set_trace()",
    "def f(): pass\nf.__code__ = (lambda: 1).__code__",
    "compile('x = 1', '/usr/lib/python3.11/os.py', 'exec')",
    "open('/proc/self/mem', 'rb')",
    f"open({str(GUARD)!r})",
    "open('/tmp/lesson20_guard_test.pyc', 'wb')",
])
def test_student_code_is_denied_and_flagged(source):
    got = run(f"print(json.dumps({{'result': student({source!r}), 'flags': take_flags()}}))")
    assert got["result"] == "denied" and len(got["flags"]) == 1, got


def test_library_code_keeps_its_frames_and_is_not_flagged():
    got = run('''
    results = [student("import logging; logging.getLogger('x').warning('hello')"),
               student("import traceback\\ntry:\\n    1 / 0\\nexcept Exception:\\n    traceback.format_exc()"),
               student("import warnings; warnings.warn('w')"),
               student("import traceback; traceback.format_stack(); traceback.print_stack(limit=1)"),
               student(DOCTEST),
               student("import cProfile; cProfile.run('sum(range(10))', '/dev/null')"),
               # library code that reads its caller's frame inside a student's function, and hands back text
               student("import collections\\ndef f():\\n    return collections.namedtuple('P', 'a b')\\nf()"),
               student("import typing\\ndef f():\\n    class P(typing.NamedTuple):\\n        a: int\\n    return P\\nf()"),
               # a library file's own text compiled under its name (a traceback quoting a line) claims nothing
               student("import os\\ncompile([l for l in open(os.__file__) if l.startswith('import ')][0], os.__file__, 'exec')")]
    print(json.dumps({"results": results, "flags": take_flags()}))
    ''')
    assert got == {"results": ["allowed"] * 9, "flags": []}


@pytest.mark.parametrize("source", [
    "compile('import sys; sys._getframe(1)', '<frozen os>', 'exec')",
    "exec(compile('import sys; sys._getframe(1)', '<frozen lesson20>', 'exec'), {})",
    "(lambda: 1).__code__.replace(co_filename='<frozen os>')",
])
def test_a_frozen_modules_name_is_no_claim_to_library_code(source):
    """Trust comes from a real file of the installation or a frozen module's name taken at start-up, never from
    a prefix the student can write: compiling under a frozen name is flagged, an unknown one earns no trust."""
    got = run(f"print(json.dumps({{'result': student({source!r}), 'flags': take_flags()}}))")
    assert got["result"] == "denied" and len(got["flags"]) == 1, got


def test_trusted_code_may_read_frames():
    got = run('''
    with trusted:
        frame = grader["read_frame"]()
    print(json.dumps({"flags": take_flags(), "frame": frame is not None}))
    ''')
    assert got == {"flags": [], "frame": True}


def test_the_graders_code_outside_a_trusted_section_is_judged():
    got = run('''
    try:
        grader["read_frame"]()
        verdict = "allowed"
    except guard.Denied:
        verdict = "denied"
    print(json.dumps({"verdict": verdict}))
    ''')
    assert got == {"verdict": "denied"}


@pytest.mark.parametrize("how", ["called", "signal handler", "thread", "gc callback"])
def test_student_code_that_runs_during_a_trusted_section_is_judged(how):
    """Inside a trusted section only the grader's own code goes unjudged: student code it calls, a signal
    handler that fires there, another thread and the garbage collector's callbacks are judged as anywhere."""
    got = run('''
    import gc, signal, threading, time
    HOW = %r
    seen = []
    if HOW == "called":
        with trusted:
            seen.append(student("import sys; sys._getframe()"))
    elif HOW == "signal handler":
        signal.signal(signal.SIGALRM, lambda *a: seen.append(student("import gc; gc.get_objects()")))
        with trusted:
            signal.setitimer(signal.ITIMER_REAL, 0.01)
            time.sleep(0.1)
            grader["read_frame"]()
    elif HOW == "thread":
        go, done = threading.Event(), threading.Event()
        threading.Thread(target=lambda: (go.wait(), seen.append(student("import gc; gc.get_objects()")),
                                         done.set())).start()
        with trusted:
            go.set()
            done.wait(10)
    else:
        gc.callbacks.append(lambda phase, info: seen.append(student("import gc; gc.get_objects()")))
        with trusted:
            enabled_inside = gc.isenabled()
            garbage = [[] for _ in range(100000)]
        gc.collect()
        seen.append("collection paused" if not enabled_inside and gc.isenabled() else "collection ran")
    print(json.dumps({"seen": seen, "flags": take_flags()}))
    ''' % how)
    assert got["seen"][0] == "denied" and got["flags"], got
    if how == "gc callback":
        assert got["seen"][-1] == "collection paused", got


def test_compiling_under_the_graders_own_file_name_is_flagged():
    got = run('''
    print(json.dumps({"verdict": student(f"compile('x = 1', {GRADER!r}, 'exec')"), "flags": take_flags()}))
    ''')
    assert got == {"verdict": "denied", "flags": ["compiling code under the grader's own file name"]}


def test_a_new_audit_hook_is_refused():
    got = run('''
    seen = []
    student_hook = lambda event, args: seen.append(event)
    sys.addaudithook(student_hook)
    open(__file__ if "__file__" in dir() else "/dev/null").close()
    print(json.dumps({"seen": len(seen), "flags": take_flags()}))
    ''')
    assert got["seen"] == 0 and got["flags"] == ["adding an audit hook"]


def test_integrity_check_sees_rebound_names_and_new_class_attributes():
    got = run('''
    import types
    module = types.ModuleType("m")
    module.f = len
    class C:
        def m(self):
            return 1
    changed = guard.integrity_check({"m": vars(module), "C": C})
    before = changed()
    module.lazy = 1          # a module's new entry: lazy imports do that
    after_lazy = changed()
    module.f = max           # rebound
    C.extra = 2              # a class's new attribute shadows its bases'
    print(json.dumps({"before": before, "after_lazy": after_lazy, "after": sorted(changed())}))
    ''')
    assert got == {"before": [], "after_lazy": [], "after": ["C.extra", "m.f"]}


def test_introspection_while_the_notebook_runs_is_denied_but_not_flagged():
    """Debugging code in a scratch cell (gc.get_objects, inspect.stack) is denied while the notebook runs,
    when nothing of the grader's exists yet, without setting the submission aside; during the checks it
    is flagged."""
    got = run('''
    before = [student("import gc; gc.get_objects()"), student("import inspect; inspect.stack()")]
    quiet = take_flags()
    checking()
    after = student("import gc; gc.get_objects()")
    print(json.dumps({"before": before, "quiet": quiet, "after": after, "flags": take_flags()}))
    ''', checking=False)
    assert got == {"before": ["denied", "denied"], "quiet": [], "after": "denied",
                   "flags": ["listing every object through the garbage collector"]}
