"""underflow_fraction's hidden checks and oracles: the instructor's side of autograder/exercises/underflow_fraction/."""
