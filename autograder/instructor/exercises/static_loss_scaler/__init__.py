"""static_loss_scaler's hidden checks and oracles: the instructor's side of autograder/exercises/static_loss_scaler/."""
