"""What one graded item is, as data. An exercise (auto-graded): its id, title and contract names, its behaviours
with their points, why the central ones are its point, the other items' names its checks hand it, and the probes
that drive it. A written answer (graded by a person): its id, points and title. items.ITEMS holds both: each item
is declared once, here or in its exercise's module.

Each exercise declares one `Exercise` in its folder, autograder/exercises/<id>/__init__.py; items.py and rubric.py
build their tables from those declarations (autograder/exercises/__init__.py gathers them in the notebook's order,
exercises/order.py).
Plain data, importing nothing of the project.
"""
from dataclasses import dataclass, field
from typing import ClassVar

SOLUTION_SUFFIX = "_solution"  # grade id of an exercise's solution cell: <item id>_solution

# the lesson's ideas, in its order: each behaviour checks one (its own `concept`, else its exercise's); the class
# report sums them up ("how to weight micro-batches: 40% of the class")
CONCEPTS = {
    "range": "range and underflow",
    "scaling": "loss scaling",
    "masters": "fp32 master weights",
    "micro_batches": "weighting micro-batches",
    "overflow": "skipping on overflow",
    "tokens": "weighting by tokens",
    "quiz": "the graded quiz",
}


@dataclass(frozen=True)
class Behaviour:
    id: str
    text: str            # one line, for the student: what the exercise asks for
    points: float
    central: bool = False
    concept: str = ""    # the lesson's idea it checks (CONCEPTS), when not its exercise's


@dataclass(frozen=True)
class Exercise:
    id: str              # the nbgrader grade id of its check cell, its folders' name (exercises/<id>/)
    title: str           # declared without its number: EXERCISES numbers the code exercises in lesson order
    names: tuple         # top-level names the student's code must define (the contract)
    behaviours: tuple    # Behaviour, each with its points: the item's points are their sum
    why_central: str     # why its central behaviours are the exercise's point (a central failure caps at half)
    probes: tuple = ()   # the probes (exercises/<id>/probes.py, its own or another's) its checks drive the code with
    given: tuple = ()    # other items' names whose objects the checks hand to its code (a scaler)
    code: bool = True    # its names are code that other items' code may call (not an answer, as Q5_ANSWER)
    concept: str = ""    # the lesson's idea (CONCEPTS) its behaviours check, unless a behaviour names its own
    # {field: "value" | "report" | "words" | "measured"}: the fields its own probes' answers carry that
    # checks/answers.py SHARED does not name (what each kind means is there)
    fields: dict = field(default_factory=dict, hash=False)
    kind: ClassVar[str] = "auto"  # scored by the checks

    @property
    def solution_cell_id(self) -> str:
        return f"{self.id}{SOLUTION_SUFFIX}"

    def concept_of(self, behaviour: Behaviour) -> str:
        """The lesson's idea (a CONCEPTS key) that `behaviour` checks."""
        return behaviour.concept or self.concept

    @property
    def points(self) -> float:
        total = round(sum(b.points for b in self.behaviours), 6)
        return int(total) if total == int(total) else total


@dataclass(frozen=True)
class WrittenAnswer:
    """A question whose answer a person grades in formgrader (its model answer and rubric are in the instructor
    notebook's cell of the same grade id)."""
    id: str
    points: float
    title: str
    names: ClassVar[tuple] = ()   # no contract: the answer is prose
    given: ClassVar[tuple] = ()
    code: ClassVar[bool] = False
    kind: ClassVar[str] = "manual"
