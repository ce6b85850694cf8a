"""token_accumulation's hidden checks and oracles: the instructor's side of autograder/exercises/token_accumulation/."""
