"""The lesson's self-check questions, as data: one renderer (`quiz.quiz`) shows them all.

A graded question (`graded=True`) ships its choices only: which one is right, and the feedback for
each, stay with the instructor (autograder/instructor/quiz_key.py), since this module is in the
student package. Choices carry no letters: the renderer gives them a), b), c), ... in order.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Choice:
    text: str
    right: bool = False  # a graded question's choices leave both at their defaults
    feedback: str = ""


@dataclass(frozen=True)
class Question:
    prompt: str
    choices: tuple
    graded: bool = False  # graded elsewhere (a Q<n>_ANSWER cell): the widget poses it and gives nothing away


QUIZZES = {
    "warmup_1": Question(
        "Warm-up 1. What does calling `loss.backward()` populate, and why must gradients "
        "typically be zeroed before the next call?",
        (
            Choice("It adds each gradient into its parameter's `.grad`; unzeroed, the next call adds to it.",
                   True,
                   "Right. Gradients accumulate by default, which is a bug in ordinary training and the "
                   "whole trick behind gradient accumulation."),
            Choice("It updates every weight by its gradient; zeroing resets the learning rate for the next step.",
                   False,
                   "backward() never touches the weights: optimizer.step() does. backward() only computes gradients."),
            Choice("It overwrites each parameter's `.grad`; zeroing only frees the memory the old ones hold.",
                   False,
                   "If backward() overwrote .grad, zeroing would be pointless. It adds to it."),
            Choice("It computes the loss of the batch; zeroing resets that loss to 0 before the next batch.",
                   False,
                   "The loss is computed by the forward pass. backward() computes gradients of it."),
        ),
    ),
    "warmup_2": Question(
        "Warm-up 2. Why does gradient norm clipping rescale the entire gradient vector rather "
        "than capping each parameter's gradient independently?",
        (
            Choice("PyTorch has no way to cap each entry on its own, so the whole vector must be rescaled.", False,
                   "It has one (`clip_grad_value_` does it). The reason is what capping does to the step."),
            Choice("Rescaling makes all the entries equal, so no single parameter dominates the step.", False,
                   "One common factor keeps the entries' ratios; it does not make them equal."),
            Choice("Capping each entry on its own would make the step longer than the unclipped gradient.", False,
                   "Capping can only shrink entries. The problem is that it changes the direction."),
            Choice("One common factor keeps the direction: the step points the same way, only shorter.", True,
                   "Right. Capping entries one by one shrinks the large ones more than the small ones, "
                   "so the step points somewhere else."),
        ),
    ),
    "wrapup_three_parts": Question(
        "Self-check (ungraded). Which line gets all three right: what the fp32 master copy is for, what "
        "limits the loss scale S, and how gradient accumulation weights its micro-batches?",
        (
            Choice("The master copy keeps weight updates that fp16 would lose, to underflow or to rounding in the "
                   "sum; S is chosen so that the scaled loss stays below 65504; each micro-batch's mean loss, "
                   "whatever its size, is divided by the number of micro-batches.", False,
                   "The master copy is right. But the loss is computed in fp32 and may exceed 65504: it is the "
                   "fp16 gradients that must stay below it (max |grad| · S < 65504). And dividing by the number "
                   "of micro-batches is right only when they all have the same size."),
            Choice("The master copy keeps small activation gradients that fp16 would flush to zero in the "
                   "backward pass; S is chosen so that every scaled gradient stays below 65504; each "
                   "micro-batch's mean loss, whatever its size, is divided by the number of micro-batches.", False,
                   "Keeping activation gradients in range is loss scaling's job, in the backward pass. The master "
                   "copy keeps the weight updates, which fp16 loses when they are below half the spacing at the "
                   "weight. And dividing by the number of micro-batches is right only when they all have the "
                   "same size."),
            Choice("The master copy keeps weight updates that fp16 would lose, to underflow or to rounding in the "
                   "sum; S is chosen so that every scaled gradient stays below 65504; each micro-batch's mean "
                   "loss, whatever its size, is weighted by its share of the batch.", True,
                   "Right: an update survives in fp32 where fp16 would round it away, the limit on S is the "
                   "largest scaled gradient in fp16, and weighting by share gives the whole batch's mean."),
            Choice("The master copy keeps small activation gradients that fp16 would flush to zero in the "
                   "backward pass; S is chosen so that the scaled loss stays below 65504; each micro-batch's mean "
                   "loss, whatever its size, is weighted by its share of the batch.", False,
                   "Keeping activation gradients in range is loss scaling's job; the master copy keeps the "
                   "weight updates. And the limit on S comes from the largest scaled gradient in fp16, not from "
                   "the loss, which is computed in fp32."),
        ),
    ),
    "practice_5": Question(  # graded: its key and feedback are in autograder/instructor/quiz_key.py
        "Practice 5. Which claim correctly describes what mixed precision and gradient accumulation change "
        "about training?",
        (
            Choice("Both techniques change the model's computed outputs and the training objective, trading some "
                   "accuracy for memory savings"),
            Choice("Mixed precision shrinks the storage cost of weights, activations, and gradients using a "
                   "full-precision master copy and loss scaling to counter half precision's limited range; "
                   "gradient accumulation simulates a larger batch by summing several micro-batches' gradients "
                   "before one optimizer step; neither changes what the model computes"),
            Choice("Gradient accumulation requires zeroing gradients after every micro-batch, the same as "
                   "ordinary training"),
            Choice("Loss scaling permanently changes the magnitude of the gradients the optimizer step uses"),
        ),
        graded=True,
    ),
}
