"""Mutants of the reference that survive every check because they do not change what is graded.

`python -m benchmarks mutation` leaves these out of the score; tests/test_mutation.py fails when an
entry no longer matches a mutant. Key: "<item>: <line before> -> <line after>", as the benchmark
prints it; value: one line saying why the mutant is equivalent.
"""
EQUIVALENT = {
    "underflow_fraction: if count == 0: -> if count <= 0:":
        "count is a number of entries, never negative, so <= 0 and == 0 agree.",
    "underflow_fraction: flushed = nonzero & (values.to(dtype) == 0) -> flushed = nonzero * (values.to(dtype) == 0)":
        "for two bool tensors torch's * is a logical and, giving the same bool tensor as &.",
    "dynamic_loss_scaler: if self.clean_steps == self.growth_interval: -> if self.clean_steps >= self.growth_interval:":
        "clean_steps goes back to 0 whenever it reaches growth_interval, so it never exceeds it "
        "(growth_interval >= 1, as torch.amp.GradScaler requires).",
    "accumulate_gradients: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=False)":
        "zeroed and absent stale gradients end the same: every trainable parameter then receives its "
        "gradient from backward(), and frozen ones keep grad None either way.",
    "accumulate_gradients: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=None)":
        "None is falsy, so this is set_to_none=False: zeroed and absent stale gradients end the same, as above.",
    "mixed_precision_train_step: model_dtype = model_params[0].dtype -> model_dtype = model_params[ 1].dtype":
        "the working copy is one dtype throughout (fp16), so any parameter's dtype is the first one's.",
    "mixed_precision_train_step: model_dtype = model_params[0].dtype -> model_dtype = model_params[ -1].dtype":
        "the working copy is one dtype throughout (fp16), so any parameter's dtype is the first one's.",
    "mixed_precision_train_step: model_dtype = model_params[0].dtype -> model_dtype = model_params[1].dtype":
        "the working copy is one dtype throughout (fp16), so any parameter's dtype is the first one's.",
    "mixed_precision_train_step: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=False)":
        "zeroed and absent stale gradients end the same: every parameter the loss reaches gets a fresh "
        "gradient from backward() before it is copied to its master.",
    "mixed_precision_train_step: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=None)":
        "None is falsy, so this is set_to_none=False: zeroed and absent stale gradients end the same, as above.",
    "token_accumulation: if counted == 0: -> if counted <= 0:":
        "counted is a number of tokens, never negative, so <= 0 and == 0 agree.",
    'token_accumulation: "token to average the loss over") -> "XXtoken to average the loss overXX")':
        "the ValueError's message still says why; its exact wording is not graded.",
    'token_accumulation: "token to average the loss over") -> "TOKEN TO AVERAGE THE LOSS OVER")':
        "the ValueError's message still says why; its exact wording is not graded.",
    "token_accumulation: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=False)":
        "zeroed and absent stale gradients end the same: every parameter of the model gets its gradient from "
        "backward() (the embedding's rows for unseen tokens get zeros either way).",
    "token_accumulation: model.zero_grad(set_to_none=True) -> model.zero_grad(set_to_none=None)":
        "None is falsy, so this is set_to_none=False: zeroed and absent stale gradients end the same, as above.",
    'q5_answer: Q5_ANSWER = "b" -> Q5_ANSWER = "B"':
        "the answer's letter is read case-blind: \"B\" is the right choice too (see alt_q5_uppercase).",
}
