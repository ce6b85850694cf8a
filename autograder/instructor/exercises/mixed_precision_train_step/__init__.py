"""mixed_precision_train_step's instructor side: its hidden checks, and its oracles where it has them (the student
side is autograder/exercises/mixed_precision_train_step/)."""
