"""The lesson's self-check questions, as data: one renderer (`quiz.quiz`) shows them all."""
from dataclasses import dataclass


@dataclass(frozen=True)
class Choice:
    text: str
    right: bool
    feedback: str


@dataclass(frozen=True)
class Question:
    prompt: str
    choices: tuple
    graded: bool = False  # graded elsewhere (a Q<n>_ANSWER cell): the widget poses it and gives nothing away


QUIZZES = {
    "warmup_1": Question(
        "Warm-up 1. What does calling `loss.backward()` populate, and why must gradients "
        "usually be zeroed before the next call?",
        (
            Choice("It updates the weights; zeroing resets the learning rate.", False,
                   "backward() never touches the weights: optimizer.step() does. backward() only computes gradients."),
            Choice("It adds d(loss)/d(parameter) into each parameter's `.grad`; without zeroing, the next "
                   "backward() would add its gradient on top of the old one.", True,
                   "Right. Gradients accumulate by default, which is a bug in ordinary training and the "
                   "whole trick behind gradient accumulation."),
            Choice("It overwrites `.grad`; zeroing only frees memory.", False,
                   "If backward() overwrote .grad, zeroing would be pointless. It adds to it."),
            Choice("It computes the loss value; zeroing resets the loss to 0.", False,
                   "The loss is computed by the forward pass. backward() computes gradients of it."),
        ),
    ),
    "warmup_2": Question(
        "Warm-up 2. Why does gradient norm clipping rescale the entire gradient vector rather "
        "than capping each parameter's gradient independently?",
        (
            Choice("Because capping each entry is not possible in PyTorch.", False,
                   "It is possible (`clip_grad_value_` does it). The reason is what it does to the step."),
            Choice("Multiplying every entry by one factor keeps the gradient's direction: the step still "
                   "points the same way downhill, only shorter.", True,
                   "Right. Capping entries one by one shrinks the large ones more than the small ones, "
                   "so the step points somewhere else."),
            Choice("Rescaling makes all gradient entries equal, which stabilises training.", False,
                   "One common factor keeps the entries' ratios; it does not make them equal."),
            Choice("Capping each entry would make the step longer.", False,
                   "Capping can only shrink entries. The problem is that it changes the direction."),
        ),
    ),
    "practice_5": Question(
        "Practice 5. Which line gets all three right: what the fp32 master copy is for, what limits the "
        "loss scale S, and how gradient accumulation weights its micro-batches?",
        (
            Choice("a) The master copy keeps updates too small for fp16's precision; S is chosen so that the scaled "
                   "loss stays below 65504; each micro-batch's mean loss, whatever its size, is divided by the "
                   "number of micro-batches.", False,
                   "The loss is computed in fp32 and may be large: it is the fp16 gradients that must stay below "
                   "65504 (max |grad| * S < 65504). And dividing by the number of micro-batches is right only when "
                   "they all have the same size."),
            Choice("b) The master copy keeps updates too small for fp16's precision; S is chosen so that every "
                   "scaled gradient stays below 65504; each micro-batch's mean loss, whatever its size, is weighted "
                   "by its share of the batch.", True,
                   "Right: the master copy is about precision (w + lr * grad rounding back to w), the limit on S is "
                   "the largest scaled gradient, and weighting by share gives the whole batch's mean."),
            Choice("c) The master copy keeps gradients too small for fp16's range; S is chosen so that every scaled "
                   "gradient stays below 65504; each micro-batch's mean loss, whatever its size, is divided by the "
                   "number of micro-batches.", False,
                   "Small gradients are a matter of range, and that is loss scaling's job; the master copy is about "
                   "precision, updates that round away. And dividing by the number of micro-batches is right only "
                   "when they all have the same size."),
            Choice("d) The master copy keeps gradients too small for fp16's range; S is chosen so that the scaled "
                   "loss stays below 65504; each micro-batch's mean loss, whatever its size, is weighted by its "
                   "share of the batch.", False,
                   "The master copy is about precision (updates that round away), not range; and the limit on S "
                   "comes from the largest scaled gradient in fp16, not from the loss, which is computed in fp32."),
        ),
        graded=True,
    ),
}
