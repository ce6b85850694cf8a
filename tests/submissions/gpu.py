"""Notebooks as students write them on a GPU, graded on the grader's CPU (issue: students on a GPU).

The correct ones take every device from the model or the inputs, or guard CUDA with
torch.cuda.is_available(), and keep full marks on the CPU, even with a default device set to CUDA in the
setup. The mistakes hard-wire CUDA inside a graded function: they lose the item, and the first failing
message names the cause (the grader runs on the CPU; take the device from p.device or inputs.device).
"""
from . import NewCell, Replace, Variant


def gpu(name, *edits, doc):
    return Variant(name, "realistic", tuple(edits), doc=doc)


def cuda_bug(name, item, *edits, doc, also=()):
    return Variant(name, "buggy", tuple(edits), item=item, also=also, doc=doc, cause="p.device",
                   synonyms=("inputs.device",))


UNSCALE_ON_DEVICE = '''
    def unscale_(self, params) -> bool:
        found = None  # an accumulator on the gradients' own device: no sync per parameter
        for p in params:
            if p.grad is None:
                continue
            p.grad.div_(self.scale)
            bad = ~torch.isfinite(p.grad).all()
            found = bad if found is None else found | bad
        return bool(found) if found is not None else False
'''

ACCUMULATE_ON_PARAM_DEVICE = '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    device = next(model.parameters()).device  # wherever the model lives
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total = torch.zeros((), device=device)  # summed on the device, one .item() at the end
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size].to(device, non_blocking=True)
        y = targets[start:start + micro_batch_size].to(device, non_blocking=True)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total += loss.detach() * share
    return float(total)
'''

GPU = [
    gpu("gpu_default_device_cuda", NewCell("cell-01", '''
        # I train on the lab's GPU: every new tensor goes there by default
        torch.set_default_device("cuda")
        '''), Replace("static_loss_scaler", "StaticLossScaler.unscale_", UNSCALE_ON_DEVICE),
        doc="torch.set_default_device('cuda') in the setup (the lesson's demos then fail on a CPU), and "
            "device-agnostic graded code: the checks run with the CPU as the default device"),
    gpu("gpu_default_device_picked", NewCell("cell-01", '''
        torch.set_default_device(DEVICE)  # the GPU when there is one
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        '''), Replace("accumulate_gradients", "accumulate_gradients", ACCUMULATE_ON_PARAM_DEVICE),
        doc="torch.set_default_device(DEVICE) and TF32 switched on in the setup; accumulation on the model's "
            "device with non_blocking copies"),
    gpu("gpu_availability_guards", NewCell("cell-01", '''
        USE_CUDA = torch.cuda.is_available()
        if USE_CUDA:
            print(torch.cuda.get_device_name(0))
            torch.cuda.reset_peak_memory_stats()
        '''), Replace("master_weights", "make_master_params", '''
def make_master_params(model: nn.Module) -> list:
    masters = [p.detach().to(torch.float32, copy=True).requires_grad_(True) for p in model.parameters()]
    if torch.cuda.is_available():
        torch.cuda.synchronize()  # so the copies are done before anyone times the step
    return masters
'''), doc="torch.cuda.is_available() guards around CUDA calls, in the setup and inside a graded function"),
    gpu("gpu_device_from_inputs", Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    device, model_dtype = model_params[0].device, model_params[0].dtype
    model.zero_grad(set_to_none=True)
    inputs, targets = inputs.to(device), targets.to(device)
    n = inputs.shape[0]
    total = torch.zeros((), dtype=torch.float32, device=device)
    for start in range(0, n, micro_batch_size):
        x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / n
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total += loss.detach() * share
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return total.item(), not found_inf
'''), doc="the step takes its device from the model's parameters and keeps the loss on it"),
    cuda_bug("gpu_masters_dot_cuda", "master_weights", Replace("master_weights", "make_master_params", '''
def make_master_params(model: nn.Module) -> list:
    return [p.detach().float().cuda().requires_grad_(True) for p in model.parameters()]
'''), also=("mixed_precision_train_step",),
        doc="make_master_params puts the masters on the GPU with .cuda(), whatever the model's device"),
    cuda_bug("gpu_inputs_to_cuda", "accumulate_gradients", Replace("accumulate_gradients", "accumulate_gradients", '''
def accumulate_gradients(model, loss_fn, inputs, targets, micro_batch_size):
    inputs, targets = inputs.to("cuda"), targets.to("cuda")
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x, y = inputs[start:start + micro_batch_size], targets[start:start + micro_batch_size]
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x), y)
        (loss * share).backward()
        total_loss += loss.item() * share
    return total_loss
'''), doc="accumulate_gradients moves the batch to 'cuda' instead of the model's device"),
    cuda_bug("gpu_found_inf_on_cuda", "static_loss_scaler", Replace("static_loss_scaler", "StaticLossScaler.unscale_", '''
    def unscale_(self, params) -> bool:
        found = torch.zeros((), dtype=torch.bool, device="cuda")
        for p in params:
            if p.grad is None:
                continue
            p.grad.div_(self.scale)
            found |= ~torch.isfinite(p.grad).all()
        return bool(found)
'''), also=("dynamic_loss_scaler", "mixed_precision_train_step"),
        doc="unscale_ keeps its overflow flag in a tensor made on 'cuda'"),
    cuda_bug("gpu_step_uses_global_device", "mixed_precision_train_step", NewCell("cell-01", '''
        TRAIN_DEVICE = torch.device("cuda")  # the lab's GPU
        '''), Replace("mixed_precision_train_step", "mixed_precision_train_step", '''
def mixed_precision_train_step(model, master_params, optimizer, scaler, loss_fn, inputs, targets,
                               micro_batch_size, max_grad_norm=None):
    model_params = list(model.parameters())
    model_dtype = model_params[0].dtype
    model.zero_grad(set_to_none=True)
    batch_size = inputs.shape[0]
    total_loss = 0.0
    for start in range(0, batch_size, micro_batch_size):
        x = inputs[start:start + micro_batch_size].to(TRAIN_DEVICE)
        y = targets[start:start + micro_batch_size].to(TRAIN_DEVICE)
        if x.is_floating_point():
            x = x.to(model_dtype)
        share = x.shape[0] / batch_size
        loss = loss_fn(model(x).float(), y)
        scaler.scale_loss(loss * share).backward()
        total_loss += loss.item() * share
    model_grads_to_master_grads(model_params, master_params)
    found_inf = scaler.unscale_(master_params)
    if not found_inf:
        if max_grad_norm is not None:
            torch.nn.utils.clip_grad_norm_(master_params, max_grad_norm)
        optimizer.step()
        master_params_to_model_params(model_params, master_params)
    scaler.update(found_inf)
    return total_loss, not found_inf
'''), doc="the step moves each micro-batch to a global TRAIN_DEVICE = cuda set in the setup"),
]
