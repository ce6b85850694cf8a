"""Lesson 20: mixed precision and gradient accumulation. Student helpers, checks and (for instructors) the autograder."""
