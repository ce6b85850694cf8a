"""mixed_precision_train_step's hidden checks and oracles: the instructor's side of autograder/exercises/mixed_precision_train_step/."""
