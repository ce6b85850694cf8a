"""Correct notebooks that lean on IPython's cell and line magics, as students write them: each must keep full
marks, graded as IPython runs it (issue: a helper written with %%writefile and imported lost the train step).

Shell lines (`!pip install`) and installing magics are skipped in the sandbox, and the feedback says so.
"""
from . import NewCell, Replace, Variant

HELPER = '''%%writefile mp_utils.py
import torch


def copy_grads(model_params, master_params):
    """Each master's .grad: an fp32 copy of its parameter's .grad."""
    for p, master in zip(model_params, master_params):
        master.grad = None if p.grad is None else p.grad.detach().to(torch.float32, copy=True)
'''

STEP_USES_HELPER = '''
def model_grads_to_master_grads(model_params, master_params) -> None:
    import mp_utils
    mp_utils.copy_grads(model_params, master_params)
'''


def magic(name, *edits, doc):
    return Variant(name, "realistic", tuple(edits), doc=doc)


MAGICS = [
    magic("magic_writefile_helper_imported", NewCell("cell-01", HELPER),
          Replace("master_weights", "model_grads_to_master_grads", STEP_USES_HELPER),
          doc="a helper written with %%writefile mp_utils.py and imported inside a graded function"),
    magic("magic_run_helper_file", NewCell("cell-01", "%run mp_utils.py"), NewCell("cell-01", HELPER),  # (in this order)
          Replace("master_weights", "model_grads_to_master_grads", '''
def model_grads_to_master_grads(model_params, master_params) -> None:
    copy_grads(model_params, master_params)  # defined by %run mp_utils.py
'''), doc="%run of a file the notebook wrote: its names land in the notebook's namespace"),
    magic("magic_capture_and_bash", NewCell("cell-01", "%%capture setup_log\nprint('installing nothing')"),
          NewCell("cell-01", "%%bash\nmkdir -p runs && echo 0.5 > runs/share.txt"),
          Replace("accumulate_gradients", "accumulate_gradients", '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    assert open("runs/share.txt").read().strip() == "0.5"  # written by a %%bash cell
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''), doc="%%capture of a setup cell, and a %%bash cell that writes a file a graded function reads"),
    magic("magic_env_and_cd", NewCell("cell-01", "%env LESSON20_SCALE=1024\n%cd /tmp"),
          Replace("static_loss_scaler", "StaticLossScaler.__init__", '''
    def __init__(self, scale: float = float(__import__("os").environ["LESSON20_SCALE"])):
        self.scale = float(scale)
'''), doc="%env sets a variable a default argument reads; %cd moves the working folder"),
    magic("magic_shell_lines_skipped", NewCell("cell-01", "!pip install --quiet tqdm\n%pip install numpy\nfiles = !ls"),
          doc="!pip, %pip and `x = !ls` in the setup: skipped, and said so"),
]
