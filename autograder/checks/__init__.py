"""What every exercise's checks share: the probes' registry and run (harness.py), what they report as plain data
(plain_data.py) and the models they build (models.py), reading an answer and saying a check
failed (read.py), comparisons (compare.py), inputs (inputs.py), words shared by several exercises (messages.py),
the expected values the release computed (released.py, expected.pt), scenarios and smoke cases. Each exercise's
probe and visible checks are in its folder (autograder/exercises/<id>/); its oracles stay with the instructor
(autograder/instructor/exercises/<id>/oracles.py). The in-notebook `check()` is in autograder.selfcheck."""
