"""q5_answer's hidden checks and oracles: the instructor's side of autograder/exercises/q5_answer/."""
