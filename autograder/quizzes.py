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
        "Practice 5. Which claim correctly describes what mixed precision and gradient accumulation "
        "change about training?",
        (
            Choice("a) Both techniques change the model's computed outputs and the training objective, "
                   "trading some accuracy for memory savings.", False,
                   "Neither changes the objective. A correct implementation trains to essentially the same result."),
            Choice("b) Mixed precision stores activations, and a working copy of the weights and gradients, in half "
                   "precision, using a full-precision master copy and loss scaling to counter half precision's "
                   "limited range; gradient accumulation simulates a larger batch by summing several micro-batches' "
                   "gradients before one optimizer step; neither changes what the model computes.", True,
                   "Right: both are about fitting the run into memory, not about the model. (The master copy "
                   "means the weights and gradients themselves cost more bytes, not fewer: the saving is in the "
                   "activations.)"),
            Choice("c) Gradient accumulation requires zeroing gradients after every micro-batch, the same as "
                   "ordinary training.", False,
                   "Zeroing after every micro-batch would throw away what the earlier micro-batches contributed. "
                   "You zero once per optimizer step."),
            Choice("d) Loss scaling permanently changes the magnitude of the gradients the optimizer step uses.",
                   False,
                   "The gradients are divided by the same factor before the optimizer sees them (unscaling)."),
        ),
        graded=True,
    ),
}
