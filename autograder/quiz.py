"""One widget that renders any question in `quizzes.QUIZZES`, with feedback for each choice, and the same
question as plain text where no widget front end shows it (a terminal, `jupyter execute`, a text viewer)."""
import functools
import html
import re

from .quizzes import QUIZZES

LETTERS = "abcdefgh"
GRADED = "This question is graded: record your letter in the answer cell below."

# ipywidgets gives each radio label a fixed one-line height, so a long choice that wraps is drawn over
# the next one (and hides its button); let the labels grow, with the text hanging beside the button.
_CHOICE_STYLE = """<style>
.lesson20-quiz .widget-radio-box label {height: auto; line-height: 1.4; display: flex; margin-bottom: 0.4em}
.lesson20-quiz .widget-radio-box input {float: none; flex: none; order: -1; height: 1.4em}
</style>"""


def _inline_code(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _question(question_id: str):
    if question_id not in QUIZZES:
        raise KeyError(f"no quiz {question_id!r}; the quizzes are: {', '.join(QUIZZES)}")
    return QUIZZES[question_id]


def label(question, index: int) -> str:
    """A choice as the widget and the text show it: its letter, then its text."""
    return f"{LETTERS[index]}) {question.choices[index].text.replace('`', '')}"


def as_text(question_id: str) -> str:
    """The question in plain text: the prompt, each choice with its letter, and how to answer without a widget."""
    question = _question(question_id)
    lines = [question.prompt.replace("`", "")]
    lines += [f"  {label(question, i)}" for i in range(len(question.choices))]
    lines.append(GRADED if question.graded else
                 f'Where the widget does not show: quiz("{question_id}", "a") checks the answer a.')
    return "\n".join(lines)


def verdict(question_id: str, answer: str) -> str:
    """What the Check button says of `answer` (a letter), as plain text."""
    question = _question(question_id)
    if question.graded:
        return GRADED
    letters = LETTERS[:len(question.choices)]
    letter = str(answer).strip().strip("().").lower()
    if len(letter) != 1 or letter not in letters:
        return f"{answer!r} is not one of the choices: answer with one letter, {', '.join(letters)}."
    choice = question.choices[letters.index(letter)]
    return f"{'Correct.' if choice.right else 'Not quite.'} {choice.feedback.replace('`', '')}"


@functools.lru_cache(maxsize=None)
def _box_class():
    import ipywidgets as widgets

    class QuizBox(widgets.VBox):
        """The quiz's widgets; their plain-text form is the question itself, for front ends without widgets."""

        plain_text = ""

        def _repr_mimebundle_(self, **kwargs):
            bundle = super()._repr_mimebundle_(**kwargs)
            data = bundle[0] if isinstance(bundle, tuple) else bundle
            data["text/plain"] = self.plain_text
            return bundle

    return QuizBox


def quiz(question_id: str, answer: str = None):
    """Show a multiple-choice question; "Check" tells whether the chosen answer is right, and why.

    answer: a letter, to check it without the widget (the verdict is printed).
    """
    question = _question(question_id)
    if answer is not None:
        print(verdict(question_id, answer))
        return
    import ipywidgets as widgets
    from IPython.display import display

    prompt = widgets.HTML(f"<b>{_inline_code(question.prompt)}</b>")
    options = [(label(question, i), i) for i in range(len(question.choices))]
    radio = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
    button = widgets.Button(description="Check")
    feedback = widgets.HTML()
    feedback.add_class("lesson20-quiz-feedback")

    def on_check(_):
        if radio.value is None:
            feedback.value = "Pick an answer first."
            return
        choice = question.choices[radio.value]
        verdict_word = "Correct." if choice.right else "Not quite."
        colour = "green" if choice.right else "darkred"
        feedback.value = (f"<span style='color:{colour}' class='lesson20-quiz-{'right' if choice.right else 'wrong'}'>"
                          f"<b>{verdict_word}</b> {_inline_code(choice.feedback)}</span>")

    if question.graded:  # a Check button here would hand out the graded answer
        feedback.value = GRADED
        controls = [radio, feedback]
    else:
        button.on_click(on_check)
        controls = [radio, button, feedback]
    box = _box_class()([widgets.HTML(_CHOICE_STYLE), prompt, *controls])
    box.plain_text = as_text(question_id)
    box.add_class("lesson20-quiz")
    display(box)
