"""underflow_fraction's instructor side: its hidden checks, and its oracles where it has them (the student side is
autograder/exercises/underflow_fraction/)."""
