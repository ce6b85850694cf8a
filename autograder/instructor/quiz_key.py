"""The key to the graded quiz question (Practice 5), kept out of the student package.

The grader takes the right letter from the reference notebook's `Q5_ANSWER`; this module holds the
same letter (tests/test_quizzes.py checks they agree) and why each choice is right or wrong: the hidden
check shows a student the feedback of the letter they recorded, once the notebook is graded.
"""
PRACTICE_5_ANSWER = "b"

PRACTICE_5_FEEDBACK = {
    "a": "Neither technique changes the training objective. Accumulation leaves the same whole-batch gradient in "
         ".grad (up to the order of the additions), and mixed precision computes the same loss of the same model "
         "in lower precision, so its outputs differ only by rounding and a correct run trains to about the same "
         "result (the demos of sections 4 and 5 measure both).",
    "b": "Right, though two of its words promise more than they should. The weights are not stored at half cost: "
         "the fp16 working copy sits beside an fp32 master copy, 6 bytes per parameter against fp32's 4 (12 "
         "against 8 with this lesson's fp32 master gradients, section 5); what halves is the activations. And "
         "'neither changes what the model computes' holds for the function and the objective, which stay the "
         "same; mixed precision computes them with fp16 rounding, so the numbers differ slightly.",
    "c": "That is what accumulation must not do: zeroing after every micro-batch throws away every micro-batch's "
         "gradient but the last one's. Accumulation zeroes once per optimizer step and lets backward() add the "
         "micro-batches up.",
    "d": "The gradients are divided by S (unscaled) before clipping and before the step, so the step uses the true "
         "gradient. The scale lives only in the backward pass, where it keeps small gradients from flushing to "
         "zero.",
}
