"""Instructor-only tools: the reference, hidden checks, release and grading. Not shipped to students."""
