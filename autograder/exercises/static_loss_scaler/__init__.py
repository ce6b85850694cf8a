"""A static loss scaler."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='static_loss_scaler',
    title='a static loss scaler',
    names=('StaticLossScaler',),
    behaviours=(
        Behaviour('scale_loss', 'scale_loss returns loss * scale, still attached to the graph', 0.3, central=True),
        Behaviour('scale', 'scale is a float attribute of each scaler: 1024.0 by default, or the value given', 0.1),
        Behaviour('unscale_divides', 'unscale_ divides every gradient by scale, in place', 0.3, central=True),
        Behaviour('overflow', 'unscale_ returns a Python bool: True when a gradient holds inf, -inf or NaN', 0.2,
                  concept='overflow'),
        Behaviour('edge_cases', 'unscale_ skips None gradients and reads a one-shot generator once', 0.1),
    ),
    why_central='Loss scaling is multiplying the loss up before backward and dividing the gradients back down; a '
                'scaler that skips either half leaves the gradients wrong by the scale.',
    concept='scaling',
    probes=('loss_scaler', 'scalers_side_by_side'),
    fields={'scaled_loss': 'value', 'weight_grad': 'value', 'found_inf': 'value', 'held_grads': 'value',
            'other_scales': 'value', 'scale_after': 'value', 'alone': 'value', 'beside': 'value'},
)
