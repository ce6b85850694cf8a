"""accumulate_gradients's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import lookup, probe
    from ...checks.models import grads_of, values_of
    from ...checks.plain_data import describe


@probe
def accumulate_gradients(ctx, ns, model, inputs, targets, loss, micro_batch_size, stale_grads=False, at_most=None,
                         twice=False):
    """at_most: the model's first layer returns NaN for a call of more examples (the gradients show it); twice:
    call it again on the same batch, from no gradient: its gradients ("grads_again") show any weight the first
    call changed."""
    fn = lookup(ns, "accumulate_gradients")
    net, batches = ctx.recorded_model(model, at_most)
    params = list(net.parameters())
    if stale_grads:
        for p in params:
            if p.requires_grad:
                p.grad = torch.full_like(p, 3.0)
    what = f"accumulate_gradients(model, {loss}, batch of {len(inputs)}, micro_batch_size={micro_batch_size})"
    with ctx.graphs_alive(batches) as graphs:
        result = ctx.call(what, fn, net, ctx.prop("LOSSES")[loss], inputs, targets, micro_batch_size)
    out = {"returned": describe(result), "grads": grads_of(params), "batches": batches, "graphs_alive": graphs["most"],
           "names": [name for name, _ in net.named_parameters()], "weights": values_of(params)}
    if twice:  # from no gradient again: only a weight the first call changed can make the second differ
        for p in params:
            p.grad = None
        ctx.call(what + ", called again", fn, net, ctx.prop("LOSSES")[loss], inputs, targets, micro_batch_size)
        out["grads_again"] = grads_of(params)
    return out
