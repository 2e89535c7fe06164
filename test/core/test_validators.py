"""validators: every check refuses what it must with one line naming the field, including values
that break Python's own conversions (integers beyond the float range or beyond str's digit limit);
every message is compared with a hand-written literal."""
import math

import numpy as np
import pytest

from robot_dynid import validators
from robot_dynid.errors import DataError, ModelFileError

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


def test_an_open_upper_end_and_the_significance_level():
    assert validators.in_range(0.999, "level", minimum=0.0, maximum=1.0, allow_maximum=False) == 0.999
    with pytest.raises(DataError, match=r"^level must be finite and in \[0, 1\), got 1\.0$"):
        validators.in_range(1.0, "level", minimum=0.0, maximum=1.0, allow_maximum=False)
    assert validators.significance_level(0.05) == 0.05
    for bad in (0.0, 1.0, 1.5, -0.1, math.nan):
        with pytest.raises(DataError, match=r"^significance level must be finite and in \(0, 1\), got "):
            validators.significance_level(bad)


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


def raises(check, message: str, error=DataError):
    """``check()`` raises ``error`` with exactly ``message`` (a hand-written literal, not a pattern)."""
    with pytest.raises(error) as caught:
        check()
    assert str(caught.value) == message


def test_every_scalar_rule_has_one_literal_message():
    raises(lambda: validators.number("1", "x"), "x must be a number, got str '1'")
    raises(lambda: validators.number(True, "x"), "x must be a number, got bool True")
    raises(lambda: validators.number(math.inf, "x"), "x must be finite, got inf")
    raises(lambda: validators.positive(-1.0, "cutoff", unit="Hz"), "cutoff must be finite and > 0 [Hz], got -1.0")
    raises(lambda: validators.positive(-1, "t", allow_zero=True), "t must be finite and >= 0, got -1")
    raises(lambda: validators.fraction(0.0, "mu"), "mu must be in (0, 1], got 0.0")
    raises(lambda: validators.fraction(2, "mu", allow_zero=True), "mu must be in [0, 1], got 2")
    raises(lambda: validators.count(0, "n"), "n must be an integer >= 1, got 0")
    raises(lambda: validators.count(2.0, "n"), "n must be an integer >= 1, got 2.0")
    raises(lambda: validators.in_range(5.0, "r", unit="m", minimum=-1.0, maximum=1.0),
           "r must be finite and in [-1, 1] [m], got 5.0")
    raises(lambda: validators.flag(1, "armature"), "armature must be true or false, got 1")
    raises(lambda: validators.text(3, "method"), "method must be a string, got 3")
    raises(lambda: validators.text("qr", "method", choices=("ols", "wls")),
           "method must be one of ['ols', 'wls'], got 'qr'")
    raises(lambda: validators.numbers([1.0], 3, "xyz", unit="m"), "xyz must be a list of 3 numbers [m], got [1.0]")
    raises(lambda: validators.numbers([1.0, "a"], 2, "xy"), "xy[1] must be a number, got str 'a'")
    assert validators.flag(np.bool_(True), "f") is True
    assert validators.text("ols", "m", choices=("ols",)) == "ols"
    assert validators.number(np.float32(0.5), "x") == 0.5 and validators.count(np.int64(3), "n") == 3


def test_per_joint_and_the_containers_have_one_literal_message():
    raises(lambda: validators.per_joint([1.0, 2.0, 3.0], 2, "gear_ratio"),
           "gear_ratio must be a scalar or have shape (2 joints,), got (3,)")
    raises(lambda: validators.per_joint([1.0, -2.0], 2, "gear_ratio", upper=10.0),
           "gear_ratio must be > 0, got -2.0 at joint 1")
    raises(lambda: validators.per_joint([1.0, 12.0], 2, "gear_ratio", upper=10.0, joint_names=("j1", "j2")),
           "gear_ratio must be <= 10, got 12.0 at joint j2")
    raises(lambda: validators.per_joint([1.0, np.nan], 2, "r", unit="m", joint_names=("j1", "j2")),
           "r must be finite [m], got nan at joint j2")
    raises(lambda: validators.per_joint("a", 2, "r", unit="m"), "r must be an array of numbers [m], got 'a'")
    np.testing.assert_array_equal(validators.per_joint(2.0, 3, "r"), [2.0, 2.0, 2.0])
    raises(lambda: validators.mapping_of([1], "links[2]"), "links[2] must be a mapping, got list")
    raises(lambda: validators.entries({}, "links"), "links must be a list, got {}")
    raises(lambda: validators.entries([1, 2], "com", length=3), "com has 2 entries, expected 3")
    raises(lambda: validators.known_keys({"a": 1, "b": 2, "c": 3}, "model", ("a",)),
           "model: unknown keys 'b', 'c'; allowed keys: a")
    raises(lambda: validators.known_keys({"b": 1}, "", ("a",), ("b",)), "missing key 'a'")
    raises(lambda: validators.known_keys(None, "", ("a",)), "the data must be a mapping, got NoneType")


def test_show_keeps_a_message_on_one_short_line():
    assert validators.show(["x" * 100]) == "['" + "x" * 75 + "..."
    assert validators.show(np.array([[1.0, 2.0], [3.0, 4.0]])) == "array([[1., 2.], [3., 4.]])"


@pytest.mark.parametrize("check, message", [
    (lambda: validators.array("ab", "x"), "x must be an array of numbers, got 'ab'"),
    (lambda: validators.array([[1.0], [1.0, 2.0]], "q", unit="rad"),
     "q must be an array of numbers [rad], got [[1.0], [1.0, 2.0]]"),
    (lambda: validators.array(np.ones((100, 5)), "tau", shape=(None, 6), axes=("samples", "joints")),
     "tau must have shape (samples, 6 joints), got (100, 5)"),
    (lambda: validators.array(np.ones((2, 3)), "a", shape=(1, None)), "a must have shape (1, any), got (2, 3)"),
    (lambda: validators.array(np.ones(2), "pose", shape=(1,), axes=("joints",)),
     "pose must have shape (1 joint,), got (2,)"),
    (lambda: validators.array(np.ones(3), "q", ndim=2, axes=("samples", "joints")),
     "q must have shape (samples, joints), got (3,)"),
    (lambda: validators.array(1.0, "Y", ndim=(2, 3)), "Y must have 2 or 3 dimensions, got shape ()"),
    (lambda: validators.array(np.ones(2), "time", min_length=3, axes=("samples",)),
     "time must have at least 3 samples, got shape (2,)"),
    (lambda: validators.array(5.0, "x", min_length=1), "x must have at least 1 entries, got shape ()"),
    (lambda: validators.array(math.nan, "x", unit="s"), "x must be finite [s], got nan"),
    (lambda: validators.array([0.0, 1.0, -math.inf], "t"), "t must be finite, got -inf at t[2]"),
    (lambda: validators.array([[1.0, 2.0], [3.0, math.nan]], "tau", columns=("j1", "j2")),
     "tau must be finite, got nan at tau[1, j2]"),
    (lambda: validators.array([[1.0, 2.0], [3.0, math.nan]], "tau", axes=("samples", "joints"), columns=("j1", "j2"),
                              unit="N m"),
     "tau must be finite [N m], got nan at sample 1, joint j2"),
    (lambda: validators.array([[1.0, math.inf]], "y", axes=("rows of phi", "base parameters")),
     "y must be finite, got inf at row of phi 0, base parameter 1"),
    (lambda: validators.array([1.0, 0.0, -1.0], "std", axes=("parameters",), minimum=0.0),
     "std must be >= 0, got -1.0 at parameter 2"),
    (lambda: validators.array([1.0, 0.0], "noise", minimum=0.0, allow_minimum=False, unit="N^2 m^2"),
     "noise must be > 0 [N^2 m^2], got 0.0 at noise[1]"),
    (lambda: validators.array([1.0, 2.0], "noise_std", shape=(3,), axes=("joints",), broadcast=True),
     "noise_std must be a scalar or have shape (3 joints,), got (2,)"),
    (lambda: validators.array(-1.0, "noise_std", shape=(3,), minimum=0.0, broadcast=True),
     "noise_std must be >= 0, got -1.0"),
])
def test_array_names_each_rule_in_one_wording(check, message):
    raises(check, message)


def test_array_converts_and_returns_what_it_checked():
    checked = validators.array([[1, 2], [3, 4]], "x", shape=(2, 2))
    assert checked.dtype == np.float64 and checked.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    given = np.zeros(3)
    assert validators.array(given, "x") is given
    copied = validators.array(given, "x", copy=True)
    assert copied is not given and np.array_equal(copied, given)
    np.testing.assert_array_equal(validators.array(0.5, "x", shape=(2, 2), broadcast=True), np.full((2, 2), 0.5))
    assert validators.array([math.nan], "x", finite=False).shape == (1,)
    assert validators.array(np.ones((4, 2, 3)), "Y", shape=(None, 2, None)).shape == (4, 2, 3)
    with pytest.raises(ModelFileError, match=r"^beta must be finite, got nan at beta\[0\]$"):
        validators.array([math.nan], "beta", ModelFileError)


@pytest.mark.parametrize("size", [10, 1 << 21], ids=["small", "summed"])
def test_all_finite_finds_one_nan_or_inf_and_is_not_fooled_by_a_sum_that_overflows(size):
    values = np.ones(size)
    assert validators.all_finite(values)
    values[size // 3] = np.nan
    assert not validators.all_finite(values)
    values[size // 3] = -np.inf
    assert not validators.all_finite(values)
    huge = np.full(size, np.finfo(float).max / 4)      # finite values whose sum overflows to inf
    assert validators.all_finite(huge)
    assert not validators.all_finite(np.r_[huge, np.inf, -np.inf])    # their sum: NaN
