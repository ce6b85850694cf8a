"""Practice question 5."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='q5_answer',
    title='Practice question 5',
    names=('Q5_ANSWER',),
    behaviours=(
        Behaviour('a_letter', 'Q5_ANSWER is one letter: a, b, c or d', 0.1),
        Behaviour('right_letter', 'Q5_ANSWER is the right letter', 0.9, central=True),
    ),
    why_central='The right letter is the answer.',
    concept='quiz',
    probes=('q5_answer',),
    code=False,
    fields={'answer': 'value'},
)
