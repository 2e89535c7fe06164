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
        raise error(f"{field} must be a number, got {type(value).__name__} {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise error(f"{field} must be finite, got {value!r}")
    return value


def positive(value: Any, field: str, error: type[Exception] = DataError, unit: str | None = None,
             allow_zero: bool = False) -> float:
    """A finite number > 0 (>= 0 with ``allow_zero``)."""
    bound = ">= 0" if allow_zero else "> 0"
    if isinstance(value, bool) or not isinstance(value, _REAL) or not math.isfinite(value) \
            or value < 0.0 or (value == 0.0 and not allow_zero):
        raise error(f"{field} must be finite and {bound}{_unit(unit)}, got {value!r}")
    return float(value)


def fraction(value: Any, field: str, error: type[Exception] = DataError, allow_zero: bool = False) -> float:
    """A finite number in (0, 1] ([0, 1] with ``allow_zero``)."""
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    if isinstance(value, bool) or not isinstance(value, _REAL) or not math.isfinite(value) \
            or value > 1.0 or value < 0.0 or (value == 0.0 and not allow_zero):
        raise error(f"{field} must be in {interval}, got {value!r}")
    return float(value)


def count(value: Any, field: str, error: type[Exception] = DataError, minimum: int = 1) -> int:
    """An integer >= ``minimum`` (a bool is not an integer here)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise error(f"{field} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def per_joint(value: Any, n_joints: int, field: str, error: type[Exception] = DataError, unit: str | None = None,
              upper: float | None = None) -> np.ndarray:
    """A scalar (broadcast) or one value per joint, (n,), each finite and > 0 (and <= ``upper``)."""
    array = np.asarray(value, dtype=float)
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
        raise error(f"{field} must be a list of {length} numbers{_unit(unit)}, got {value!r}")
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
