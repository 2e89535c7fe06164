"""Hydraulic cylinder model and identification of its stiffness and friction (curtain-wall arm).

Cylinder force balance (hydraulic paper; METHODS.md section 8)::

    m x'' + c x' + K x + F_d(x') = p_a A_a - p_b A_b - F_L
    F_d(v) = fc sgn(v) + fv v + fs cbrt(v)          (linearised Stribeck)

The piston mass ``m``, damping ``c``, areas and load ``F_L`` are known; ``c x'`` and
``fv x'`` are collinear, so ``c`` must be fixed. The unknowns ``theta = (K, fc, fv, fs)``
enter linearly::

    y = p_a A_a - p_b A_b - F_L - m x'' - c x' = [x, sgn x', x', cbrt x'] theta

(the paper's regressor lists ``x'`` where ``m x''`` belongs; with ``m`` known that term is
on the left here) and are identified by recursive least squares
(:class:`~robot_dynid.estimation.estimators.RecursiveLeastSquares`) or batch least squares
(:func:`~robot_dynid.estimation.estimators.ols`).

Units are SI throughout: x [m], x' [m/s], x'' [m/s^2], pressures [Pa], areas [m^2], m [kg],
forces [N], ``c`` and ``fv`` [N s/m], ``K`` [N/m], ``fc`` [N], ``fs`` [N (s/m)^(1/3)].
The paper prints its table in millimetres: ``fv`` [N s/mm] x 1000 = [N s/m],
``fs`` [N (s/mm)^(1/3)] x 10 = [N (s/m)^(1/3)] (``cbrt(1000) = 10``), ``K`` [N/mm] x 1000 = [N/m].

The regressor's columns differ by orders of magnitude in SI (x ~ 1e-2 m, sgn ~ 1,
x' ~ 1e-3 m/s, cbrt x' ~ 1e-1): RLS runs on columns divided by :func:`regressor_scales`
(their RMS over the data, or nominal values online), so that one scalar initial covariance
suits all four, and the estimate and covariance are scaled back.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.estimators import column_scales, estimator
from robot_dynid.model.friction import friction_model

__all__ = ["HYDRAULIC_PARAMETER_NAMES", "HYDRAULIC_PARAMETER_UNITS", "CONVERGENCE_BAND", "HydraulicCylinder",
           "CylinderParameters", "sinusoidal_displacement", "cylinder_regressor", "known_force", "CylinderPressures",
           "simulate_cylinder", "regressor_scales", "nominal_scales", "settling_sample", "CylinderIdentification",
           "identify_cylinder"]

logger = logging.getLogger(__name__)

HYDRAULIC_PARAMETER_NAMES = ("K", "fc", "fv", "fs")
"""Order of the unknowns in the regressor: stiffness, Coulomb, viscous, Stribeck (cbrt)."""
HYDRAULIC_PARAMETER_UNITS = ("N/m", "N", "N s/m", "N (s/m)^(1/3)")
"""Their SI units, in the same order."""
CONVERGENCE_BAND = 0.02
"""Default settling band of :func:`settling_sample`: 2 % of each final estimate."""

_STRIBECK = friction_model("stribeck_cbrt")


@dataclass(frozen=True)
class HydraulicCylinder:
    """Known cylinder data.

    Parameters
    ----------
    piston_mass : float
        m [kg] (moving mass of piston and rod), >= 0.
    damping : float
        c [N s/m], >= 0.
    area_a : float
        Cap-side piston area A_a [m^2], > 0.
    area_b : float
        Rod-side annulus area A_b [m^2], > 0.
    """

    piston_mass: float
    damping: float
    area_a: float
    area_b: float

    def __post_init__(self) -> None:
        for name, unit, allow_zero in (("piston_mass", "kg", True), ("damping", "N s/m", True),
                                       ("area_a", "m^2", False), ("area_b", "m^2", False)):
            value = validators.positive(getattr(self, name), f"cylinder {name}", DynIdError, unit=unit,
                                        allow_zero=allow_zero)
            object.__setattr__(self, name, value)


@dataclass(frozen=True)
class CylinderParameters:
    """The identified unknowns: stiffness K [N/m], fc [N], fv [N s/m], fs [N (s/m)^(1/3)]."""

    stiffness: float
    fc: float
    fv: float
    fs: float

    def as_array(self) -> np.ndarray:
        """(4,) in :data:`HYDRAULIC_PARAMETER_NAMES` order."""
        return np.array([self.stiffness, self.fc, self.fv, self.fs])

    @classmethod
    def from_array(cls, theta) -> "CylinderParameters":
        """From (4,) in :data:`HYDRAULIC_PARAMETER_NAMES` order."""
        theta = validators.array(theta, "theta", shape=(4,), axes=("parameters",), finite=False)
        return cls(*(float(value) for value in theta))

    def friction(self, xd) -> np.ndarray:
        """Friction force ``F_d(x') = fc sgn x' + fv x' + fs cbrt x'`` [N] at velocities ``xd`` [m/s], (N,)."""
        xd = np.asarray(xd, dtype=float)
        return _STRIBECK.columns(xd.reshape(-1, 1))[:, 0, :] @ np.array([self.fc, self.fv, self.fs])


def _check_signals(**signals) -> int:
    """All signals must be finite 1-D arrays of one length; returns it."""
    lengths = {name: validators.array(value, name, shape=(None,), axes=("samples",)).size
               for name, value in signals.items()}
    if len(set(lengths.values())) > 1:
        raise DataError(f"signals must have the same length, got {lengths}")
    return next(iter(lengths.values()))


def sinusoidal_displacement(time, amplitude=0.006, angular_frequency=0.05):
    """A sum of sines ``x = sum_k A_k sin(w_k t)`` and its derivatives; by default the paper's
    excitation ``x = 6 mm sin(0.05 t)``.

    Parameters
    ----------
    time : array_like, shape (N,)
        [s].
    amplitude : float or array_like, shape (k,)
        A_k [m] (paper: 6 mm = 0.006 m).
    angular_frequency : float or array_like, shape (k,)
        w_k [rad/s] (paper: 0.05).

    Returns
    -------
    x, xd, xdd : ndarray, shape (N,)
        [m], [m/s], [m/s^2].
    """
    time = validators.array(time, "time", DynIdError, unit="s")
    amplitude = np.atleast_1d(validators.array(amplitude, "amplitude", DynIdError, ndim=(0, 1), unit="m"))
    angular_frequency = np.atleast_1d(validators.array(angular_frequency, "angular_frequency", DynIdError,
                                                       ndim=(0, 1), unit="rad/s"))
    validators.array(angular_frequency, "angular_frequency", DynIdError, shape=amplitude.shape, axes=("sines",))
    phase = np.multiply.outer(time, angular_frequency)
    sine, cosine = np.sin(phase), np.cos(phase)
    return (sine @ amplitude, cosine @ (amplitude * angular_frequency),
            -sine @ (amplitude * angular_frequency**2))


def cylinder_regressor(x, xd) -> np.ndarray:
    """Regressor of the unknowns, rows ``[x, sgn x', x', cbrt x']``.

    Parameters
    ----------
    x : array_like, shape (N,)
        Displacement [m].
    xd : array_like, shape (N,)
        Velocity [m/s].

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
        Velocity [m/s] and acceleration [m/s^2].
    p_a, p_b : array_like, shape (N,)
        Cap- and rod-side chamber pressures [Pa].
    load : float or array_like, shape (N,)
        External load F_L [N], positive opposing extension.
    """
    n_samples = _check_signals(xd=xd, xdd=xdd, p_a=p_a, p_b=p_b)
    load = np.broadcast_to(np.asarray(load, dtype=float), (n_samples,))
    hydraulic = np.asarray(p_a, dtype=float) * cylinder.area_a \
        - np.asarray(p_b, dtype=float) * cylinder.area_b
    inertia = cylinder.piston_mass * np.asarray(xdd, dtype=float)
    return hydraulic - load - inertia - cylinder.damping * np.asarray(xd, dtype=float)


@dataclass(frozen=True)
class CylinderPressures:
    """Chamber pressures [Pa], each (N,)."""

    p_a: np.ndarray
    p_b: np.ndarray


def simulate_cylinder(cylinder: HydraulicCylinder, parameters: CylinderParameters, x, xd, xdd,
                      load=0.0, back_pressure: float = 5e5) -> CylinderPressures:
    """Chamber pressures that drive the cylinder along a prescribed motion.

    The rod side is held at ``back_pressure`` [Pa]; the cap side supplies the rest of
    ``m x'' + c x' + K x + F_d(x') + F_L``. Noise-free: the simulations of
    :mod:`robot_dynid.hydraulics.simulation` add sensor noise.

    Parameters
    ----------
    cylinder : HydraulicCylinder
    parameters : CylinderParameters
    x, xd, xdd : array_like, shape (N,)
        Displacement [m], velocity [m/s], acceleration [m/s^2].
    load : float or array_like, shape (N,)
        F_L [N].
    back_pressure : float
        p_b [Pa] (default 5 bar).
    """
    n_samples = _check_signals(x=x, xd=xd, xdd=xdd)
    zero = np.zeros(n_samples)
    required = cylinder_regressor(x, xd) @ parameters.as_array() \
        - known_force(cylinder, xd, xdd, zero, zero, load)
    p_b = np.full(n_samples, float(back_pressure))
    return CylinderPressures(p_a=(required + p_b * cylinder.area_b) / cylinder.area_a, p_b=p_b)


def regressor_scales(regressor) -> np.ndarray:
    """Column scales of a cylinder regressor: the RMS of each column (1 where it is zero).

    Parameters
    ----------
    regressor : array_like, shape (N, 4)
        From :func:`cylinder_regressor`.

    Returns
    -------
    ndarray, shape (4,)
        [m, 1, m/s, (m/s)^(1/3)]: RLS runs on ``regressor / scales``.
    """
    return column_scales(np.mean(np.asarray(regressor, dtype=float) ** 2, axis=0))


def nominal_scales(displacement: float, velocity: float) -> np.ndarray:
    """Column scales from a typical displacement [m] and speed [m/s] (for online RLS, where the
    data are not known in advance): ``(displacement, 1, velocity, cbrt(velocity))``, (4,)."""
    displacement = validators.positive(displacement, "displacement scale", DynIdError, unit="m")
    velocity = validators.positive(velocity, "velocity scale", DynIdError, unit="m/s")
    return np.array([displacement, 1.0, velocity, np.cbrt(velocity)])


def settling_sample(history, final, floor=None, band: float = CONVERGENCE_BAND) -> int:
    """Samples until an estimate settles: the first sample ``k`` after which every parameter stays
    within ``max(band |final_i|, floor_i)`` of its final value.

    Parameters
    ----------
    history : array_like, shape (N, p)
        Estimate after each sample.
    final : array_like, shape (p,)
        The final estimate.
    floor : array_like, shape (p,), optional
        Smallest half-width of each band (e.g. one standard deviation), in the parameter's unit.
    band : float
        Relative half-width [fraction of ``|final|``].

    Returns
    -------
    int
        ``k + 1`` samples (``N`` means it settled only at the last sample).
    """
    history = np.asarray(history, dtype=float)
    final = np.asarray(final, dtype=float)
    width = band * np.abs(final)
    if floor is not None:
        width = np.maximum(width, np.asarray(floor, dtype=float))
    outside = np.any(np.abs(history - final) > width, axis=1)
    if not outside.any():
        return 1
    return min(int(np.flatnonzero(outside)[-1]) + 2, history.shape[0])


@dataclass(frozen=True)
class CylinderIdentification:
    """Identification result of one cylinder.

    Attributes
    ----------
    parameters : CylinderParameters
        Final estimate.
    std : ndarray, shape (4,)
        Standard deviations of the estimate, in :data:`HYDRAULIC_PARAMETER_NAMES` order and units,
        from ``sigma^2 (W^T W)^-1`` (RLS: ``sigma^2 P``), ``sigma^2 = ||r||^2 / (N - 4)``.
    history : ndarray, shape (N, 4) or None
        A recursive method: the estimate after each sample; a batch one: None.
    residual_rms : float
        RMS of the residual force ``y - W theta`` [N].
    state : dict or None
        A recursive method: the state of its estimator (on the scaled columns ``W / scales``;
        see :meth:`~robot_dynid.estimation.estimators.RecursiveLeastSquares.get_state`); a batch one: None.
    method : str
        The registry name it was identified with (``"rls"``, ``"ls"``, ...).
    convergence_samples : int or None
        RLS: :func:`settling_sample` of ``history`` with the band ``max(2 % |final|, 1 std)``.
    scales : ndarray, shape (4,)
        Column scales the estimator ran on.
    n_samples : int
    """

    parameters: CylinderParameters
    std: np.ndarray
    history: np.ndarray | None
    residual_rms: float
    state: dict | None
    method: str = "rls"
    convergence_samples: int | None = None
    scales: np.ndarray | None = None
    n_samples: int = 0


def identify_cylinder(cylinder: HydraulicCylinder, x, xd, xdd, p_a, p_b, load=0.0,
                      forgetting: float = 1.0, initial_covariance=1e6, method: str = "rls",
                      scales=None) -> CylinderIdentification:
    """Identify ``(K, fc, fv, fs)`` by a registered estimator: recursive (sample by sample) or batch least squares.

    Parameters
    ----------
    cylinder : HydraulicCylinder
    x, xd, xdd : array_like, shape (N,)
        Displacement [m], velocity [m/s], acceleration [m/s^2] (e.g. from
        :func:`robot_dynid.recordings.signal_processing.differentiate`).
    p_a, p_b : array_like, shape (N,)
        Chamber pressures [Pa].
    load : float or array_like, shape (N,)
        F_L [N].
    forgetting : float
        RLS forgetting factor mu in (0, 1].
    initial_covariance : float
        RLS P0 on the scaled columns (identity times this; the scaled parameters are forces [N]).
    method : str
        A name of :data:`~robot_dynid.estimation.estimators.METHOD_NAMES` (``"ls"`` is OLS), built by
        :func:`~robot_dynid.estimation.estimators.build_estimator`.
    scales : array_like, shape (4,), optional
        Column scales for RLS; default :func:`regressor_scales` of the data.
    """
    built = estimator(method).build(len(HYDRAULIC_PARAMETER_NAMES), parameter_names=HYDRAULIC_PARAMETER_NAMES,
                                    forgetting=forgetting, initial_covariance=initial_covariance)
    regressor = cylinder_regressor(x, xd)
    target = known_force(cylinder, xd, xdd, p_a, p_b, load)
    if target.size != regressor.shape[0]:
        raise DataError(f"pressures have {target.size} samples, displacement {regressor.shape[0]}")
    n_parameters = len(HYDRAULIC_PARAMETER_NAMES)
    if target.size <= n_parameters:
        raise DataError(f"need more than 4 samples, got {target.size}")
    scales = regressor_scales(regressor) if scales is None else np.asarray(scales, dtype=float)
    if built.batch:
        result = built.fit(regressor, target).result_
        identification = CylinderIdentification(
            parameters=CylinderParameters.from_array(result.theta), std=result.std, history=None,
            residual_rms=float(result.residual_rms[0]), state=None, method=method, scales=scales,
            n_samples=target.size)
    else:
        history = built.update_batch(regressor / scales, target, return_history=True) / scales
        theta = built.theta_ / scales
        residual = target - regressor @ theta
        sigma = float(np.sqrt(residual @ residual / (target.size - n_parameters)))
        std = np.sqrt(np.clip(np.diag(built.covariance_), 0.0, None)) / scales * sigma
        identification = CylinderIdentification(
            parameters=CylinderParameters.from_array(theta), std=std, history=history,
            residual_rms=float(np.sqrt(np.mean(residual**2))), state=built.get_state(), method=method,
            convergence_samples=settling_sample(history, theta, floor=std), scales=scales,
            n_samples=target.size)
    logger.info("cylinder identification (%s): %s, residual rms %.3g N", method,
                dict(zip(HYDRAULIC_PARAMETER_NAMES, identification.parameters.as_array().round(4))),
                identification.residual_rms)
    return identification
