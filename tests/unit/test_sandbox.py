"""autograder.sandbox on its own: the channel's framing, the zip guard, the error's fields, and one
child started without bubblewrap (fast: no isolation to set up)."""
import io
import json
import os
import time
import warnings

import pytest
import torch

from autograder.sandbox import Limits, Sandbox, SandboxError, stored_zip
from autograder.sandbox.channel import Channel, Drain


def channel_pair():
    """A Channel whose other ends the test holds: (channel, write-to-replies fd, read-requests fd)."""
    requests, replies, out, err = os.pipe(), os.pipe(), os.pipe(), os.pipe()
    for fd in (out[1], err[1]):
        os.close(fd)
    ch = Channel(requests[1], replies[0], Drain(out[0], 100), Drain(err[0], 100))
    return ch, replies[1], requests[0]


def test_channel_reads_lines_and_exact_bytes():
    ch, theirs, _ = channel_pair()
    os.write(theirs, b'{"a": 1}\n' + b"xyz" + b'{"b": 2}\n')
    deadline = time.monotonic() + 2
    assert ch.line(deadline) == {"a": 1}
    assert ch.pipe.exact(3, deadline) == b"xyz"
    assert ch.line(deadline) == {"b": 2}
    os.close(theirs)
    assert ch.line(deadline) is None  # the child's end closed: it died


def test_channel_times_out_and_rejects_garbage():
    ch, theirs, _ = channel_pair()
    with pytest.raises(TimeoutError):
        ch.line(time.monotonic() + 0.2)
    os.write(theirs, b"[1, 2]\n")
    with pytest.raises(ValueError, match="unreadable"):
        ch.line(time.monotonic() + 1)


def test_stored_zip_accepts_torch_save_only():
    buffer = io.BytesIO()
    torch.save({"status": "ok"}, buffer)
    assert stored_zip(buffer.getvalue(), 2**20)
    assert not stored_zip(buffer.getvalue(), 10)
    assert not stored_zip(b"garbage", 2**20)


def test_error_names_the_signal():
    assert SandboxError("crashed", "x", status=-9, died=True).signal_name == "SIGKILL"
    assert SandboxError("crashed", "x", status=3, died=True).signal_name is None


def test_child_runs_cells_in_order_and_answers_probes():
    cells = [{"index": 0, "label": "<cell 0>", "source": "X = 2", "solution": False},
             {"index": 1, "label": "<cell 1>", "source": "Q5_ANSWER = 'abc'[X - 1]\n1 / 0", "solution": True}]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(timeout=60), isolate=False)
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
        return Sandbox(cells, Limits(timeout=timeout, total_seconds=2 * timeout), isolate=False)


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


def test_a_cell_that_ends_the_process_is_left_out_of_a_fresh_run():
    cells = [{"index": 1, "label": "<cell 1>", "source": "X = 'b'", "solution": False},
             {"index": 2, "label": "<cell 2>", "source": "import os\nos._exit(3)", "solution": False},
             {"index": 5, "label": "<cell 5>", "source": "Q5_ANSWER = X", "solution": True}]
    sandbox = loaded(cells, 20)
    try:
        problems = sandbox.start()
        assert [(p["cell"], p["type"], p["message"]) for p in problems] == [(2, "ProcessDied", "exit code 3")]
        assert sandbox.request("q5_answer", {}, timeout=30)["answer"]["value"] == "b"
    finally:
        sandbox.close()


def test_only_the_childs_signed_replies_are_answers():
    """What the student's code writes into the reply pipe (a forged answer with the right id and even the
    right nonce, a line without its end) cannot pass for the child's answer: the child signs each message
    with the run's key (HMAC), which only its own locals hold, and starts it on a new line."""
    import hashlib
    import hmac
    ch, theirs, _ = channel_pair()
    ch.key = b"k" * 32

    def message(header, payload, key):
        line = json.dumps(header).encode()
        tag = hmac.new(key, line + b"\n" + payload, hashlib.sha256).hexdigest().encode()
        return b"\n" + tag + b" " + line + b"\n" + payload

    def saved(value):
        buffer = io.BytesIO()
        torch.save({"status": "ok", "value": value}, buffer)
        return buffer.getvalue()

    forged, real = saved(1), saved(2)
    header = {"id": 1, "nonce": "n1", "size": len(forged)}
    os.write(theirs, b"garbage without an end" + message(header, forged, b"x" * 32)   # a guessed key
             + json.dumps(header).encode() + b"\n" + forged                          # no tag at all
             + message({"id": 1, "nonce": "n1", "size": len(real)}, real, ch.key))
    assert ch.answer(1, time.monotonic() + 2, 2**20, "n1") == {"status": "ok", "value": 2}
    assert ch.forged >= 2


def test_the_sandbox_transforms_magics_itself():
    """IPython's transform runs in the sandbox, on the cell's clock, not in the grader."""
    from autograder.sandbox.worker import ipython_source
    assert ipython_source("%matplotlib inline\nx = 1").splitlines() == [
        "get_ipython().run_line_magic('matplotlib', 'inline')", "x = 1"]


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
        sandbox = Sandbox(cells, Limits(timeout=60), isolate=False, files=files)
    try:
        assert sandbox.start() == []
        answer = sandbox.request("q5_answer", {}, timeout=30)
        assert answer["answer"]["value"] == ("c-read-only" if os.geteuid() else "c")  # root ignores modes
    finally:
        sandbox.close()


def test_a_request_can_bind_the_references_code_in_for_one_probe():
    """With `bind`, the reference's StaticLossScaler stands in for the notebook's while the probe runs: the
    notebook's DynamicLossScaler, which derives from it, then starts from the reference's __init__; without
    `bind`, and after the bound request, the notebook's own base is back."""
    cells = [{"index": 0, "label": "<cell 0>", "solution": True, "source": (
        "class StaticLossScaler:\n"
        "    def __init__(self, scale=1024.0):\n"
        "        self.scale = 3.0  # wrong: ignores scale\n"
        "class DynamicLossScaler(StaticLossScaler):\n"
        "    def __init__(self, init_scale=2.0**16):\n"
        "        super().__init__(init_scale)\n"
        "    def update(self, found_inf):\n"
        "        pass\n")}]
    components = ("class StaticLossScaler:\n"
                  "    def __init__(self, scale=1024.0):\n"
                  "        self.scale = float(scale)\n")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sandbox = Sandbox(cells, Limits(timeout=60), isolate=False, components=components)

    def first_scale(**kwargs):
        answer = sandbox.request("scaler_updates", {"init": {"init_scale": 8.0}}, timeout=30, **kwargs)
        return answer["scales"][0]["value"]
    try:
        assert sandbox.start() == []
        assert first_scale() == 3.0
        assert first_scale(bind=("StaticLossScaler",)) == 8.0
        assert first_scale() == 3.0
    finally:
        sandbox.close()
