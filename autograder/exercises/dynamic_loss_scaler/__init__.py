"""A dynamic loss scaler."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='dynamic_loss_scaler',
    title='a dynamic loss scaler',
    names=('DynamicLossScaler',),
    behaviours=(
        Behaviour('backoff', 'An overflow multiplies the scale by backoff_factor', 0.5, central=True, concept='overflow'),
        Behaviour('no_minimum', 'There is no minimum scale', 0.2),
        Behaviour('growth', 'The scale grows by growth_factor after growth_interval clean updates in a row; an '
                            'overflow or a growth restarts the count', 0.7),
        Behaviour('defaults', "torch's defaults: init_scale 2^16, growth_interval 2000", 0.3),
        Behaviour('inherits', 'scale_loss and unscale_ work as in StaticLossScaler (when graded, what your class '
                              "inherits is the reference's: your StaticLossScaler is graded in {static_loss_scaler} only)", 0.3),
    ),
    why_central='Backing off on overflow is what makes the scale dynamic: without it one inf stops training for '
                'good.',
    concept='scaling',
    probes=('loss_scaler', 'scaler_updates', 'scalers_side_by_side'),
)
