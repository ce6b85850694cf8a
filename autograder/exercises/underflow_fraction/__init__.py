"""Which values underflow in half precision."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='underflow_fraction',
    title='which values underflow in half precision',
    names=('underflow_fraction',),
    behaviours=(
        Behaviour('counts_flushed_nonzero', 'Counts, among the nonzero entries, those that become exactly 0 when '
                                            "cast, with the cast's own rounding (zeros are not counted)",
                                            0.4, central=True),
        Behaviour('uses_dtype', "Casts to the dtype argument, whatever the input's dtype (bfloat16 keeps what "
                                'float16 loses)', 0.2),
        Behaviour('nan_inf_nonzero', 'NaN and ±inf count as nonzero', 0.1),
        Behaviour('python_float', 'Returns a Python float, and 0.0 when no entry is nonzero', 0.2),
        Behaviour('any_shape_input_kept', 'Works on any shape and leaves its input unchanged', 0.1),
    ),
    why_central='Counting what a cast flushes to zero is the measurement the whole exercise is about.',
    concept='range',
    probes=('underflow_fraction',),
    fields={'result': 'value', 'again': 'value', 'input_after': 'report'},
)
