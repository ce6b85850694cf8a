"""An fp32 master copy of fp16 weights."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='master_weights',
    title='an fp32 master copy of fp16 weights',
    names=('make_master_params', 'model_grads_to_master_grads', 'master_params_to_model_params'),
    behaviours=(
        Behaviour('fp32_leaves', 'make_master_params returns a list of fp32 leaves with requires_grad=True, one '
                                 "per parameter in order, holding its values, and leaves the model's parameters as "
                                 'they were', 0.4, central=True),
        Behaviour('separate_copies', 'Each master owns its memory, even when the model is already fp32',
                                     0.4, central=True),
        Behaviour('grads_to_fp32', "model_grads_to_master_grads sets each master's .grad to an fp32 copy of the "
                                   "model's .grad that shares no memory with it, None where it is None", 0.5),
        Behaviour('copy_back', 'master_params_to_model_params copies the masters into the existing fp16 '
                               'parameters, in place and untracked', 0.4, central=True),
        Behaviour('copy_back_any_dtype', 'The copy back keeps any model dtype (bf16, fp32), reads a generator, and '
                                         'leaves the masters alone', 0.3),
    ),
    why_central='The master copy exists to hold the weights in fp32, apart from the fp16 model, and to write them '
                'back into the same fp16 parameters; fp16 or aliased masters lose the small updates the copy is '
                'for.',
    concept='masters',
    probes=('make_master_params', 'master_params_to_model_params', 'model_grads_to_master_grads'),
    fields={
        'values': 'value', 'updated': 'value', 'after_model_changed': 'value', 'master_grads': 'value',
        'master_grads_after_model_changed': 'value', 'masters_after': 'value', 'masters_after_model_changed': 'value',
        'device': 'report', 'shape': 'report', 'is_leaf': 'report', 'requires_grad': 'report',
        'shares_memory': 'report', 'model_kept': 'report', 'model_devices': 'report', 'master_grad_dtypes': 'report',
        'dtypes_kept': 'report', 'leaves': 'report'},
)
