"""nbgrader configuration for Lesson 20, for nbgrader's own commands and formgrader: the course, its folders
and the grading steps, from autograder/instructor/course.py (course_config) and pipeline.py. The course is the
folder this file is in (never where the autograder package is installed), and its paths are absolute, so any
working directory works."""
from pathlib import Path

from autograder.instructor.course import course_config

c = get_config()  # noqa: F821 (provided by nbgrader's config loader)
c.merge(course_config(Path(__file__).resolve().parent))  # noqa: F821 (__file__: set by the config loader)
