"""accumulate_token_gradients's probe: plain inputs in, plain data out (see checks/probes.py).

In the sandbox this file is executed into the probes' namespace after checks/plain_data.py, models.py and
harness.py (what it imports below is already there); imported as a module, it takes those names from them.
Each probe is called with the request's harness.Context and the student's namespace.
"""
import torch

if not __name__.startswith("lesson20_"):  # imported as a module (a kernel, the checks' process)
    from ...checks.harness import StudentRaised, lookup, probe
    from ...checks.models import grads_of, values_of
    from ...checks.plain_data import describe, shape_text


@probe
def token_accumulation(ctx, ns, model, inputs, targets, micro_batch_size, ignore_index=None, stale_grads=False,
                       at_most=None, twice=False):
    """Call accumulate_token_gradients once; a ValueError is reported (an empty batch must raise one). at_most:
    the model's first layer returns NaN for a call of more sequences; twice: call it again on the same batch
    ("grads_again" shows any weight the first call changed)."""
    fn = lookup(ns, "accumulate_token_gradients")
    net, batches = ctx.recorded_model(model, at_most)
    params = list(net.parameters())
    if stale_grads:
        for p in params:
            p.grad = torch.full_like(p, 3.0)
    kwargs = {} if ignore_index is None else {"ignore_index": ignore_index}
    what = (f"accumulate_token_gradients(model, {shape_text(inputs)}, targets, micro_batch_size={micro_batch_size}"
            + "".join(f", {k}={v}" for k, v in kwargs.items()) + ")")
    out = {"names": [name for name, _ in net.named_parameters()], "batches": batches}
    try:
        with ctx.graphs_alive(batches) as graphs:
            result = fn(net, inputs, targets, micro_batch_size, **kwargs)
    except NotImplementedError as exc:
        raise StudentRaised(what, ctx.describe_exception(exc)) from None
    except BaseException as exc:  # the checks decide whether this exception was the right one
        return {**out, "raised": ctx.describe_exception(exc), "value_error": isinstance(exc, ValueError), "call": what,
                "grads": grads_of(params)}  # a batch without counted tokens leaves no NaN behind
    out.update({"raised": None, "call": what, "returned": describe(result), "grads": grads_of(params),
                "graphs_alive": graphs["most"],
                "weights": values_of(params)})
    if twice:  # from no gradient again: only a weight the first call changed can make the second differ
        for p in params:
            p.grad = None
        ctx.call(what + ", called again", fn, net, inputs, targets, micro_batch_size, **kwargs)
        out["grads_again"] = grads_of(params)
    return out
