"""The checks: probes that drive student code (probes.py), oracles (expect.py), and the visible
pytest checks of each item (test_<item id>.py). The in-notebook `check()` is in autograder.selfcheck."""
