"""One widget that renders any question in `quizzes.QUIZZES`, with feedback for each choice."""
import html
import re

from .quizzes import QUIZZES

# ipywidgets gives each radio label a fixed one-line height, so a long choice that wraps is drawn over
# the next one (and hides its button); let the labels grow, with the text hanging beside the button.
_CHOICE_STYLE = """<style>
.lesson20-quiz .widget-radio-box label {height: auto; line-height: 1.4; display: flex; margin-bottom: 0.4em}
.lesson20-quiz .widget-radio-box input {float: none; flex: none; order: -1; height: 1.4em}
</style>"""


def _inline_code(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def quiz(question_id: str):
    """Show a multiple-choice question; "Check" tells whether the chosen answer is right, and why."""
    import ipywidgets as widgets
    from IPython.display import display

    if question_id not in QUIZZES:
        raise KeyError(f"no quiz {question_id!r}; the quizzes are: {', '.join(QUIZZES)}")
    question = QUIZZES[question_id]
    prompt = widgets.HTML(f"<b>{_inline_code(question.prompt)}</b>")
    options = [(choice.text.replace("`", ""), i) for i, choice in enumerate(question.choices)]
    radio = widgets.RadioButtons(options=options, value=None, layout=widgets.Layout(width="auto"))
    button = widgets.Button(description="Check")
    feedback = widgets.HTML()
    feedback.add_class("lesson20-quiz-feedback")

    def on_check(_):
        if radio.value is None:
            feedback.value = "Pick an answer first."
            return
        choice = question.choices[radio.value]
        verdict = "Correct." if choice.right else "Not quite."
        colour = "green" if choice.right else "darkred"
        feedback.value = (f"<span style='color:{colour}' class='lesson20-quiz-{'right' if choice.right else 'wrong'}'>"
                          f"<b>{verdict}</b> {_inline_code(choice.feedback)}</span>")

    if question.graded:  # a Check button here would hand out the graded answer
        feedback.value = "This question is graded: record your letter in the answer cell below."
        controls = [radio, feedback]
    else:
        button.on_click(on_check)
        controls = [radio, button, feedback]
    box = widgets.VBox([widgets.HTML(_CHOICE_STYLE), prompt, *controls])
    box.add_class("lesson20-quiz")
    display(box)
