"""accumulate_gradients's hidden checks and oracles: the instructor's side of autograder/exercises/accumulate_gradients/."""
