"""Gradient accumulation."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='accumulate_gradients',
    title='gradient accumulation',
    names=('accumulate_gradients',),
    behaviours=(
        Behaviour('full_batch_gradient', 'Leaves in each .grad the gradient of the whole batch', 0.7, central=True),
        Behaviour('micro_batches', 'Passes the model at most micro_batch_size examples at a time, and keeps one '
                                   "micro-batch's graph alive at a time (measured memory)", 0.4, central=True),
        Behaviour('any_split', 'Any split works: a smaller last micro-batch, micro-batches of 1 or larger than the '
                               'batch, other models and losses', 0.3),
        Behaviour('stale_discarded', 'Discards gradients present before the call, and changes no weight', 0.3),
        Behaviour('mean_loss', 'Returns the whole-batch mean loss as a Python float', 0.3),
    ),
    why_central="Accumulation must give the whole batch's gradient while holding only one micro-batch's "
                'activations: either alone misses the point.',
    concept='micro_batches',
    probes=('accumulate_gradients',),
)
