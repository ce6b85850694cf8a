"""Each exercise's instructor side, one folder each (autograder/instructor/exercises/<id>/): its hidden checks
(test_<id>.py) and its oracles (oracles.py), where it has them. The student package leaves this folder out.
memory.py is the hidden memory checks' shared measure."""
