"""static_loss_scaler's instructor side: its hidden checks, and its oracles where it has them (the student side is
autograder/exercises/static_loss_scaler/)."""
