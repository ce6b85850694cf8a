"""autograder.sandbox.forks: one fork per item, ended when another item's checks come."""
from autograder.sandbox.forks import ItemForks, flags_of


class FakeSandbox(ItemForks):
    def __init__(self):
        self._no_fork()
        self.closed = []

    def _close_fork(self, seconds=None):
        self.closed.append(self.item)


def test_a_new_item_ends_the_fork_of_the_one_before_and_the_same_item_keeps_it():
    sandbox = FakeSandbox()
    sandbox.use_item("static_loss_scaler", {})
    sandbox.use_item("static_loss_scaler", {})
    sandbox.use_item("dynamic_loss_scaler", {"units": [1]})
    assert sandbox.closed == ["", "static_loss_scaler"] and sandbox.setup == {"units": [1]}


def test_flags_are_short_strings_and_at_most_twenty():
    assert flags_of({"flags": ["x" * 500] * 30}) == ["x" * 200] * 20 and flags_of({"flags": "no"}) == []
