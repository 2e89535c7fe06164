"""Friction drift while a robot warms up: a double exponential in elapsed running time.

The thesis measures, once per cycle, the friction torque of each joint at a fixed speed
level and fits ``tau(t) = a + b exp(-t / t1) + c exp(-t / t2)`` (its Table 5.6):
``a`` is the warm (settled) friction, ``b`` and ``c`` the cold excess decaying with the
time constants ``t1 >= t2``. **Times are in minutes** here, as in the thesis (its appendix
prints the rates ``1/t`` under the heading ``t``: convert those before comparing). ``a``,
``b``, ``c`` are in the unit of the torque data (N m, or whatever the controller logged).

Fitting: for a given pair (t1, t2) the model is linear in (a, b, c), so the starting values
come from a variable-projection search over a log-spaced grid of time-constant pairs (the
pair whose linear least-squares fit leaves the smallest residual); ``scipy.optimize.
curve_fit`` then refines all five parameters from there.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, IdentificationError

__all__ = ["double_exponential", "DoubleExponentialFit", "fit_double_exponential"]

logger = logging.getLogger(__name__)

_GRID_SIZE = 40


def double_exponential(t, a: float, b: float, t1: float, c: float, t2: float) -> np.ndarray:
    """``a + b exp(-t / t1) + c exp(-t / t2)``.

    Parameters
    ----------
    t : array_like, shape (M,)
        Elapsed running time [min].
    a, b, c : float
        Settled level and the two decaying amplitudes [torque unit].
    t1, t2 : float
        Time constants [min], > 0.

    Returns
    -------
    ndarray, shape (M,)
        Torque [torque unit].
    """
    t = np.asarray(t, dtype=float)
    return a + b * np.exp(-t / t1) + c * np.exp(-t / t2)


@dataclass(frozen=True)
class DoubleExponentialFit:
    """Fitted ``tau(t) = a + b exp(-t/t1) + c exp(-t/t2)``, ``t1 >= t2`` [min].

    ``a``, ``b``, ``c`` in the torque unit of the data; ``residual_rms`` the RMS of the fit
    residual in that unit; ``std`` the standard deviations of (a, b, t1, c, t2) from
    curve_fit's covariance.
    """

    a: float
    b: float
    t1: float
    c: float
    t2: float
    residual_rms: float
    std: tuple[float, float, float, float, float]

    def __call__(self, t) -> np.ndarray:
        """The fitted curve at times ``t`` [min]."""
        return double_exponential(t, self.a, self.b, self.t1, self.c, self.t2)

    def to_dict(self) -> dict:
        return {"a": self.a, "b": self.b, "t1_min": self.t1, "c": self.c, "t2_min": self.t2,
                "residual_rms": self.residual_rms, "std": list(self.std)}


def _linear_amplitudes(t: np.ndarray, tau: np.ndarray, t1: float, t2: float):
    """Least-squares (a, b, c) for fixed time constants and the residual sum of squares."""
    basis = np.column_stack([np.ones_like(t), np.exp(-t / t1), np.exp(-t / t2)])
    amplitudes, _, rank, _ = np.linalg.lstsq(basis, tau, rcond=None)
    residual = tau - basis @ amplitudes
    return amplitudes, float(residual @ residual), rank


def _starting_values(t: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Best (a, b, t1, c, t2) over a log-spaced grid of time-constant pairs t1 > t2."""
    steps = np.diff(np.unique(t))
    span = float(t.max() - t.min())
    grid = np.geomspace(0.5 * float(steps.min()), 2.0 * span, _GRID_SIZE)
    best = None
    for i, t1 in enumerate(grid):
        for t2 in grid[:i]:
            amplitudes, residual_ss, rank = _linear_amplitudes(t, tau, t1, t2)
            if rank == 3 and (best is None or residual_ss < best[0]):
                best = (residual_ss, amplitudes, t1, t2)
    _, (a, b, c), t1, t2 = best
    return np.array([a, b, t1, c, t2])


def fit_double_exponential(t_min, tau) -> DoubleExponentialFit:
    """Fit ``tau(t) = a + b exp(-t/t1) + c exp(-t/t2)`` to friction measured over time.

    Parameters
    ----------
    t_min : array_like, shape (M,)
        Elapsed running time since the cold start [min], M >= 6 distinct values.
    tau : array_like, shape (M,)
        Friction torque at a fixed speed level [torque unit].

    Returns
    -------
    DoubleExponentialFit
        With ``t1 >= t2``.

    Raises
    ------
    DataError
        Shapes, non-finite values or too few distinct times.
    IdentificationError
        The optimiser does not converge.
    """
    t = validators.array(t_min, "t_min", shape=(None,), axes=("samples",), unit="min")
    tau = validators.array(tau, "tau", shape=t.shape, axes=("samples",))
    if np.unique(t).size < 6:
        raise DataError(f"fitting 5 parameters needs at least 6 distinct times, "
                        f"got {np.unique(t).size}")
    start = _starting_values(t, tau)
    upper_time = 1e3 * float(t.max() - t.min())
    lower_time = 1e-3 * float(np.diff(np.unique(t)).min())
    bounds = ([-np.inf, -np.inf, lower_time, -np.inf, lower_time],
              [np.inf, np.inf, upper_time, np.inf, upper_time])
    try:
        from scipy.optimize import curve_fit
        parameters, covariance = curve_fit(double_exponential, t, tau, p0=start, bounds=bounds,
                                           x_scale="jac", max_nfev=10000)
    except RuntimeError as error:
        raise IdentificationError(f"double-exponential fit did not converge: {error}") from error
    a, b, t1, c, t2 = parameters
    std = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    if t1 < t2:
        b, t1, c, t2 = c, t2, b, t1
        std = std[[0, 3, 4, 1, 2]]
    residual = tau - double_exponential(t, a, b, t1, c, t2)
    fit = DoubleExponentialFit(a=float(a), b=float(b), t1=float(t1), c=float(c), t2=float(t2),
                               residual_rms=float(np.sqrt(np.mean(residual**2))),
                               std=tuple(float(s) for s in std))
    logger.debug("double exponential: %s", fit)
    return fit
