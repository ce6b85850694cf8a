"""The lesson's auto-graded exercises, one module each (autograder/exercises/<id>.py declares its Exercise), in
lesson order. items.ITEMS and rubric.RUBRIC are built from this tuple; adding an exercise is its module, a line
here, its checks (checks/test_<id>.py, instructor/hidden/test_<id>.py), its probe, and its cells in the notebook.
"""
from . import (accumulate_gradients, dynamic_loss_scaler, master_weights, mixed_precision_train_step, q5_answer,
               static_loss_scaler, token_accumulation, underflow_fraction)

EXERCISES = tuple(module.EXERCISE for module in (
    underflow_fraction, static_loss_scaler, dynamic_loss_scaler, master_weights, accumulate_gradients,
    mixed_precision_train_step, token_accumulation, q5_answer))
