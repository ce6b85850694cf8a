"""autograder.checks.plain_data: what the student's code returned or raised, as plain data. Descriptions say
what a value is (not what it claims); an exception is described by the student's own line that raised it."""
import torch

from autograder.checks import plain_data


def test_a_float_subclass_is_described_by_what_it_holds_not_what_it_says():
    class Lying(float):
        def __eq__(self, other):
            return True
    described = plain_data.describe(Lying(0.25))
    assert described["type"] == "float" and type(described["value"]) is float and described["value"] == 0.25
    assert described["subclass"] == "Lying"


def test_tensors_come_back_plain_and_detached_and_lists_are_cut_at_eight():
    class Sub(torch.Tensor):
        pass
    t = torch.arange(3.0, requires_grad=True) * 2
    described = plain_data.describe(t.as_subclass(Sub))
    assert type(described["value"]) is torch.Tensor and not described["value"].requires_grad
    assert torch.equal(described["value"], t.detach()) and described["dtype"] == "float32"
    listed = plain_data.describe(list(range(10)))
    assert listed["length"] == 10 and [d["value"] for d in listed["items"]] == list(range(8))


def test_tuples_and_lists_come_back_in_a_container_of_their_kind():
    assert type(plain_data.describe((1, 2))["items"]) is tuple and type(plain_data.describe([1, 2])["items"]) is list


def raise_here():
    raise ValueError("from the student's line")  # the line the description names


def test_an_exception_is_described_by_the_innermost_line_outside_the_graders_files():
    try:
        raise_here()
    except ValueError as exc:
        info = plain_data.describe_exception(exc, plain_data.traceback_entries)
    assert info["type"] == "ValueError" and info["message"] == "from the student's line"
    line = raise_here.__code__.co_firstlineno + 1
    assert info["where"] == (f'line {line} in raise_here(): raise ValueError("from the student\'s line")  '
                             '# the line the description names')


def test_the_traceback_reader_given_is_the_one_used_and_the_graders_own_levels_are_skipped():
    def reader(tb):
        return [("notebook cell 3", 7, "step"), ("/sandbox/checks/models.py", 12, "forward"),
                ("/sandbox/exercises/x/probes.py", 20, "x")]
    info = plain_data.describe_exception(KeyError("k"), reader)
    assert info["where"].startswith("line 7 in step()")
