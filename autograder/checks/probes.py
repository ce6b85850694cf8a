"""The probes: one driver per exercise that calls the student's code on plain inputs and reports what
happened as plain data (a dict of tensors, numbers, strings, lists). The checks decide pass or fail.

Each exercise's probes are in its folder (autograder/exercises/<id>/probes.py), built from harness.py, models.py
and plain_data.py; importing this module imports them all, in lesson order, and `@probe` registers each in
harness.PROBES. In the sandbox, those three and then the exercises' files (sandbox/isolation.py, PROBE_FILES) are
executed into one namespace, and nothing is imported.

A probe reports values: what the code returned, and what it left in the objects the probe handed it, read
back through the references the probe held before the call (a caller's view). What it observes besides
(aliasing, dtypes, flags, recorded sizes) are reports, for the messages only (checks/answers.py declares
which is which). Each scenario turns a behaviour into values: a later use of what the code made.
"""
from ..exercises import parts
from .harness import PROBES, run  # noqa: F401  (probes.run(namespace, name, spec) runs one of the probes)

MODULES = parts("probes")  # each exercise's probes, registered in PROBES as they are imported
