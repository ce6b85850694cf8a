"""The key to the graded quiz question (Practice 5), kept out of the student package.

The grader takes the right letter from the reference notebook's `Q5_ANSWER`; this module holds the
same letter (tests/test_quizzes.py checks they agree) and, for the instructor, why each choice is
right or wrong.
"""
PRACTICE_5_ANSWER = "c"

PRACTICE_5_FEEDBACK = {
    "a": "The master copy is right: fp16 loses small updates in two ways, lr * grad at or below 2^-25 (half of "
         "fp16's smallest subnormal, 2^-24) underflowing to 0 (range) and an update below half the gap to the next "
         "fp16 number rounding away when added (precision). But the loss is computed in fp32 and may be large: it "
         "is the fp16 gradients that must stay below 65504 (max |grad| * S < 65504). And dividing by the number of "
         "micro-batches is right only when they all have the same size.",
    "b": "Activation gradients belong to the backward pass, and keeping them in range is loss scaling's job. The "
         "master copy keeps the weight updates, which fp16 loses to underflow (lr * grad at or below 2^-25) or to "
         "rounding when added to the weight. And dividing by the number of micro-batches is right only when they "
         "all have the same size.",
    "c": "Right: the master copy keeps the updates fp16 loses in two ways (lr * grad at or below 2^-25 underflows "
         "to 0; an update below half the gap rounds away when added to the weight), the limit on S is the largest "
         "scaled gradient in fp16, and weighting by share gives the whole batch's mean.",
    "d": "Activation gradients belong to the backward pass, and keeping them in range is loss scaling's job; the "
         "master copy keeps the weight updates, which fp16 loses to underflow or to rounding in the sum. And the "
         "limit on S comes from the largest scaled gradient in fp16, not from the loss, which is computed in fp32.",
}
