"""Hostile submissions that take a graded answer from the student package instead of computing it.

The package once shipped the checks' oracles (torch's own scale-update kernel among them), and an
unwritten DynamicLossScaler.update() that called one earned full marks. Now it ships only the values
the release computed for the visible checks' fixed inputs (autograder/checks/expected.pt), and every
behaviour those values decide has a hidden check on other inputs. Neither attack may earn more than
the unwritten update() it stands in for (buggy `dynamic_update_does_nothing`).
"""
from . import Replace
from .hostile import hostile

# update() calls the oracle the student package used to ship; without it, it does nothing
CALLS_THE_SHIPPED_ORACLE = '''
def update(self, found_inf):
    try:
        from autograder.checks.expect import torch_scales
    except ImportError:
        return
    if not hasattr(self, "_flags"):
        self._start, self._flags = self.scale, []
    self._flags.append(bool(found_inf))
    self.scale = torch_scales(self._start, self.growth_factor, self.backoff_factor, self.growth_interval,
                              self._flags)[-1]
'''

# update() replays the scale sequences the release stored for the visible checks: it follows the stored
# sequence that matches the scales so far and goes down on an overflow, up or level otherwise
REPLAYS_EXPECTED_VALUES = '''
def update(self, found_inf):
    try:
        import os
        import autograder.checks
        stored = torch.load(os.path.join(os.path.dirname(autograder.checks.__file__), "expected.pt"),
                            weights_only=True)
    except Exception:
        return
    if not hasattr(self, "_history"):
        self._history = [self.scale]
    n = len(self._history)
    for key, scales in stored.items():
        if (key.startswith("torch_scales/") and len(scales) > n and list(scales[:n]) == self._history
                and (scales[n] < scales[n - 1]) == bool(found_inf)):
            self.scale = scales[n]
            break
    self._history.append(self.scale)
'''

HOSTILE_ORACLE = [
    hostile("hostile_calls_the_shipped_oracle",
            Replace("dynamic_loss_scaler", "DynamicLossScaler.update", CALLS_THE_SHIPPED_ORACLE),
            twin="dynamic_update_does_nothing", expect={"dynamic_loss_scaler": "less"},
            doc="update() unwritten: it returns torch's own update kernel's scale, from the student package"),
    hostile("hostile_replays_expected_values",
            Replace("dynamic_loss_scaler", "DynamicLossScaler.update", REPLAYS_EXPECTED_VALUES),
            twin="dynamic_update_does_nothing", expect={"dynamic_loss_scaler": "less"},
            doc="update() unwritten: it replays the scales stored for the visible checks in expected.pt"),
]
