"""The minimum of a function of one variable on an interval, without importing scipy.optimize.

Brent's method (R. P. Brent, *Algorithms for Minimization without Derivatives*, 1973, ch. 5, ``localmin``):
golden-section steps, and a parabola through the three best points wherever it falls well inside the bracket. It
is what ``scipy.optimize.minimize_scalar(method="bounded")`` runs; importing scipy.optimize costs a fresh process
more than the short commands' whole work, for the two one-dimensional searches of a lag
(:func:`robot_dynid.estimation.covariance.detect_period`, :func:`robot_dynid.estimation.payload.motion_alignment`).
"""
from __future__ import annotations

import math
from typing import Callable

__all__ = ["GOLDEN", "RELATIVE_TOLERANCE", "bounded_minimum"]

GOLDEN = 0.5 * (3.0 - math.sqrt(5.0))
"""The golden section's smaller part, (3 - sqrt 5) / 2."""
RELATIVE_TOLERANCE = math.sqrt(2.2e-16)
"""Relative resolution of the abscissa, the square root of the double's machine epsilon."""


def bounded_minimum(function: Callable[[float], float], low: float, high: float, xatol: float = 1e-5,
                    max_evaluations: int = 500) -> float:
    """The abscissa in ``[low, high]`` of a local minimum of ``function`` (a global one where it is unimodal there).

    Parameters
    ----------
    function : callable
        ``function(x) -> float``.
    low, high : float
        The interval, ``low <= high``, finite.
    xatol : float
        Absolute tolerance of the abscissa: the result is within about ``xatol`` of the minimum.
    max_evaluations : int
        The search stops there (its best abscissa so far is returned).
    """
    if not (math.isfinite(low) and math.isfinite(high) and low <= high):
        raise ValueError(f"the interval must be finite with low <= high, got [{low}, {high}]")
    a, b = float(low), float(high)
    x = w = v = a + GOLDEN * (b - a)        # x best, w second best, v the previous w
    fx = fw = fv = float(function(x))
    step = previous_step = 0.0
    evaluations = 1
    while evaluations < max_evaluations:
        middle = 0.5 * (a + b)
        tolerance = RELATIVE_TOLERANCE * abs(x) + xatol / 3.0
        if abs(x - middle) <= 2.0 * tolerance - 0.5 * (b - a):
            break
        parabolic = False
        if abs(previous_step) > tolerance:
            r = (x - w) * (fx - fv)
            q = (x - v) * (fx - fw)
            p = (x - v) * q - (x - w) * r
            q = 2.0 * (q - r)
            if q > 0.0:
                p = -p
            q = abs(q)
            older_step, previous_step = previous_step, step
            if abs(p) < abs(0.5 * q * older_step) and q * (a - x) < p < q * (b - x):
                parabolic = True
                step = p / q
                if (x + step - a) < 2.0 * tolerance or (b - x - step) < 2.0 * tolerance:
                    step = tolerance if middle >= x else -tolerance
        if not parabolic:
            previous_step = (a - x) if x >= middle else (b - x)
            step = GOLDEN * previous_step
        u = x + (step if abs(step) >= tolerance else math.copysign(tolerance, step) if step else tolerance)
        fu = float(function(u))
        evaluations += 1
        if fu <= fx:
            if u >= x:
                a = x
            else:
                b = x
            v, fv, w, fw, x, fx = w, fw, x, fx, u, fu
        else:
            if u < x:
                a = u
            else:
                b = u
            if fu <= fw or w == x:
                v, fv, w, fw = w, fw, u, fu
            elif fu <= fv or v == x or v == w:
                v, fv = u, fu
    return x
