"""autograder.report: what a student reads for an item's outcomes."""
from autograder.items import get_item
from autograder.report import NOT_IMPLEMENTED, item_html, item_text
from autograder.runner import ItemResult, Outcome


def result(*outcomes):
    return ItemResult(get_item("static_loss_scaler"), list(outcomes))


def test_an_unwritten_exercise_is_one_line():
    text = item_text(result(Outcome("a", False, "x", reason="not_implemented"),
                            Outcome("b", False, "y", hidden=True, reason="not_implemented")))
    assert text.splitlines()[1].strip() == NOT_IMPLEMENTED and len(text.splitlines()) == 2


def test_failures_say_why_once_and_hidden_checks_are_marked():
    text = item_text(result(Outcome("scales", True), Outcome("unscale", False, "divide in place"),
                            Outcome("again", False, "divide in place", hidden=True)))
    assert "FAIL  unscale" in text and "divide in place" in text
    assert "FAIL  again (hidden check)" in text and "same problem as above" in text


def test_html_escapes_student_text():
    page = item_html(result(Outcome("<b>", False, "<script>alert(1)</script>"), Outcome("ok", True)))
    assert "<script>" not in page and "&lt;script&gt;" in page


def test_the_first_failure_is_the_first_failing_checks_message_as_the_report_shows_it():
    from autograder.report import first_failure
    failing = result(Outcome("scales", True), Outcome("unscale", False, "divide in place"),
                     Outcome("again", False, "copy first", hidden=True))
    assert first_failure(failing) == "divide in place" and "divide in place" in item_text(failing)
    assert first_failure(result(Outcome("a", False, "x", reason="not_implemented"))) == NOT_IMPLEMENTED
    assert first_failure(result(Outcome("ok", True))) == ""
