"""autograder.checks.released: the expected values, looked up as the release wrote them."""
import pytest

from autograder.checks import released


def test_an_oracle_call_is_read_from_the_release_and_a_missing_one_is_named():
    assert released.call_key("torch_scales", found_infs=(True,)) == released.call_key("torch_scales", found_infs=(True,))
    assert released.call_key("torch_scales", found_infs=(True,)) != released.call_key("torch_scales", found_infs=(False,))
    # test_backoff_on_overflow's call, as the release keyed it (a list and a tuple are one key)
    values = released._load(released.EXPECTED_FILE)
    key = released.call_key("torch_scales", init_scale=1024.0, found_infs=(True, True))
    assert key in values and released._load(released.EXPECTED_FILE) is values  # read once, then kept
    got = released.released("torch_scales", init_scale=1024.0, found_infs=[True, True])
    assert got == values[key] and got is not values[key]  # a fresh copy: a check may change what it gets
    with pytest.raises(LookupError, match="no value of torch_scales"):
        released.released("torch_scales", found_infs=("not", "a", "released", "call"))
