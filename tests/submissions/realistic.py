"""Correct submissions in notebooks as real students leave them: every one must keep full marks.

The code is right; the notebook around it is messy. Solutions lean on names the notebook makes by
running code (the setup cell's DEVICE, a constant computed in its own cell, a lambda helper); scratch
cells raise, print megabytes, ask for input or use IPython syntax; cells are copied (nbgrader
metadata and all), split, moved, deleted or turned into markdown; the file has no cell ids, CRLF line
endings, tabs, huge or stale outputs, shuffled execution counts, non-ASCII text. Each variant states
only what it changes.

A grader that runs the notebook's code cells in order (the last definition wins), neutralises IPython
syntax, and restores the instructor's version of every grade cell gives each of these full marks.
Variants with STRUCTURAL_EDITS change which cells exist or where; those that leave nbgrader's own
cells damaged (needs_repair: a grade id twice, a test cell deleted or made markdown) must also be
told, in the feedback, what was repaired.

That the code is right is checked in Jupyter itself: `python -m tests.submissions.in_jupyter` runs each
variant top to bottom in a real kernel and gives every one full marks on the visible checks.
"""
import base64
import random
import struct
import zlib

from autograder.items import AUTO_ITEMS

from . import (Append, CopyCell, DeleteCell, DropCellIds, ExecutionCounts, LineEndings, Metadata, MoveCell, NewCell,
               Outputs, Replace, TabIndent, ToMarkdown, Variant)

SOLUTION_CELLS = tuple(item.solution_cell_id for item in AUTO_ITEMS)


def _setup_source() -> str:
    """The released notebook's setup cell, as a student starts from it."""
    import nbformat

    from . import STUDENT_NB, find_cell
    return find_cell(nbformat.read(str(STUDENT_NB), as_version=4), "cell-01").source


def real(name, *edits, doc=""):
    return Variant(name, "realistic", tuple(edits), doc=doc)


# ---- outputs as Jupyter stores them ----

def stream(text, name="stdout"):
    return {"output_type": "stream", "name": name, "text": text}


def result(text, count):
    return {"output_type": "execute_result", "data": {"text/plain": text}, "metadata": {}, "execution_count": count}


def error(ename, evalue, *lines):
    """An error output with the ANSI colours IPython puts in tracebacks."""
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": ["\x1b[0;31m" + "-" * 75 + "\x1b[0m", *lines,
                          f"\x1b[0;31m{ename}\x1b[0m: {evalue}"]}


def png(width: int, height: int, seed: int = 0) -> str:
    """A real PNG of noise (it does not compress), base64-encoded as an image output stores it."""
    noise = random.Random(seed)
    rows = b"".join(b"\0" + noise.randbytes(3 * width) for _ in range(height))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows, 1)) + chunk(b"IEND", b""))
    return base64.b64encode(data).decode()


def image(width, height):
    return {"output_type": "display_data", "metadata": {},
            "data": {"image/png": png(width, height), "text/plain": f"<Figure size {width}x{height} with 1 Axes>"}}


def widget(model_id):
    return {"output_type": "display_data", "metadata": {},
            "data": {"application/vnd.jupyter.widget-view+json": {"model_id": model_id, "version_major": 2,
                                                                  "version_minor": 0},
                     "text/plain": "VBox(children=(HTML(value='<b>Which …</b>'), RadioButtons(options=…)))"}}


# five megabytes of training log, printed by a demo the student left running longer
TRAINING_LOG = "".join(f"step {i:>7}: loss {1.0 / (1 + i):.6f}  scale 65536.0  stepped True\n"
                       for i in range(5 * 2**20 // 52))

NOT_IMPLEMENTED = error(
    "NotImplementedError", "master_weights: write the body of make_master_params()",
    "Cell \x1b[0;32mIn[14], line 1\x1b[0m\n\x1b[0;32m----> 1\x1b[0m \x1b[43mcheck\x1b[49m\x1b[43m(\x1b[49m"
    "\x1b[38;5;124m\"master_weights\"\x1b[39m\x1b[43m, \x1b[49m\x1b[38;5;28mglobals\x1b[39m\x1b[43m(\x1b[49m"
    "\x1b[43m)\x1b[49m\x1b[43m)\x1b[49m")


# ---- the variants ----

REALISTIC = [
    real("real_setup_device", Replace("master_weights", "make_master_params", '''
        def make_master_params(model: nn.Module) -> list:
            # the masters live where the lesson computes: DEVICE, from the setup cell
            return [p.detach().to(DEVICE, torch.float32, copy=True).requires_grad_(True) for p in model.parameters()]
        '''), doc="make_master_params places the masters with .to(DEVICE), the setup cell's lesson.pick_device()"),
    real("real_computed_constants", NewCell("cell-06", '''
        # fp16's limits, computed rather than typed in
        HALF = torch.float16
        TINY = torch.finfo(HALF).tiny   # the smallest normal fp16 number, 2**-14
        print(TINY, torch.finfo(HALF).eps)
        '''), Replace("underflow_fraction", "underflow_fraction", '''
        def underflow_fraction(values: torch.Tensor, dtype: torch.dtype = HALF) -> float:
            nonzero = values != 0
            count = int(nonzero.sum())
            if count == 0:
                return 0.0
            tiny = TINY if dtype == HALF else torch.finfo(dtype).tiny
            # only a value below the smallest normal number can round to 0
            flushed = nonzero & (values.abs() < tiny) & (values.to(dtype) == 0)
            return int(flushed.sum()) / count
        '''), doc="TINY = torch.finfo(HALF).tiny and HALF = torch.float16 in a cell of their own, used in a default "
                  "argument and in the body"),
    real("real_lambda_helper_cell", NewCell("cell-33", '''
        # my helpers for exercise 5
        def micro_slices(n, size):
            """(start, stop) of each micro-batch."""
            return [(start, min(start + size, n)) for start in range(0, n, size)]

        share_of = lambda x, n: x.shape[0] / n   # the fraction of the batch in x

        print(micro_slices(10, 4))   # [(0, 4), (4, 8), (8, 10)]
        '''), Replace("accumulate_gradients", "accumulate_gradients", '''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad(set_to_none=True)
            n = inputs.shape[0]
            total = 0.0
            for start, stop in micro_slices(n, micro_batch_size):
                x, y = inputs[start:stop], targets[start:stop]
                loss = loss_fn(model(x), y)
                (loss * share_of(x, n)).backward()
                total += loss.item() * share_of(x, n)
            return total
        '''), doc="a helper cell above the exercise: a def, a lambda bound to a name, and a print"),
    real("real_scratch_raises_first", NewCell("cell-01", '''
        # scratch: what does torch do here?
        print(torch.tensor(1.0) / 0)
        print(1 / 0)
        '''), NewCell("cell-06", '''
        underflow_fraction(torch.tensor([1e-9, 1.0]))   # run before the cell that defines it
        '''), NewCell("static_loss_scaler", '''
        assert False, "ask about bf16 in the tutorial"
        '''), doc="scratch cells that raise (ZeroDivisionError, NameError, AssertionError), before the solutions"),
    real("real_magics", NewCell("cell-01", '''
        %matplotlib inline
        %load_ext autoreload
        %autoreload 2
        '''), NewCell("cell-01", '''
        !pip list | grep -i torch
        !nvidia-smi
        files = !ls
        %env LESSON20_DEVICE=cpu
        '''), Append("underflow_fraction", '''
        %timeit underflow_fraction(torch.randn(10_000))
        '''), NewCell("underflow_fraction", '''
        %%time
        x = torch.randn(1_000_000)
        print(underflow_fraction(x * 1e-6))
        '''), NewCell("static_loss_scaler", '''
        StaticLossScaler?
        torch.Tensor.div_??
        '''), doc="line and cell magics, !shell lines (one assigned), obj? help, in scratch and solution cells"),
    real("real_indented_magic", Append("underflow_fraction", '''
        for n in (1_000, 100_000):
            %timeit -n 3 underflow_fraction(torch.randn(n))
        '''), doc="%timeit inside a loop at the end of a solution cell (blanking the line leaves an empty loop)"),
    real("real_copied_check_cells", CopyCell("underflow_fraction"), CopyCell("dynamic_loss_scaler", after="q5_answer"),
         doc="check cells copied and pasted (same grade id twice): one right below, one at the end"),
    real("real_duplicated_solution", CopyCell("master_weights_solution", above=True, source='''
        def make_master_params(model):
            return [p.float().requires_grad_() for p in model.parameters()]   # first try: not a copy in fp32


        def model_grads_to_master_grads(model_params, master_params):
            for p, m in zip(model_params, master_params):
                m.grad = p.grad


        def master_params_to_model_params(model_params, master_params):
            for p, m in zip(model_params, master_params):
                p.data = m.data
        '''), doc="the solution cell duplicated to try a variant: a wrong first try above, the right one below"),
    real("real_duplicated_solution_unfinished", CopyCell("accumulate_gradients_solution", above=True, source='''
        def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
            model.zero_grad(
            for start in range(0, len(inputs), micro_batch_size):
        '''), doc="a half-typed first try (a SyntaxError) left above the finished solution cell, same grade id"),
    real("real_split_solution_cell", Replace("master_weights", None, '''
        def make_master_params(model: nn.Module) -> list:
            return [p.detach().to(torch.float32, copy=True).requires_grad_(True) for p in model.parameters()]
        '''), CopyCell("master_weights_solution", source='''
        def model_grads_to_master_grads(model_params, master_params) -> None:
            for p, master in zip(model_params, master_params):
                master.grad = None if p.grad is None else p.grad.detach().to(torch.float32, copy=True)


        @torch.no_grad()
        def master_params_to_model_params(model_params, master_params) -> None:
            for p, master in zip(model_params, master_params):
                p.copy_(master)
        '''), doc="the solution cell split in two (both halves keep its nbgrader metadata, as a copy does)"),
    real("real_check_cell_to_markdown", ToMarkdown("master_weights"),
         doc="the master_weights check cell turned into markdown (M in command mode)"),
    real("real_deleted_check_cell", DeleteCell("accumulate_gradients"), doc="the accumulate_gradients check cell deleted"),
    real("real_solution_in_new_cell", DeleteCell("static_loss_scaler_solution"), NewCell("cell-13", '''
        class StaticLossScaler:
            def __init__(self, scale: float = 1024.0):
                self.scale = float(scale)

            def scale_loss(self, loss):
                return loss * self.scale

            def unscale_(self, params) -> bool:
                found_inf = False
                for p in params:
                    if p.grad is not None:
                        p.grad.div_(self.scale)
                        found_inf |= not bool(torch.isfinite(p.grad).all())
                return found_inf
        '''), doc="the stub cell deleted and the class written in a fresh, plain cell in its place"),
    real("real_rewrote_exercise_cells", DeleteCell("dynamic_loss_scaler_solution"), DeleteCell("dynamic_loss_scaler"),
         NewCell("cell-16", '''
        class DynamicLossScaler(StaticLossScaler):
            def __init__(self, init_scale=2.0**16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000):
                super().__init__(init_scale)
                self.growth_factor, self.backoff_factor = growth_factor, backoff_factor
                self.growth_interval, self.clean_steps = growth_interval, 0

            def update(self, found_inf):
                if found_inf:
                    self.scale *= self.backoff_factor
                    self.clean_steps = 0
                    return
                self.clean_steps += 1
                if self.clean_steps == self.growth_interval:
                    self.scale *= self.growth_factor
                    self.clean_steps = 0
        '''), doc="the exercise's stub cell and its check cell both deleted, the class written in a fresh cell"),
    real("real_moved_cells", MoveCell("q5_answer_solution", "cell-01"), MoveCell("master_weights", "accumulate_gradients"),
         MoveCell("cell-06", "cell-55"), doc="cells cut and pasted elsewhere: the q5 answer to the top, a check cell "
                                             "below a later exercise, a demo to the end"),
    real("real_no_cell_ids", DropCellIds(), doc="an nbformat 4.4 notebook: no cell ids"),
    real("real_no_cell_ids_copied_check", CopyCell("static_loss_scaler"), DropCellIds(),
         doc="nbformat 4.4, and a check cell pasted twice (no cell id to tell them apart)"),
    real("real_colab_saved", NewCell("cell-01", '''
        !pip install -q torch matplotlib
        from google.colab import drive
        drive.mount("/content/drive")
        '''), Metadata(None, {"colab": {"provenance": [], "gpuType": "T4"}, "accelerator": "GPU",
                             "kernelspec": {"name": "python3", "display_name": "Python 3"}}),
         Metadata("*", {"colab": {"base_uri": "https://localhost:8080/"}}), DropCellIds(minor=0),
         doc="saved by Google Colab: nbformat 4.0 without ids, colab metadata, a drive-mount cell that fails here"),
    real("real_large_outputs", Outputs("cell-11", (stream(TRAINING_LOG), image(640, 480)), 7),
         Outputs("cell-45", (image(1000, 400), stream("      fp32: final training loss 0.0530\n")), 12),
         doc="5 MB of printed log and two noisy PNG figures stored in the outputs (a 9 MB file)"),
    real("real_non_ascii", Replace("static_loss_scaler", None, '''
        class StaticLossScaler:
            """Échelle fixe 📏 : 固定的损失缩放。"""

            def __init__(self, scale: float = 1024.0):
                self.scale = float(scale)  # 缩放因子

            def scale_loss(self, loss):
                return loss * self.scale  # ✨ toujours dans le graphe

            def unscale_(self, params) -> bool:
                débordement = False  # overflow, en français
                for p in params:
                    if p.grad is None:
                        continue
                    p.grad.div_(self.scale)
                    if not torch.isfinite(p.grad).all():
                        débordement = True
                return débordement
        '''), Replace("q5_answer", None, 'Q5_ANSWER = "b"  # ✅ la mémoire, pas le modèle (内存)'),
         NewCell("static_loss_scaler", "### Notes 📝\n\nL'échelle ×1024 — 为什么？ 🤔", cell_type="markdown"),
         NewCell("static_loss_scaler", '''
        π = 3.14159
        print(f"🚀 entraînement terminé — 训练完成, π ≈ {π}")
        '''), doc="non-ASCII identifiers, comments, strings and markdown (é, 中文, emoji)"),
    real("real_crlf", LineEndings(("cell-01", *SOLUTION_CELLS)),
         doc="CRLF line endings in the setup cell and every solution cell"),
    real("real_tabs", TabIndent(("dynamic_loss_scaler_solution", "accumulate_gradients_solution",
                                 "mixed_precision_train_step_solution")),
         doc="tab indentation in three solution cells"),
    real("real_shuffled_execution_counts",
         Outputs("underflow_fraction", (stream("underflow_fraction: 9 of 9 checks pass\n"), result("1", 0))),
         Outputs("cell-06", (stream("         65504  ->  fp16 65504\n"),)), ExecutionCounts(seed=20),
         doc="cells run out of order: execution counts shuffled, outputs carrying theirs"),
    real("real_stale_outputs_and_widgets",
         Outputs("master_weights", (NOT_IMPLEMENTED,), 14), Outputs("q5_answer", (result("0", 31),), 31),
         Outputs("cell-03", (widget("3f1c0c3e4f2a4b8e9d0a1b2c3d4e5f60"),), 2),
         Metadata(None, {"widgets": {"application/vnd.jupyter.widget-state+json": {
             "state": {}, "version_major": 2, "version_minor": 0}}}),
         doc="stale outputs (a NotImplementedError traceback, a check showing 0) and quiz widget outputs"),
    real("real_jupyter_metadata",
         Metadata(None, {"kernelspec": {"display_name": "Python (lesson20-venv)", "language": "python",
                                        "name": "lesson20-venv"},
                         "language_info": {"codemirror_mode": {"name": "ipython", "version": 3},
                                           "file_extension": ".py", "mimetype": "text/x-python", "name": "python",
                                           "nbconvert_exporter": "python", "pygments_lexer": "ipython3",
                                           "version": "3.11.2"},
                         "toc-autonumbering": True}),
         Metadata("accumulate_gradients_solution", {"jupyter": {"source_hidden": True}, "tags": ["done"],
                                                    "scrolled": True, "collapsed": False}),
         Metadata("cell-45", {"execution": {"iopub.execute_input": "2026-01-14T21:03:11.482Z",
                                            "shell.execute_reply": "2026-01-14T21:03:19.906Z"}}),
         doc="another kernel's name, full language_info, hidden source, tags and execution timings"),
    real("real_print_heavy", NewCell("cell-06", '''
        for i in range(60_000):
            print(f"{i:>6} {i * 2.0**-24:.3e} -> {torch.tensor(i * 2.0**-24, dtype=torch.float16).item():.3e}")
        '''), Replace("dynamic_loss_scaler", "DynamicLossScaler.update", '''
        def update(self, found_inf: bool) -> None:
            print("update", found_inf, self.scale, self.clean_steps)   # left in from debugging
            if found_inf:
                self.scale *= self.backoff_factor
                self.clean_steps = 0
                return
            self.clean_steps += 1
            if self.clean_steps == self.growth_interval:
                self.scale *= self.growth_factor
                self.clean_steps = 0
        '''), doc="a scratch cell printing 60,000 lines, and a debugging print in every update()"),
    real("real_future_annotations", Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
        def mixed_precision_train_step(model: nn.Module, master_params: list[torch.Tensor],
                                       optimizer: torch.optim.Optimizer, scaler: DynamicLossScaler,
                                       loss_fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
                                       inputs: torch.Tensor, targets: torch.Tensor, micro_batch_size: int,
                                       max_grad_norm: float | None = None) -> tuple[float, bool]:
            model_params: list[nn.Parameter] = list(model.parameters())
            model.zero_grad(set_to_none=True)
            n: int = inputs.shape[0]
            total: float = 0.0
            for start in range(0, n, micro_batch_size):
                x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
                if x.is_floating_point():
                    x = x.to(model_params[0].dtype)
                loss = loss_fn(model(x).float(), y)
                scaler.scale_loss(loss * (x.shape[0] / n)).backward()
                total += loss.item() * x.shape[0] / n
            model_grads_to_master_grads(model_params, master_params)
            found_inf: bool = scaler.unscale_(master_params)
            if not found_inf:
                if max_grad_norm is not None:
                    torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
                optimizer.step()
                master_params_to_model_params(model_params, master_params)
            scaler.update(found_inf)
            return total, not found_inf
        '''), Append("mixed_precision_train_step", '''
        from __future__ import annotations

        from typing import Callable
        ''', first=True), doc="from __future__ import annotations atop the cell, PEP 604/585 hints, annotated locals"),
    real("real_main_block", Append("dynamic_loss_scaler", '''
        if __name__ == "__main__":
            s = DynamicLossScaler(init_scale=8.0, growth_interval=2)
            s.update(False)
            s.update(False)
            assert s.scale == 16.0, s.scale
            s.update(True)
            assert s.scale == 8.0, s.scale
            print("DynamicLossScaler: my quick test passed")
        '''), doc="an if __name__ == '__main__': self-test at the end of a solution cell"),
    real("real_own_assert_cell", NewCell("accumulate_gradients", '''
        # my own test: accumulation gives the gradient of one big batch
        torch.manual_seed(0)
        net = nn.Linear(5, 3)
        xb, yb = torch.randn(10, 5), torch.randint(0, 3, (10,))
        net.zero_grad()
        F.cross_entropy(net(xb), yb).backward()
        full = [p.grad.clone() for p in net.parameters()]
        loss = accumulate_gradients(net, F.cross_entropy, xb, yb, 4)
        assert all(torch.allclose(p.grad, g, atol=1e-6) for p, g in zip(net.parameters(), full))
        assert abs(loss - F.cross_entropy(net(xb), yb).item()) < 1e-6
        print("ok")
        '''), doc="the student's own passing assert tests in a cell after the check"),
    real("real_redefines_names", NewCell("cell-11", '''
        model = nn.Linear(2, 2)      # trying something: overwrites the demo's model
        steps, batch = 3, 8
        x, y = torch.randn(4, 2), torch.tensor([0, 1, 0, 1])
        print(model(x).shape)
        '''), doc="a scratch cell that rebinds the demos' variables (model, steps, batch, x, y)"),
    real("real_shadows_check", NewCell("underflow_fraction", '''
        check = underflow_fraction(torch.tensor([1e-9])) == 1.0   # a variable named like the notebook's check()
        print(check)
        '''), doc="a variable named check: every check cell after it fails in Jupyter (TypeError), but the code "
                  "graded is right, and the grader's checks do not run in the student's namespace"),
    real("real_import_cell", NewCell("cell-05", '''
        import time
        import numpy as np

        np.set_printoptions(precision=3)
        rng = np.random.default_rng(0)
        print(np.__version__, rng.standard_normal(3))
        '''), Replace("underflow_fraction", "underflow_fraction", '''
        def underflow_fraction(values, dtype=torch.float16):
            v = values.detach().cpu()
            nonzero = np.asarray(v != 0)
            lost = nonzero & np.asarray(v.to(dtype) == 0)
            return float(lost.sum() / nonzero.sum()) if nonzero.any() else 0.0
        '''), doc="numpy imported in a cell of its own (that also runs code), used by the solution"),
    real("real_ipython_builtins", Append("underflow_fraction", '''
        display(underflow_fraction(torch.tensor([1e-9, 1.0])))
        '''), NewCell("underflow_fraction", '''
        get_ipython().run_line_magic("precision", "3")
        print(In[-1], _)
        '''), doc="display() at the end of a solution cell; get_ipython(), In and _ in a scratch cell"),
    real("real_input_prompt", NewCell("cell-01", '''
        name = input("Your name: ")
        print(f"Hello {name}, let's train in half precision")
        '''), doc="a scratch cell that asks for keyboard input (Jupyter shows a prompt; nothing answers it here)"),
    real("real_solution_calls_demo_data", Append("dynamic_loss_scaler", '''
        # how much of the demo's gradients would a scale of 2**10 save?
        print(underflow_fraction(act_grads), underflow_fraction(act_grads * 2**10))
        '''), doc="a solution cell that ends by using a variable made by an earlier demo cell (act_grads)"),
    # IPython keeps a cell's __future__ flags for every later cell: Iterable is never imported, and the annotation
    # that names it is never evaluated
    real("real_future_annotations_setup",
         CopyCell("cell-01", above=True, source="from __future__ import annotations\n\n" + _setup_source()),
         DeleteCell("cell-01"),
         Replace("static_loss_scaler", "StaticLossScaler.unscale_", '''
         def unscale_(self, params: Iterable[torch.Tensor]) -> bool:
             found_inf = False
             for p in params:
                 if p.grad is None:
                     continue
                 p.grad.div_(self.scale)
                 found_inf = found_inf or not bool(torch.isfinite(p.grad).all())
             return found_inf
         '''), doc="from __future__ import annotations in the setup cell; a later cell annotates with a name it "
                    "never imports (Iterable), which only postponed evaluation allows"),
    real("real_empty_and_raw_cells", NewCell("cell-01", ""), NewCell("cell-01", "   \n\n"),
         NewCell("underflow_fraction", "# TODO: come back to this\n# (nothing to run)"),
         NewCell("static_loss_scaler", "print('this raw cell is not run')", cell_type="raw"),
         NewCell("q5_answer", ""), doc="empty, blank, comment-only and raw cells"),
]

# What damages nbgrader's own cell structure, which the grader must repair (and say so).
STRUCTURAL_EDITS = (CopyCell, ToMarkdown, DeleteCell, MoveCell, DropCellIds)


def structural(name: str) -> bool:
    """Whether the variant changes which cells exist or what they are (copies, deletions, markdown, no ids)."""
    from . import VARIANTS
    return any(isinstance(e, STRUCTURAL_EDITS) for e in VARIANTS[name].edits)


def needs_repair(name: str) -> bool:
    """Whether the variant leaves nbgrader's cells damaged: a grade id twice, or a test cell gone or made
    markdown. The grader restores the instructor's cells, and its feedback must say it repaired them."""
    from . import VARIANTS, _reference_submission, find_cell
    for edit in VARIANTS[name].edits:
        nbgrader = find_cell(_reference_submission(), edit.cell).metadata.get("nbgrader", {}) if isinstance(
            edit, (CopyCell, ToMarkdown, DeleteCell)) else {}
        if isinstance(edit, CopyCell) and nbgrader.get("grade_id"):
            return True
        if isinstance(edit, (ToMarkdown, DeleteCell)) and nbgrader.get("grade"):
            return True
    return False
