"""The lesson's self-check questions, as data: one renderer (`quiz.quiz`) shows them all.

A graded question (`graded=True`) ships its choices only: which one is right, and the feedback for
each, stay with the instructor (autograder/instructor/quiz_key.py), since this module is in the
student package.
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
        "usually be zeroed before the next call?",
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
    "wrapup_objective": Question(
        "Self-check (ungraded). Which claim correctly describes what mixed precision and gradient "
        "accumulation change about training?",
        (
            Choice("Both change what is optimized: 16-bit numbers and smaller batches give up some of the "
                   "objective in return for less memory.", False,
                   "Neither changes the objective. Mixed precision computes the same loss in lower precision, and "
                   "accumulation computes the same whole-batch gradient: a correct implementation of either "
                   "trains to about the same result."),
            Choice("Neither changes the objective: mixed precision does most arithmetic in 16 bits; accumulation "
                   "sums micro-batch gradients.", True,
                   "Right. Both are about memory: fewer bytes per number, and one micro-batch's activations "
                   "alive at a time. The loss being minimised is the same, and a correct run ends about where "
                   "an fp32 run on the whole batch would."),
            Choice("Accumulation still zeroes the gradients after every micro-batch's backward(), just as "
                   "ordinary training does.", False,
                   "Zeroing after every micro-batch would throw away all but the last one's gradient. Accumulation "
                   "zeroes once per optimizer step and lets backward() add the micro-batches up."),
            Choice("Loss scaling changes the objective: the optimizer steps on gradients that stay multiplied by "
                   "the loss scale S.", False,
                   "The gradients are divided by S (unscaled) before clipping and before the step, so the step "
                   "uses the true gradient; the scale only keeps small gradients from underflowing in the "
                   "backward pass."),
        ),
    ),
    "practice_5": Question(  # graded: its key and feedback are in autograder/instructor/quiz_key.py
        "Practice 5. Which line gets all three right: what the fp32 master copy is for, what limits the "
        "loss scale S, and how gradient accumulation weights its micro-batches?",
        (
            Choice("a) The master copy keeps weight updates that fp16 would lose, to underflow or to rounding in "
                   "the sum; S is chosen so that the scaled loss stays below 65504; each micro-batch's mean loss, "
                   "whatever its size, is divided by the number of micro-batches."),
            Choice("b) The master copy keeps small activation gradients that fp16 would flush to zero in the "
                   "backward pass; S is chosen so that every scaled gradient stays below 65504; each micro-batch's "
                   "mean loss, whatever its size, is divided by the number of micro-batches."),
            Choice("c) The master copy keeps weight updates that fp16 would lose, to underflow or to rounding in "
                   "the sum; S is chosen so that every scaled gradient stays below 65504; each micro-batch's mean "
                   "loss, whatever its size, is weighted by its share of the batch."),
            Choice("d) The master copy keeps small activation gradients that fp16 would flush to zero in the "
                   "backward pass; S is chosen so that the scaled loss stays below 65504; each micro-batch's mean "
                   "loss, whatever its size, is weighted by its share of the batch."),
        ),
        graded=True,
    ),
}
