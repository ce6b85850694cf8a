"""Token-level gradient accumulation."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='token_accumulation',
    title='token-level gradient accumulation',
    names=('accumulate_token_gradients',),
    behaviours=(
        Behaviour('token_weighting', "Weights each micro-batch by its share of the batch's counted tokens, so the "
                                     'gradient is that of the mean over every counted token (not 1/k, not per '
                                     'sequence)', 0.8, central=True),
        Behaviour('micro_batches', 'At most micro_batch_size sequences at a time, one graph alive at a time '
                                   '(measured memory), and gradients from before the call discarded',
                                   0.4, central=True),
        Behaviour('mean_loss', "Returns the whole batch's mean loss per counted token, as a Python float", 0.3),
        Behaviour('empty_batch', 'A batch without any counted token raises ValueError', 0.3),
        Behaviour('weights_unchanged', 'Only gradients are computed: the weights are left as they were', 0.2),
    ),
    why_central="Weighting by counted tokens is the exercise's point; doing it one micro-batch's graph at a time "
                'is why one accumulates.',
    concept='tokens',
    probes=('token_accumulation',),
    fields={'raised': 'report', 'value_error': 'report'},
)
