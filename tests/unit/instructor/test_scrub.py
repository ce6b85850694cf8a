"""autograder.instructor.scrub: a text that quotes the reference's code (source, bytecode in hex, base64, a bytes
repr or numbers, a disassembly, its names and constants) is withheld; the checks' ordinary messages are not. The
reference's own code objects are the oracle: each encoding is made from them here."""
import base64
import dis

import pytest

from autograder.grading import SubmissionResult
from autograder.instructor.reference import reference_namespace, stand_in_units
from autograder.instructor.scrub import leak, reference_secrets, scrub, scrub_result
from autograder.items import ROOT, get_item
from autograder.runner import ItemResult, Outcome
from autograder.text import WITHHELD

SECRETS = reference_secrets(ROOT)


def stand_in(name):
    return reference_namespace()[name]


CODE = stand_in("accumulate_gradients").__code__.co_code
ENCODED = {
    "hex": CODE.hex(), "hex with spaces": CODE.hex(" "), "base64": base64.b64encode(CODE).decode(),
    "base64 from byte 5": base64.b64encode(CODE[5:]).decode(), "urlsafe base64": base64.urlsafe_b64encode(CODE).decode(),
    "bytes repr": repr(CODE), "list of numbers": str(list(CODE)), "disassembly": dis.Bytecode(stand_in("accumulate_gradients")).dis(),
}
# a solution line, indented as in its cell (not one of the signature's, which the student notebook holds too)
LINE = next(line for line in stand_in_units(ROOT)["units"][4]["source"].splitlines()
            if " ".join(line.split()) in SECRETS.lines and "SOLUTION" not in line)


def test_the_secrets_are_not_empty():
    assert len(SECRETS.lines) > 30 and len(SECRETS.grams) > 500 and SECRETS.names


@pytest.mark.parametrize("how", sorted(ENCODED))
@pytest.mark.parametrize("offset", [0, 7])
def test_reference_bytecode_in_a_plain_encoding_is_found_even_cut_to_a_messages_length(how, offset):
    text = ("raised ValueError: " + ENCODED[how][offset:])[:400]  # text.LIMITS["message"]
    assert leak(text, SECRETS), (how, text)
    assert scrub(text, SECRETS) == WITHHELD


@pytest.mark.parametrize("text", [LINE, repr(LINE + "\n" + LINE), "### BEGIN SOLUTION"])
def test_a_solution_line_as_it_is_or_in_a_repr_is_found(text):
    assert leak(f"raised ValueError: {text}", SECRETS) == "source"


@pytest.mark.parametrize("index", range(8))
def test_a_source_line_in_base64_is_found(index):
    line = SECRETS.lines[index]  # padded or not: every length of line modulo 3 is among the first eight
    assert leak(base64.b64encode(line.encode()).decode(), SECRETS) == "source", line


def test_a_repr_of_the_references_own_names_is_found():
    names = sorted(SECRETS.names - {"__classcell__", "__module__", "__qualname__"})[:4]
    assert leak(repr(tuple(names)), SECRETS) == "names"


@pytest.mark.parametrize("message", [
    "accumulate_gradients(batch of 10, micro_batch_size=4): grads differ from one full batch by 1.8e-01 in layer "
    "0.weight. The last micro-batch has 2 examples: did you weight each micro-batch's loss by its share?",
    "mixed_precision_train_step returned (1.2345, True); expected (1.2346, True)",
    "While your notebook ran, cell 12 raised KeyError: 'abcdefABCDEF0123456789' at x = table[key]",
    "underflow_fraction(tensor([1.0000e-08, 2.0000e+00, 0.0000e+00])) returned 0.333 (a float)",
    "your code ran out of time: 60 s for this exercise",
    "scale trace [65536.0, 32768.0, 65536.0, 131072.0, 65536.0, 32768.0, 16384.0, 8192.0, 4096.0]",
])
def test_the_checks_ordinary_messages_are_kept(message):
    assert leak(message, SECRETS) == "" and scrub(message, SECRETS) == message


def test_a_result_is_scrubbed_in_every_text_that_came_from_the_sandbox():
    item = get_item("mixed_precision_train_step")
    result = SubmissionResult("graded", "cell 3 raised ValueError: " + ENCODED["hex"][:200], {
        item.id: ItemResult(item, [Outcome("a check", False, "raised ValueError: " + ENCODED["base64"][:300]),
                                   Outcome("another", False, "returned 2.0, expected 1.0")],
                            review=["caught " + ENCODED["disassembly"][:200]])},
        problems=[{"cell": 3, "type": "ValueError", "message": ENCODED["bytes repr"][:300], "where": "x = 1"}])
    scrub_result(result, SECRETS)
    outcomes = result.items[item.id].outcomes
    assert outcomes[0].message == WITHHELD and outcomes[1].message == "returned 2.0, expected 1.0"
    assert result.reason == WITHHELD and result.items[item.id].review == [WITHHELD]
    assert result.problems[0]["message"] == WITHHELD and result.problems[0]["where"] == "x = 1"


def test_a_bytes_repr_cut_inside_an_escape_with_text_after_it_is_found():
    """A message clipped in the middle of an escape, then the location the grader appends after it."""
    text = "raised ValueError: " + repr(CODE)[300:][:380] + "\\x0... (line 25 in accumulate_token_gradients():"
    assert leak(text, SECRETS) == "bytecode"


def test_a_quoted_local_name_of_the_reference_is_found_and_torchs_own_names_are_not():
    secret = sorted(SECRETS.names)  # the reference's local names that no public file (notebook, checks) holds
    assert secret and leak(f"raised ValueError: {tuple(['model', 'inputs', *secret])!r}", SECRETS) == "names"
    assert leak("raised ValueError: ('model', 'inputs')", SECRETS) == ""  # names any code has
    assert leak("AttributeError: 'NoneType' object has no attribute 'detach'", SECRETS) == ""
