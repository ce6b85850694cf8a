"""The training step's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.models import grads_of, make_leaves, make_optimizer, state_of, values_of
    from ...checks.plain_data import describe, dtype_name, kwargs_text


@probe
def mixed_precision_train_step(ctx, ns, model, masters, batches, loss, micro_batch_size, optimizer,
                               scaler=None, max_grad_norm=None, stale_grads=False, at_most=None):
    """Run the student's step once per (inputs, targets) in `batches`; report everything it touched, the model
    read through the parameters held before the first call. at_most: the model's first layer returns NaN for a
    call of more examples."""
    fn = lookup(ns, "mixed_precision_train_step")
    Scaler = ctx.prop("counting")(lookup(ns, "DynamicLossScaler"))
    net, seen = ctx.recorded_model(model, at_most)
    params = list(net.parameters())
    master_leaves = make_leaves(masters, [None] * len(masters))
    opt = make_optimizer(master_leaves, optimizer)
    scaler_obj = ctx.call(f"DynamicLossScaler({kwargs_text(scaler or {})})", Scaler, **(scaler or {}))
    steps, most = [], 0
    for i, (inputs, targets) in enumerate(batches):
        if stale_grads:
            for p in params:
                p.grad = torch.full_like(p, 7.0)
            for m in master_leaves:
                m.grad = torch.full_like(m, -5.0)
        scaler_obj.update_calls = []
        what = (f"mixed_precision_train_step(model, master_params, {optimizer['name']}, scaler, {loss}, "
                f"batch of {len(inputs)}, micro_batch_size={micro_batch_size}, max_grad_norm={max_grad_norm})"
                + (f" [call {i + 1}]" if len(batches) > 1 else ""))
        losses = []  # a report: (dtype of the output loss_fn was given, the loss) per call of it
        with ctx.graphs_alive(seen) as graphs:
            result = ctx.call(what, fn, net, master_leaves, opt, scaler_obj, ctx.prop("recorded_loss")(
                ctx.prop("LOSSES")[loss], losses), inputs, targets, micro_batch_size, max_grad_norm)
        most = max(most, graphs["most"])
        steps.append({
            "returned": describe(result),
            "masters": values_of(master_leaves),
            "model": values_of(params),
            "model_grads": grads_of(params),  # as backward() left them, unless the step cleared them
            "state": state_of(opt),
            "scale": describe(getattr(scaler_obj, "scale", None)),
            "update_calls": list(scaler_obj.update_calls),
            "loss_calls": losses,
        })
    after = list(net.parameters())
    return {
        "steps": steps,
        "batches_seen": seen,
        "graphs_alive": most,  # a report: the most micro-batch graphs held at once
        "model_dtypes": [dtype_name(p) for p in after],  # reports: the model's values above show both
        "same_objects": [a is b for a, b in zip(after, params)] + [len(after) == len(params)],
    }
