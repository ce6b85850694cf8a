"""autograder.sandbox.session: a Sandbox started without bubblewrap (fast: no isolation to set up), one
start per test: cells run in order, time limits, a cell that ends the process, files, bound stand-ins."""
import json
import os
import warnings

import pytest

from autograder.limits import Limits
from autograder.sandbox import Sandbox, SandboxError


def test_child_runs_cells_in_order_and_answers_probes():
    cells = [{"index": 0, "label": "<cell 0>", "source": "X = 2", "solution": False},
             {"index": 1, "label": "<cell 1>", "source": "Q5_ANSWER = 'abc'[X - 1]\n1 / 0", "solution": True}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(), isolate=False)
    try:
        problems = sandbox.start()
        assert [(p["cell"], p["type"], p["line"]) for p in problems] == [(1, "ZeroDivisionError", 2)]
        answer = sandbox.request("q5_answer", {}, timeout=30)
        assert answer["status"] == "ok" and answer["answer"]["value"] == "b"
    finally:
        sandbox.close()


def loaded(cells, timeout):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        limits = Limits(cell_seconds=timeout, item_seconds=timeout, notebook_seconds=2 * timeout,
                        checks_seconds=2 * timeout)
        return Sandbox(cells, limits, isolate=False)


def test_a_cell_past_its_time_is_stopped_and_the_next_one_runs():
    cells = [{"index": 3, "label": "<cell 3>", "source": "while True:\n    pass", "solution": False},
             {"index": 7, "label": "<cell 7>", "source": "Q5_ANSWER = 'c'", "solution": True}]
    sandbox = loaded(cells, 2)
    try:
        problems = sandbox.start()
        assert [(p["cell"], p["type"]) for p in problems] == [(3, "CellTimeout")]
        assert sandbox.request("q5_answer", {}, timeout=30)["answer"]["value"] == "c"
    finally:
        sandbox.close()


def test_a_notebook_past_its_time_names_the_cell():
    cells = [{"index": 3, "label": "<cell 3>", "source": "A = 1", "solution": False},
             {"index": 7, "label": "<cell 7>", "source": "import signal\nsignal.signal(signal.SIGALRM, "
              "signal.SIG_IGN)\nwhile True:\n    pass", "solution": True}]
    sandbox = loaded(cells, 2)
    try:
        with pytest.raises(SandboxError) as caught:
            sandbox.start()
        assert caught.value.reason == "timeout" and caught.value.cell == 7
    finally:
        sandbox.close()
    json.dumps(cells)  # what is sent is plain data


def test_files_beside_the_notebook_are_importable_and_read_only():
    """A helper module and a data file handed in beside the notebook are in its working folder, read-only,
    and `import helpers` finds the module, as in a kernel started in the submission's folder."""
    cells = [{"index": 0, "label": "<cell 0>", "solution": True, "source": (
        "import os, helpers\n"
        "with open('data/letter.txt') as f:\n"
        "    Q5_ANSWER = helpers.first(f.read())\n"
        "try:\n"
        "    open('helpers.py', 'w')\n"
        "except OSError:\n"
        "    Q5_ANSWER += '-read-only'\n")}]
    files = {"helpers.py": b"def first(text):\n    return text[0]\n", "data/letter.txt": b"c is the one"}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(), isolate=False, files=files)
    try:
        assert sandbox.start() == []
        answer = sandbox.request("q5_answer", {}, timeout=30)
        assert answer["answer"]["value"] == ("c-read-only" if os.geteuid() else "c")  # root ignores modes
    finally:
        sandbox.close()


STATIC = {"item": "static_loss_scaler", "names": ["StaticLossScaler"], "needs": [], "source": (
    "class StaticLossScaler:\n"
    "    def __init__(self, scale=1024.0):\n"
    "        self.scale = float(scale)\n")}
SCALERS = [{"index": 0, "label": "<cell 0>", "solution": True, "source": (
    "class StaticLossScaler:\n"
    "    def __init__(self, scale=1024.0):\n"
    "        self.scale = 3.0  # wrong: ignores scale\n"
    "class DynamicLossScaler(StaticLossScaler):\n"
    "    def __init__(self, init_scale=2.0**16):\n"
    "        super().__init__(init_scale)\n"
    "    def update(self, found_inf):\n"
    "        pass\n")}]


def test_an_items_fork_binds_the_references_code_in_for_its_probes():
    """With a stand-in in its setup, the reference's StaticLossScaler stands in for the notebook's in the
    item's fork: the notebook's DynamicLossScaler, which derives from it, then starts from the reference's
    __init__; in the next item's fork, without stand-ins, the notebook's own base is back."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(SCALERS, Limits(), isolate=False)

    def first_scale():
        answer = sandbox.request("scaler_updates", {"init": {"init_scale": 8.0}}, timeout=30)
        return answer["scales"][0]["value"]
    try:
        assert sandbox.start() == []
        assert first_scale() == 3.0
        sandbox.use_item("dynamic_loss_scaler", {"imports": "", "units": [STATIC], "bind": ["StaticLossScaler"]})
        assert first_scale() == 8.0
        sandbox.use_item("mixed_precision_train_step", {})
        assert first_scale() == 3.0
    finally:
        sandbox.close()


def test_what_an_items_code_leaves_behind_does_not_reach_the_next_item():
    """Each item's fork starts from the notebook as it ran: names rebound, modules patched and files written
    by one item's code are gone for the next; a fork that dies costs only itself (the notebook is not run
    again)."""
    cells = [{"index": 0, "label": "<cell 0>", "solution": True, "source": (
        "import os, math\n"
        "class DynamicLossScaler:\n"
        "    def __init__(self, init_scale=1.0):\n"
        "        self.scale = init_scale + len(os.listdir('.')) + math.pi\n"
        "        globals()['DynamicLossScaler'] = None\n"
        "        math.pi = 0.0\n"
        "        open('left-%d' % os.getpid(), 'w').close()\n"
        "    def update(self, found_inf):\n"
        "        if found_inf:\n"
        "            os._exit(3)\n")}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(), isolate=True)
    try:
        assert sandbox.start() == []
        seen = []
        for item in ("underflow_fraction", "static_loss_scaler", "dynamic_loss_scaler"):
            sandbox.use_item(item, {})
            seen.append(sandbox.request("scaler_updates", {"init": {"init_scale": 8.0}}, timeout=30)["scales"][0])
        assert len({s["value"] for s in seen}) == 1 and seen[0]["value"] > 11, seen
        sandbox.use_item("accumulate_gradients", {})
        with pytest.raises(SandboxError) as died:
            sandbox.request("scaler_updates", {"found_infs": [True]}, timeout=30)
        assert died.value.died and died.value.status == 3 and sandbox.channel is not None
        sandbox.use_item("master_weights", {})
        assert sandbox.request("scaler_updates", {"init": {"init_scale": 8.0}}, timeout=30)["scales"][0] == seen[0]
        assert sandbox.restarts == 0
    finally:
        sandbox.close()
