"""master_weights's hidden checks and oracles: the instructor's side of autograder/exercises/master_weights/."""
