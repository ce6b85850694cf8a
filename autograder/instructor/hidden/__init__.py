"""Hidden checks: run only by the grader, never shipped to students."""
