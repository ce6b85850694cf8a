"""Mistakes in the contract's other dimensions (issue: the checks used keywords only, models without buffers,
and no run after an overflow): each must lose points on its item, and only there."""
from . import Replace
from .buggy import bug, step_variant

CONTRACT_BUGS = [
    bug("dynamic_swaps_factor_parameters", "dynamic_loss_scaler",
        Replace("dynamic_loss_scaler", "DynamicLossScaler.__init__", '''
    def __init__(self, init_scale: float = 2.0**16, backoff_factor: float = 0.5,
                 growth_factor: float = 2.0, growth_interval: int = 2000):
        super().__init__(init_scale)
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = growth_interval
        self.clean_steps = 0
'''), doc="the constructor's backoff_factor and growth_factor swapped: right by keyword, wrong in order",
        cause="order", synonyms=("in order", "growth_factor")),
    bug("static_scale_keyword_only", "static_loss_scaler",
        Replace("static_loss_scaler", "StaticLossScaler.__init__", '''
    def __init__(self, *, scale: float = 1024.0):
        self.scale = float(scale)
'''), doc="the scale made keyword-only: StaticLossScaler(8.0), which the signature allows, raises TypeError",
        cause="positional", synonyms=("signature",), also=("dynamic_loss_scaler",)),
    bug("master_from_state_dict", "master_weights",
        Replace("master_weights", "make_master_params", '''
def make_master_params(model):
    return [t.detach().to(torch.float32, copy=True).requires_grad_(True) for t in model.state_dict().values()]
'''), doc="masters made from state_dict(): a model's buffers (BatchNorm's statistics) become masters too",
        cause="buffer", synonyms=("state_dict", "parameters()")),
    step_variant("step_clears_grads_only_after_a_step",
                 "zeroes the gradients after a successful step only: after one overflow the inf gradients stay, "
                 "and every later call skips", cause="overflow", synonyms=("clear the gradients", "carry over"),
                 zero="pass",
                 copy_back="master_params_to_model_params(model_params, master_params)\n"
                           "        model.zero_grad(set_to_none=True)"),
]
