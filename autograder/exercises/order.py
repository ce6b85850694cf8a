"""The exercises in the order of the instructor notebook's grade cells: written by `python -m autograder release`
(instructor/release.py, write_order) from solutions/lesson20/lesson20.ipynb and the exercises' folders; not edited
by hand. `release --check` says when it is stale."""
ORDER = (
    "underflow_fraction",
    "static_loss_scaler",
    "dynamic_loss_scaler",
    "master_weights",
    "accumulate_gradients",
    "mixed_precision_train_step",
    "token_accumulation",
    "q5_answer",
)
