"""Hydraulic cylinder model and identification of its stiffness and friction (curtain-wall arm).

Cylinder force balance (hydraulic paper; METHODS.md section 8)::

    m x'' + c x' + K x + F_d(x') = p_a A_a - p_b A_b - F_L
    F_d(v) = fc sgn(v) + fv v + fs cbrt(v)          (linearised Stribeck)

The piston mass ``m``, damping ``c``, areas and load ``F_L`` are known; ``c x'`` and
``fv x'`` are collinear, so ``c`` must be fixed. The unknowns ``theta = (K, fc, fv, fs)``
enter linearly::

    y = p_a A_a - p_b A_b - F_L - m x'' - c x' = [x, sgn x', x', cbrt x'] theta

(the paper's regressor lists ``x'`` where ``m x''`` belongs; with ``m`` known that term is
on the left here) and are identified by :class:`~robot_dynid.estimation.estimators.RecursiveLeastSquares`.

Units (consistent for the paper's excitation ``x = 6 sin(0.05 t)`` and its friction table,
whose numbers only make sense with displacements in millimetres):
length [mm], time [s], force [N], pressure [MPa] (= N/mm^2), area [mm^2], mass [kg]
(converted internally: ``m x''`` [kg mm/s^2] = 1e-3 N), ``c`` and ``fv`` [N s/mm],
``K`` [N/mm], ``fc`` [N], ``fs`` [N (s/mm)^(1/3)] (newtons per cube root of mm/s).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.estimators import RecursiveLeastSquares
from robot_dynid.model.friction import friction_model

logger = logging.getLogger(__name__)

HYDRAULIC_PARAMETER_NAMES = ("K", "fc", "fv", "fs")
"""Order of the unknowns in the regressor: stiffness, Coulomb, viscous, Stribeck (cbrt)."""

_KG_MM_PER_S2_IN_N = 1e-3
_STRIBECK = friction_model("stribeck_cbrt")


@dataclass(frozen=True)
class HydraulicCylinder:
    """Known cylinder data.

    Parameters
    ----------
    piston_mass : float
        m [kg] (moving mass of piston and rod), >= 0.
    damping : float
        c [N s/mm], >= 0.
    area_a : float
        Cap-side piston area A_a [mm^2], > 0.
    area_b : float
        Rod-side annulus area A_b [mm^2], > 0.
    """

    piston_mass: float
    damping: float
    area_a: float
    area_b: float

    def __post_init__(self) -> None:
        for name, unit, allow_zero in (("piston_mass", "kg", True), ("damping", "N s/mm", True),
                                       ("area_a", "mm^2", False), ("area_b", "mm^2", False)):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value < 0.0 or (value == 0.0 and not allow_zero):
                bound = ">= 0" if allow_zero else "> 0"
                raise DynIdError(f"cylinder {name} must be finite and {bound} [{unit}], "
                                 f"got {value!r}")
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class CylinderParameters:
    """The identified unknowns: stiffness K [N/mm], fc [N], fv [N s/mm], fs [N (s/mm)^(1/3)]."""

    stiffness: float
    fc: float
    fv: float
    fs: float

    def as_array(self) -> np.ndarray:
        """(4,) in :data:`HYDRAULIC_PARAMETER_NAMES` order."""
        return np.array([self.stiffness, self.fc, self.fv, self.fs])

    @classmethod
    def from_array(cls, theta) -> "CylinderParameters":
        theta = np.asarray(theta, dtype=float)
        if theta.shape != (4,):
            raise DataError(f"theta must have shape (4,) {HYDRAULIC_PARAMETER_NAMES}, "
                            f"got {theta.shape}")
        return cls(*(float(value) for value in theta))


def _check_signals(**signals) -> int:
    """All signals must be finite 1-D arrays of one length; returns it."""
    lengths = {}
    for name, value in signals.items():
        value = np.asarray(value, dtype=float)
        if value.ndim != 1:
            raise DataError(f"{name} must have shape (N,), got {value.shape}")
        if not np.all(np.isfinite(value)):
            raise DataError(f"{name} contains non-finite values")
        lengths[name] = value.size
    if len(set(lengths.values())) > 1:
        raise DataError(f"signals must have the same length, got {lengths}")
    return next(iter(lengths.values()))


def sinusoidal_displacement(time, amplitude: float = 6.0, angular_frequency: float = 0.05):
    """The paper's excitation ``x = A sin(w t)`` and its derivatives.

    Parameters
    ----------
    time : array_like, shape (N,)
        [s].
    amplitude : float
        A [mm] (paper: 6).
    angular_frequency : float
        w [rad/s] (paper: 0.05).

    Returns
    -------
    x, xd, xdd : ndarray, shape (N,)
        [mm], [mm/s], [mm/s^2].
    """
    time = np.asarray(time, dtype=float)
    phase = angular_frequency * time
    return (amplitude * np.sin(phase), amplitude * angular_frequency * np.cos(phase),
            -amplitude * angular_frequency**2 * np.sin(phase))


def cylinder_regressor(x, xd) -> np.ndarray:
    """Regressor of the unknowns, rows ``[x, sgn x', x', cbrt x']``.

    Parameters
    ----------
    x : array_like, shape (N,)
        Displacement [mm].
    xd : array_like, shape (N,)
        Velocity [mm/s].

    Returns
    -------
    ndarray, shape (N, 4)
        Columns in :data:`HYDRAULIC_PARAMETER_NAMES` order.
    """
    _check_signals(x=x, xd=xd)
    friction_columns = _STRIBECK.columns(np.asarray(xd, dtype=float)[:, None])[:, 0, :]
    return np.column_stack([np.asarray(x, dtype=float), friction_columns])


def known_force(cylinder: HydraulicCylinder, xd, xdd, p_a, p_b, load=0.0) -> np.ndarray:
    """Left-hand side ``y = p_a A_a - p_b A_b - F_L - m x'' - c x'`` [N].

    Parameters
    ----------
    cylinder : HydraulicCylinder
    xd, xdd : array_like, shape (N,)
        Velocity [mm/s] and acceleration [mm/s^2].
    p_a, p_b : array_like, shape (N,)
        Cap- and rod-side chamber pressures [MPa].
    load : float or array_like, shape (N,)
        External load F_L [N].
    """
    n_samples = _check_signals(xd=xd, xdd=xdd, p_a=p_a, p_b=p_b)
    load = np.broadcast_to(np.asarray(load, dtype=float), (n_samples,))
    hydraulic = np.asarray(p_a, dtype=float) * cylinder.area_a \
        - np.asarray(p_b, dtype=float) * cylinder.area_b
    inertia = cylinder.piston_mass * _KG_MM_PER_S2_IN_N * np.asarray(xdd, dtype=float)
    return hydraulic - load - inertia - cylinder.damping * np.asarray(xd, dtype=float)


@dataclass(frozen=True)
class CylinderPressures:
    """Chamber pressures [MPa], each (N,)."""

    p_a: np.ndarray
    p_b: np.ndarray


def simulate_cylinder(cylinder: HydraulicCylinder, parameters: CylinderParameters, x, xd, xdd,
                      load=0.0, back_pressure: float = 0.5) -> CylinderPressures:
    """Chamber pressures that drive the cylinder along a prescribed motion.

    The rod side is held at ``back_pressure`` [MPa]; the cap side supplies the rest of
    ``m x'' + c x' + K x + F_d(x') + F_L``. Noise-free: add measurement noise yourself.

    Parameters
    ----------
    cylinder : HydraulicCylinder
    parameters : CylinderParameters
    x, xd, xdd : array_like, shape (N,)
        Displacement [mm], velocity [mm/s], acceleration [mm/s^2].
    load : float or array_like, shape (N,)
        F_L [N].
    back_pressure : float
        p_b [MPa].
    """
    n_samples = _check_signals(x=x, xd=xd, xdd=xdd)
    zero = np.zeros(n_samples)
    required = cylinder_regressor(x, xd) @ parameters.as_array() \
        - known_force(cylinder, xd, xdd, zero, zero, load)
    p_b = np.full(n_samples, float(back_pressure))
    return CylinderPressures(p_a=(required + p_b * cylinder.area_b) / cylinder.area_a, p_b=p_b)


@dataclass(frozen=True)
class CylinderIdentification:
    """RLS identification result.

    ``parameters`` final estimate; ``std`` (4,) its standard deviations from
    ``sigma^2 P`` with ``sigma`` the RMS residual force [N]; ``history`` (N, 4) the estimate
    after each sample; ``residual_rms`` [N]; ``state`` the RLS state (see
    :meth:`RecursiveLeastSquares.get_state`).
    """

    parameters: CylinderParameters
    std: np.ndarray
    history: np.ndarray
    residual_rms: float
    state: dict


def identify_cylinder(cylinder: HydraulicCylinder, x, xd, xdd, p_a, p_b, load=0.0,
                      forgetting: float = 1.0, initial_covariance=1e6) -> CylinderIdentification:
    """Identify ``(K, fc, fv, fs)`` by recursive least squares, sample by sample.

    Parameters
    ----------
    cylinder : HydraulicCylinder
    x, xd, xdd : array_like, shape (N,)
        Displacement [mm], velocity [mm/s], acceleration [mm/s^2] (e.g. from
        :func:`robot_dynid.recordings.signal_processing.differentiate`).
    p_a, p_b : array_like, shape (N,)
        Chamber pressures [MPa].
    load : float or array_like, shape (N,)
        F_L [N].
    forgetting, initial_covariance
        As in :class:`~robot_dynid.estimation.estimators.RecursiveLeastSquares`.
    """
    regressor = cylinder_regressor(x, xd)
    target = known_force(cylinder, xd, xdd, p_a, p_b, load)
    if target.size != regressor.shape[0]:
        raise DataError(f"pressures have {target.size} samples, displacement {regressor.shape[0]}")
    if target.size <= len(HYDRAULIC_PARAMETER_NAMES):
        raise DataError(f"need more than 4 samples, got {target.size}")
    rls = RecursiveLeastSquares(len(HYDRAULIC_PARAMETER_NAMES), forgetting=forgetting,
                                initial_covariance=initial_covariance)
    history = rls.update_batch(regressor, target, return_history=True)
    residual = target - regressor @ rls.theta_
    residual_rms = float(np.sqrt(np.mean(residual**2)))
    std = np.sqrt(np.clip(np.diag(rls.covariance_), 0.0, None)) * residual_rms
    logger.info("cylinder identification: %s, residual rms %.3g N",
                dict(zip(HYDRAULIC_PARAMETER_NAMES, np.round(rls.theta_, 4))), residual_rms)
    return CylinderIdentification(parameters=CylinderParameters.from_array(rls.theta_), std=std,
                                  history=history, residual_rms=residual_rms,
                                  state=rls.get_state())
