"""nbgrader configuration for Lesson 20, for nbgrader's own commands and formgrader: the course, its folders
and the grading steps, from autograder/instructor/course.py (course_config) and pipeline.py. Paths are
absolute, so any working directory works."""
from autograder.instructor.course import course_config

c = get_config()  # noqa: F821 (provided by nbgrader's config loader)
c.merge(course_config())
