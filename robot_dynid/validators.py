"""Checks of values users give (files, parameters, arguments), shared by the core modules.

Each takes the value, the field's name or path (``joints[2] (j3).a``, ``cutoff``) and the error
class to raise (a :class:`~robot_dynid.errors.DynIdError` subclass: the caller's domain), and
returns the value converted; the one-line message names the field, the rule and the unit:
``cutoff must be finite and > 0 [Hz], got -1.0``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from robot_dynid.errors import DataError

_REAL = (int, float, np.integer, np.floating)


def _unit(unit: str | None) -> str:
    return f" [{unit}]" if unit else ""


def number(value: Any, field: str, error: type[Exception] = DataError) -> float:
    """``value`` as a finite float: an int or float, not a bool, not NaN or inf."""
    if isinstance(value, bool) or not isinstance(value, _REAL):
        raise error(f"{field} must be a number, got {type(value).__name__} {_show(value)}")
    value = _float(value, field, error)
    if not math.isfinite(value):
        raise error(f"{field} must be finite, got {value!r}")
    return value


def positive(value: Any, field: str, error: type[Exception] = DataError, unit: str | None = None,
             allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``allow_zero``)."""
    bound = ">= 0" if allow_zero else "> 0"
    x = _finite_or_nan(value)
    if not (x > 0.0 or (x == 0.0 and allow_zero)):
        raise error(f"{field} must be finite and {bound}{_unit(unit)}, got {_show(value)}")
    return x


def fraction(value: Any, field: str, error: type[Exception] = DataError, allow_zero: bool = False) -> float:
    """A finite number in (0, 1] ([0, 1] with ``allow_zero``)."""
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    x = _finite_or_nan(value)
    if not ((0.0 < x <= 1.0) or (x == 0.0 and allow_zero)):
        raise error(f"{field} must be in {interval}, got {_show(value)}")
    return x


def count(value: Any, field: str, error: type[Exception] = DataError, minimum: int = 1,
          maximum: int | None = None) -> int:
    """An integer >= ``minimum`` (and <= ``maximum``, a documented cap on work and memory); a bool
    is not an integer here."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum \
            or (maximum is not None and value > maximum):
        rule = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise error(f"{field} must be an integer {rule}, got {_show(value)}")
    return int(value)


def in_range(value: Any, field: str, error: type[Exception] = DataError, unit: str | None = None,
             minimum: float | None = None, maximum: float | None = None, allow_minimum: bool = True) -> float:
    """A finite number in ``[minimum, maximum]`` (``(minimum, maximum]`` without ``allow_minimum``);
    either bound may be None (unbounded on that side). The message states the interval and unit:
    ``rate_hz must be finite and in (0, 10000] [Hz], got 1e9``."""
    x = _finite_or_nan(value)
    above_minimum = minimum is None or x > minimum or (x == minimum and allow_minimum)
    if not (above_minimum and (maximum is None or x <= maximum)):
        low = "-inf" if minimum is None else f"{minimum:g}"
        high = "inf" if maximum is None else f"{maximum:g}"
        opening = "[" if allow_minimum and minimum is not None else "("
        closing = "]" if maximum is not None else ")"
        raise error(f"{field} must be finite and in {opening}{low}, {high}{closing}{_unit(unit)}, got {_show(value)}")
    return x


def flag(value: Any, field: str, error: type[Exception] = DataError) -> bool:
    """``value`` if it is a bool (true or false, not a number or a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{field} must be true or false, got {_show(value)}")
    return bool(value)


def text(value: Any, field: str, error: type[Exception] = DataError, choices: Sequence[str] | None = None) -> str:
    """``value`` if it is a string (one of ``choices`` when given)."""
    if not isinstance(value, str):
        raise error(f"{field} must be a string, got {_show(value)}")
    if choices is not None and value not in choices:
        raise error(f"{field} must be one of {list(choices)}, got {value!r}")
    return value


def _finite_or_nan(value: Any) -> float:
    """``value`` as a float if it is a finite real number (not a bool, within the float range), else NaN."""
    if isinstance(value, bool) or not isinstance(value, _REAL):
        return math.nan
    try:
        x = float(value)
    except OverflowError:
        return math.nan
    return x if math.isfinite(x) else math.nan


def _float(value: Any, field: str, error: type[Exception]) -> float:
    """``float(value)``; an integer beyond the float range (about 1.8e308) is an error, not OverflowError."""
    try:
        return float(value)
    except OverflowError:
        raise error(f"{field} must be a number within the float range (|x| < 1.8e308), got {_show(value)}") from None


def _show(value: Any) -> str:
    """``repr(value)``, shortened: a huge integer by its size (``str`` of one beyond 4300 digits
    raises ValueError), anything else to 80 characters."""
    if isinstance(value, int) and abs(value) >= 10 ** 30:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} too deep or large to show"
    return text if len(text) <= 80 else text[:77] + "..."


def per_joint(value: Any, n_joints: int, field: str, error: type[Exception] = DataError, unit: str | None = None,
              upper: float | None = None) -> np.ndarray:
    """A scalar (broadcast) or one value per joint, (n,), each finite and > 0 (and <= ``upper``)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{field} must be a number or a list of {n_joints} numbers{_unit(unit)}, "
                    f"got {_show(value)}") from None
    array = np.broadcast_to(array, (n_joints,)) if array.ndim == 0 else array
    if array.shape != (n_joints,):
        raise error(f"{field} must be a scalar or have shape ({n_joints},), one per joint, got {array.shape}")
    bad = np.flatnonzero(~np.isfinite(array) | (array <= 0.0) | (array > (np.inf if upper is None else upper)))
    if bad.size:
        bound = "> 0" if upper is None else f"in (0, {upper:g}]"
        raise error(f"{field} must be finite and {bound}{_unit(unit)}; joint {bad[0] + 1} has {float(array[bad[0]])!r}")
    return array


def numbers(value: Any, length: int, field: str, error: type[Exception] = DataError,
            unit: str | None = None) -> tuple[float, ...]:
    """A list of ``length`` finite numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != length:
        raise error(f"{field} must be a list of {length} numbers{_unit(unit)}, got {_show(value)}")
    return tuple(number(item, f"{field}[{index}]", error) for index, item in enumerate(value))


def known_keys(mapping: Any, field: str, required: Sequence[str], optional: Sequence[str] = (),
               error: type[Exception] = DataError) -> Mapping:
    """``mapping`` if it is a mapping with every required key and no key outside
    ``required + optional``; the message names every unknown key and the first missing one."""
    if not isinstance(mapping, Mapping):
        raise error(f"{field or 'the data'} must be a mapping, got {type(mapping).__name__}")
    where = f"{field}: " if field else ""
    allowed = tuple(required) + tuple(optional)
    unknown = [key for key in mapping if key not in allowed]
    if unknown:
        raise error(f"{where}unknown key{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))}; "
                    f"allowed keys: {', '.join(map(str, allowed))}")
    missing = [key for key in required if key not in mapping]
    if missing:
        raise error(f"{where}missing key {missing[0]!r}")
    return mapping
