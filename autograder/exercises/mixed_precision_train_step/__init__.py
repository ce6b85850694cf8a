"""One mixed-precision training step."""
from ...exercise import Behaviour, Exercise

EXERCISE = Exercise(
    id='mixed_precision_train_step',
    title='one mixed-precision training step',
    names=('mixed_precision_train_step',),
    behaviours=(
        Behaviour('clean_step', "A clean step moves the fp32 masters by the optimizer's update of the whole-batch "
                                'gradient, copies them into the fp16 model, and returns (loss, True)', 0.4),
        Behaviour('masters_keep_updates', 'The fp32 masters are the weights: updates too small for fp16 add up in '
                                          'them, and they are never overwritten from the fp16 model',
                                          0.3, central=True),
        Behaviour('loss_scaling', 'The loss is multiplied by the scale before backward() and the fp32 master '
                                  'gradients are unscaled, so tiny gradients survive', 0.4, central=True,
                  concept='scaling'),
        Behaviour('micro_batches', 'At most micro_batch_size examples at a time, one graph alive at a time '
                                   '(measured memory), each micro-batch weighted by its share; the parameters stay '
                                   'the same fp16 objects', 0.4, central=True,
                  concept='micro_batches'),
        Behaviour('overflow_skips', 'On overflow nothing is updated (masters, model, optimizer state), the scale '
                                    'backs off and the step returns stepped=False', 0.4, central=True,
                  concept='overflow'),
        Behaviour('clip_after_unscale', "Clips the unscaled gradients' total norm, only when max_grad_norm is given",
                                        0.2, concept='scaling'),
        Behaviour('scale_update', 'scaler.update(found_inf) once per call, so the scale grows after '
                                  'growth_interval clean calls', 0.2, concept='scaling'),
        Behaviour('stale_grads', 'Gradients left over from before the call do not leak into the step', 0.2, concept='micro_batches'),
        Behaviour('integer_inputs', 'Integer inputs (token ids) are not cast to fp16', 0.2, concept='range'),
        Behaviour('any_run', 'Runs of several calls drawn at random (fp16 or bf16 models, SGD with momentum, Adam, '
                             'AdamW, frozen and unused parameters, uneven micro-batches, fp16 overflows between '
                             'clean calls) match the reference after every call', 0.3),
    ),
    why_central='The step is the recipe of the paper: fp32 masters that keep every update, loss scaling, '
                'micro-batches, and skipping the step on overflow.',
    concept='masters',
    probes=('mixed_precision_train_step',),
    given=('DynamicLossScaler',),
    fields={
        'steps': 'value', 'model': 'value', 'state': 'value',
        # the optimizer's own state, by torch's names: values of the steps the code took
        'momentum_buffer': 'value', 'step': 'value', 'exp_avg': 'value', 'exp_avg_sq': 'value',
        'batches_seen': 'report', 'update_calls': 'report', 'loss_calls': 'report'},
)
