"""validators: every check refuses what it must with one line naming the field, including values
that break Python's own conversions (integers beyond the float range or beyond str's digit limit)."""
import math

import numpy as np
import pytest

from robot_dynid import validators
from robot_dynid.errors import DataError

HUGE = 10 ** 5000     # float() overflows; str() and repr() raise ValueError beyond 4300 digits


@pytest.mark.parametrize("check", [
    lambda value: validators.number(value, "x"),
    lambda value: validators.positive(value, "x"),
    lambda value: validators.fraction(value, "x"),
    lambda value: validators.count(value, "x", maximum=10),
    lambda value: validators.in_range(value, "x", minimum=0.0, maximum=1.0),
    lambda value: validators.per_joint(value, 2, "x"),
])
def test_a_huge_integer_is_a_named_error_not_an_overflow(check):
    with pytest.raises(DataError, match=r"^x .*an integer of about 5001 digits"):
        check(HUGE)


def test_count_and_in_range_state_their_bounds():
    assert validators.count(10, "cycles", maximum=10) == 10
    with pytest.raises(DataError, match=r"^cycles must be an integer in 1\.\.10, got 11$"):
        validators.count(11, "cycles", maximum=10)
    assert validators.in_range(1e4, "rate_hz", minimum=0.0, maximum=1e4, allow_minimum=False) == 1e4
    for bad in (0.0, -1.0, 1e9, math.nan, math.inf, True, "1"):
        with pytest.raises(DataError, match=r"^rate_hz must be finite and in \(0, 10000\] \[Hz\], got "):
            validators.in_range(bad, "rate_hz", unit="Hz", minimum=0.0, maximum=1e4, allow_minimum=False)
    assert validators.in_range(-5.0, "offset", maximum=0.0) == -5.0
    with pytest.raises(DataError, match=r"in \(-inf, 0\]"):
        validators.in_range(1.0, "offset", maximum=0.0)


def test_positive_and_fraction_keep_their_rules():
    assert validators.positive(0.0, "x", allow_zero=True) == 0.0
    assert validators.fraction(1, "x") == 1.0 and isinstance(validators.fraction(1, "x"), float)
    for bad in (0.0, -1e-300, math.nan, np.float64(math.inf), None):
        with pytest.raises(DataError, match=r"^x must be finite and > 0"):
            validators.positive(bad, "x")
    for bad in (0.0, 1.0000001, math.nan):
        with pytest.raises(DataError, match=r"^x must be in \(0, 1\]"):
            validators.fraction(bad, "x")


def test_a_value_too_deep_to_show_is_still_one_line():
    deep = []
    for _ in range(100000):
        deep = [deep]
    with pytest.raises(DataError, match="too deep or large to show"):
        validators.numbers(deep, 3, "x")
