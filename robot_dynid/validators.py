"""Checks of values users give (files, parameters, arguments), shared by the core modules.

Each takes the value, the field's name or path (``joints[2] (j3).a``, ``cutoff``) and the error
class to raise (a :class:`~robot_dynid.errors.DynIdError` subclass: the caller's domain), and
returns the value converted; the one-line message names the field, the rule and the unit:
``cutoff must be finite and > 0 [Hz], got -1.0``. :func:`array` does the same for arrays (dimensions,
shape, finiteness), in the spirit of scikit-learn's ``check_array``.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import numpy as np

from robot_dynid.errors import DataError

__all__ = ["number", "positive", "fraction", "count", "in_range", "flag", "text", "array", "all_finite", "show",
           "per_joint", "numbers", "mapping_of", "entries", "known_keys", "significance_level"]

_REAL = (int, float, np.integer, np.floating)


def _unit(unit: str | None) -> str:
    return f" [{unit}]" if unit else ""


def number(value: Any, field: str, error: type[Exception] = DataError) -> float:
    """``value`` as a finite float: an int or float, not a bool, not NaN or inf."""
    if isinstance(value, bool) or not isinstance(value, _REAL):
        raise error(f"{field} must be a number, got {type(value).__name__} {show(value)}")
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
        raise error(f"{field} must be finite and {bound}{_unit(unit)}, got {show(value)}")
    return x


def fraction(value: Any, field: str, error: type[Exception] = DataError, allow_zero: bool = False) -> float:
    """A finite number in (0, 1] ([0, 1] with ``allow_zero``)."""
    interval = "[0, 1]" if allow_zero else "(0, 1]"
    x = _finite_or_nan(value)
    if not ((0.0 < x <= 1.0) or (x == 0.0 and allow_zero)):
        raise error(f"{field} must be in {interval}, got {show(value)}")
    return x


def count(value: Any, field: str, error: type[Exception] = DataError, minimum: int = 1,
          maximum: int | None = None) -> int:
    """An integer >= ``minimum`` (and <= ``maximum``, a documented cap on work and memory); a bool
    is not an integer here."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum \
            or (maximum is not None and value > maximum):
        rule = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise error(f"{field} must be an integer {rule}, got {show(value)}")
    return int(value)


def in_range(value: Any, field: str, error: type[Exception] = DataError, unit: str | None = None,
             minimum: float | None = None, maximum: float | None = None, allow_minimum: bool = True,
             allow_maximum: bool = True) -> float:
    """A finite number in ``[minimum, maximum]`` (the end excluded without ``allow_minimum`` /
    ``allow_maximum``); either bound may be None (unbounded on that side). The message states the
    interval and unit: ``rate_hz must be finite and in (0, 10000] [Hz], got 1e9``."""
    x = _finite_or_nan(value)
    above_minimum = minimum is None or x > minimum or (x == minimum and allow_minimum)
    below_maximum = maximum is None or x < maximum or (x == maximum and allow_maximum)
    if not (above_minimum and below_maximum):
        low = "-inf" if minimum is None else f"{minimum:g}"
        high = "inf" if maximum is None else f"{maximum:g}"
        opening = "[" if allow_minimum and minimum is not None else "("
        closing = "]" if allow_maximum and maximum is not None else ")"
        raise error(f"{field} must be finite and in {opening}{low}, {high}{closing}{_unit(unit)}, got {show(value)}")
    return x


def flag(value: Any, field: str, error: type[Exception] = DataError) -> bool:
    """``value`` if it is a bool (true or false, not a number or a string)."""
    if not isinstance(value, (bool, np.bool_)):
        raise error(f"{field} must be true or false, got {show(value)}")
    return bool(value)


def text(value: Any, field: str, error: type[Exception] = DataError, choices: Sequence[str] | None = None) -> str:
    """``value`` if it is a string (one of ``choices`` when given)."""
    if not isinstance(value, str):
        raise error(f"{field} must be a string, got {show(value)}")
    if choices is not None and value not in choices:
        raise error(f"{field} must be one of {list(choices)}, got {value!r}")
    return value


def array(value: Any, field: str, error: type[Exception] = DataError, *, ndim: int | tuple[int, ...] | None = None,
          shape: tuple[int | None, ...] | None = None, axes: Sequence[str] | None = None,
          columns: Sequence[str] | None = None, min_length: int = 0, finite: bool = True,
          minimum: float | None = None, allow_minimum: bool = True, maximum: float | None = None,
          unit: str | None = None, broadcast: bool = False, copy: bool = False) -> np.ndarray:
    """``value`` as a float64 ndarray checked like scikit-learn's ``check_array``; one wording per rule.

    Parameters
    ----------
    value : array_like
    field : str
        The argument's name, first word of every message.
    error : type
        The exception raised (the caller's :class:`~robot_dynid.errors.DynIdError` subclass).
    ndim : int or tuple of int, optional
        Allowed numbers of dimensions (implied by ``shape`` when that is given).
    shape : tuple of int or None, optional
        Expected shape, None matching any size on that axis.
    axes : sequence of str, optional
        Plural names of the axes (``("samples", "joints")``), used in messages:
        ``tau must have shape (samples, 6 joints), got (100, 5)``; the non-finite message names an
        element by them (``at sample 3, joint j2``, indices from 0), else by its index (``at tau[3, 1]``).
    columns : sequence of str, optional
        Names of the entries along the last axis (joint or CSV column names), named in the
        non-finite message instead of the index.
    min_length : int
        Least size of the first axis.
    finite : bool
        Refuse NaN and inf, naming the first such element (in C order).
    minimum : float, optional
        Least value (exclusive without ``allow_minimum``), the first element below it named.
    maximum : float, optional
        Largest value (inclusive), the first element above it named.
    unit : str, optional
        Unit of the values, stated in the messages about values.
    broadcast : bool
        A scalar stands for every element of ``shape`` (all sizes given).
    copy : bool
        Return a new array even when ``value`` already is a float64 ndarray.
    """
    try:
        result = np.array(value, dtype=float, copy=True) if copy else np.asarray(value, dtype=float)
    except (TypeError, ValueError, OverflowError):
        raise error(f"{field} must be an array of numbers{_unit(unit)}, got {show(value)}") from None
    values = result     # what the value checks read: a broadcast scalar is named as given
    if shape is not None and result.shape != shape:       # equal tuples: the common case, checked first
        if broadcast and result.ndim == 0:
            result = np.full(shape, float(result))
        if result.ndim != len(shape) or any(size is not None and actual != size
                                            for actual, size in zip(result.shape, shape)):
            scalar = "be a scalar or " if broadcast else ""
            raise error(f"{field} must {scalar}have shape {_shape_text(shape, axes)}, got {result.shape}")
    elif shape is None and ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if result.ndim not in allowed:
            if len(allowed) == 1:
                raise error(f"{field} must have shape {_shape_text((None,) * allowed[0], axes)}, got {result.shape}")
            raise error(f"{field} must have {' or '.join(map(str, allowed))} dimensions, got shape {result.shape}")
    if min_length and (result.ndim == 0 or result.shape[0] < min_length):
        what = axes[0] if axes else "entries"
        raise error(f"{field} must have at least {min_length} {what}, got shape {result.shape}")
    if finite and not all_finite(values):
        bad = ~np.isfinite(values)
        raise error(f"{field} must be finite{_unit(unit)}, got {_element(values, bad, field, axes, columns)}")
    if minimum is not None and not (values >= minimum if allow_minimum else values > minimum).all():
        bad = ~(values >= minimum) if allow_minimum else ~(values > minimum)
        raise error(f"{field} must be {'>=' if allow_minimum else '>'} {minimum:g}{_unit(unit)}, "
                    f"got {_element(values, bad, field, axes, columns)}")
    if maximum is not None and not (values <= maximum).all():
        raise error(f"{field} must be <= {maximum:g}{_unit(unit)}, "
                    f"got {_element(values, ~(values <= maximum), field, axes, columns)}")
    return result


_SUMMED = 1 << 20
"""[values] from this size on, :func:`all_finite` tries the sum first (below it, the boolean array is small and
the sum's floating-point state handling costs more than it saves)."""


def all_finite(values: np.ndarray) -> bool:
    """Whether every value of the float array ``values`` is finite. From :data:`_SUMMED` values on, where their sum
    is (a NaN or inf makes it NaN or inf; one pass, no temporaries), else, as finite values can overflow the sum,
    value by value."""
    if values.size >= _SUMMED:
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.add.reduce(values, axis=None)):
                return True
    return bool(np.isfinite(values).all())


def _shape_text(shape: tuple[int | None, ...], axes: Sequence[str] | None) -> str:
    """``(samples, 6 joints)``: each axis by its size and name (``any`` for an unnamed axis of any size)."""
    parts = []
    for index, size in enumerate(shape):
        name = axes[index] if axes is not None and index < len(axes) else None
        name = _singular(name) if size == 1 and name is not None else name
        parts.append(" ".join(str(part) for part in (size, name) if part is not None) or "any")
    return f"({parts[0]},)" if len(parts) == 1 else f"({', '.join(parts)})"


def _singular(name: str) -> str:
    """``samples`` -> ``sample``, ``base parameters`` -> ``base parameter``, ``rows of phi`` -> ``row of phi``."""
    head, of, tail = name.partition(" of ")
    words = head.split(" ")
    words[-1] = words[-1][:-1] if words[-1].endswith("s") else words[-1]
    return " ".join(words) + of + tail


def _element(values: np.ndarray, bad: np.ndarray, field: str, axes: Sequence[str] | None,
             columns: Sequence[str] | None) -> str:
    """The first element of ``values`` where ``bad`` is true, with where it is: ``nan at sample 3, joint j2``
    (by ``axes`` and ``columns``), ``inf at t[4]``, or the value alone for a scalar."""
    if values.ndim == 0:
        return repr(float(values))
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    labels = [str(i) for i in index]
    if columns is not None and index[-1] < len(columns):
        labels[-1] = str(columns[index[-1]])
    if axes is not None and len(axes) == len(index):
        where = ", ".join(f"{_singular(name)} {label}" for name, label in zip(axes, labels))
    else:
        where = f"{field}[{', '.join(labels)}]"
    return f"{float(values[index])!r} at {where}"


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
        raise error(f"{field} must be a number within the float range (|x| < 1.8e308), got {show(value)}") from None


def show(value: Any) -> str:
    """``repr(value)`` on one line for a message, shortened: a huge integer by its size (``str`` of one
    beyond 4300 digits raises ValueError), anything else to 80 characters."""
    if isinstance(value, int) and abs(value) >= 10 ** 30:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = " ".join(repr(value).split())
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} too deep or large to show"
    return text if len(text) <= 80 else text[:77] + "..."


def per_joint(value: Any, n_joints: int, field: str, error: type[Exception] = DataError, unit: str | None = None,
              upper: float | None = None, joint_names: Sequence[str] | None = None) -> np.ndarray:
    """A scalar (broadcast) or one value per joint, (n,), each finite and > 0 (and <= ``upper``): :func:`array`'s
    rules and words, the joint named by ``joint_names`` (else its index from 0)."""
    return array(value, field, error, shape=(n_joints,), axes=("joints",), columns=joint_names, broadcast=True,
                 minimum=0.0, allow_minimum=False, maximum=upper, unit=unit)


def numbers(value: Any, length: int, field: str, error: type[Exception] = DataError,
            unit: str | None = None) -> tuple[float, ...]:
    """A list of ``length`` finite numbers."""
    if not isinstance(value, (list, tuple)) or len(value) != length:
        raise error(f"{field} must be a list of {length} numbers{_unit(unit)}, got {show(value)}")
    return tuple(number(item, f"{field}[{index}]", error) for index, item in enumerate(value))


def mapping_of(value: Any, field: str, error: type[Exception] = DataError) -> Mapping:
    """``value`` if it is a mapping."""
    if not isinstance(value, Mapping):
        raise error(f"{field} must be a mapping, got {type(value).__name__}")
    return value


def entries(value: Any, field: str, error: type[Exception] = DataError, length: int | None = None) -> list:
    """``value`` if it is a list (of ``length`` entries when given)."""
    if not isinstance(value, list):
        raise error(f"{field} must be a list, got {show(value)}")
    if length is not None and len(value) != length:
        raise error(f"{field} has {len(value)} entries, expected {length}")
    return value


def known_keys(mapping: Any, field: str, required: Sequence[str], optional: Sequence[str] = (),
               error: type[Exception] = DataError) -> Mapping:
    """``mapping`` if it is a mapping with every required key and no key outside
    ``required + optional``; the message names every unknown key and the first missing one."""
    mapping_of(mapping, field or "the data", error)
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


def significance_level(level: Any, error: type[Exception] = DataError) -> float:
    """A statistical test's significance level, in (0, 1)."""
    return in_range(level, "significance level", error, None, 0.0, 1.0, allow_minimum=False, allow_maximum=False)
