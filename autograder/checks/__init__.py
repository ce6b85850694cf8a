"""The checks: probes that drive student code (probes.py, built from harness.py), plain-data helpers and the
expected values the release computed (expect.py, expected.pt), and the visible pytest checks of each item
(test_<item id>.py). The oracles themselves stay with the instructor (instructor/oracles.py). The in-notebook
`check()` is in autograder.selfcheck."""
