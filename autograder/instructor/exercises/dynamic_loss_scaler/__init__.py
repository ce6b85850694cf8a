"""dynamic_loss_scaler's hidden checks and oracles: the instructor's side of autograder/exercises/dynamic_loss_scaler/."""
