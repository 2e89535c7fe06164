"""Joint trajectories with analytic positions, velocities and accelerations.

Every family implements :class:`Trajectory`: ``joint_names``, ``duration`` [s],
``evaluate(t) -> (q, qd, qdd)`` with ``t`` of shape (M,) [s] and each result of shape (M, n)
[rad, rad/s, rad/s^2], and ``to_dict()`` (the trajectory-file form, see ``docs/excitation.md``).

Families (``s = t / T`` is normalised time, ``wf = 2 pi / period`` the base angular frequency):

- :class:`FourierTrajectory` (the excitation of the thesis and the redundant-arm paper), per joint i::

      q_i   = q0_i + sum_l [ a_il / (wf l) sin(wf l t) - b_il / (wf l) cos(wf l t) ]
      qd_i  = sum_l [ a_il cos(wf l t) + b_il sin(wf l t) ]
      qdd_i = wf sum_l l [ -a_il sin(wf l t) + b_il cos(wf l t) ]

  (the thesis prints ``qdd`` without the factor ``l``, which is wrong). The start pose is
  ``q(0) = q0 - sum_l b_l / (wf l)``, not ``q0``. ``wf`` may differ per joint.
- :class:`SineSumTrajectory`: ``q = offset + sum_k a_k sin(k wf t)`` (starts with a jerk).
- :class:`RampedSine`: ``q = center + amplitude e(t) sin(w (t - Tr))``, a whole number of periods
  of a pure sine between a ramp-in and a ramp-out of ``Tr`` over which the envelope ``e`` rises
  from 0 to 1 (and falls back) along a cycloid; rest-to-rest (the hydraulic paper's cylinder
  excitation ``x = A sin(w t)`` as joint motion).
- :class:`CycloidalMove`: ``q = theta0 + dtheta [s - sin(2 pi s) / (2 pi)]``; rest-to-rest,
  peak speed ``2 dtheta / T``, peak acceleration ``2 pi dtheta / T^2``.
- :class:`PointToPoint`: quintic ``q = start + (end - start)(10 s^3 - 15 s^4 + 6 s^5)``;
  rest-to-rest, peak speed ``1.875 |dq| / T``, peak acceleration ``(10 / sqrt 3) |dq| / T^2``.
- :class:`Hold`: constant pose.
- :class:`ConstantVelocityMove`: ramp up, cruise at ``velocity``, ramp down (rest-to-rest); the
  ramps are jerk-limited (raised-cosine acceleration edges of ``jerk_duration``).
- :class:`VelocityLadder`: one joint back and forth at a list of speeds, equal time per level.
- :class:`Sequence` (segments one after the other, continuity checked at each junction),
  :class:`Parallel` (groups of joints side by side, idle holds so all finish together) and
  :class:`Repeat`.

Trajectory files are YAML mappings with a ``type`` key; :func:`load_trajectory`,
:func:`trajectory_from_dict` and :func:`save_trajectory` read and write them.
"""
from __future__ import annotations

import dataclasses
import logging
import math
import pathlib
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import yaml

from robot_dynid import validators
from robot_dynid.errors import TrajectoryError
from robot_dynid.joint_names import index_in, match_joints, unique_names
from robot_dynid.yaml_files import read_yaml

__all__ = ["DEFAULT_CONTINUITY_TOLERANCE", "MAX_GRID_POINTS", "MAX_LADDER_STROKES", "time_grid", "Trajectory",
           "fourier_basis", "FourierTrajectory", "SineSumTrajectory", "RampedSine", "CylinderSine", "Hold",
           "CycloidalMove", "cycloidal_duration", "PointToPoint", "ConstantVelocityMove", "Sequence", "Parallel",
           "Repeat", "LadderStroke", "ladder_ramp", "max_ladder_speed", "VelocityLadder", "TRAJECTORY_TYPES",
           "trajectory_from_dict", "load_trajectory", "dump_trajectory", "save_trajectory"]

logger = logging.getLogger(__name__)

DEFAULT_CONTINUITY_TOLERANCE = 1e-6
"""Default largest jump of q [rad], qd [rad/s] and qdd [rad/s^2] allowed at a junction."""
MAX_GRID_POINTS = 10_000_000
"""Most points of a sampling grid (:func:`time_grid`, :meth:`Trajectory.sample`): q, qd, qdd of 6 joints
then take 1.4 GB; 28 hours at 100 Hz."""
MAX_LADDER_STROKES = 10_000
"""Most strokes of one level of a :class:`VelocityLadder` (each is a trajectory segment)."""


# --------------------------------------------------------------------------- validation helpers

def _joint_names(value, field: str = "joint_names") -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not value:
        raise TrajectoryError(f"{field} must be a non-empty list of joint names, got {value!r}")
    if not all(isinstance(name, str) and name for name in value):
        raise TrajectoryError(f"{field} must hold non-empty strings, got {list(value)!r}")
    return unique_names(value, field, error=TrajectoryError)


def _joint_column(trajectory) -> int:
    """Column of ``trajectory.joint``, one of its ``joint_names``."""
    if not isinstance(trajectory.joint, str):
        raise TrajectoryError(f"joint must be a joint name, got {trajectory.joint!r}")
    return index_in(trajectory.joint_names, [trajectory.joint], "joint", "the trajectory",
                    error=TrajectoryError)[0]


def _number(value, field: str, positive: bool = False, non_negative: bool = False) -> float:
    if positive or non_negative:
        return validators.positive(value, field, TrajectoryError, allow_zero=non_negative)
    return validators.number(value, field, TrajectoryError)


def _array(value, shape: tuple, field: str, axes: tuple[str, ...], unit: str, columns=None) -> np.ndarray:
    """Read-only float copy of ``value`` (:func:`~robot_dynid.validators.array`: ``shape``, finite)."""
    array = validators.array(value, field, TrajectoryError, shape=shape, axes=axes, columns=columns, unit=unit,
                             copy=True)
    array.setflags(write=False)
    return array


def _set(instance, name: str, value) -> None:
    object.__setattr__(instance, name, value)


def time_grid(duration: float, n_points: int | None = None, dt: float | None = None) -> np.ndarray:
    """Sample times covering ``[0, duration]``, both ends included.

    Parameters
    ----------
    duration : float
        Length [s].
    n_points : int, optional
        Number of equally spaced points (>= 2).
    dt : float, optional
        Spacing [s]; the last interval is shorter when ``duration`` is not a multiple.
        Give exactly one of ``n_points`` and ``dt``.

    Returns
    -------
    ndarray, shape (M,)
        Times [s].
    """
    if (n_points is None) == (dt is None):
        raise TrajectoryError("give exactly one of n_points and dt")
    if n_points is not None:
        n_points = validators.count(n_points, "n_points", TrajectoryError, minimum=2, maximum=MAX_GRID_POINTS)
        return np.linspace(0.0, duration, n_points)
    dt = _number(dt, "dt", positive=True)
    duration = _number(duration, "duration", non_negative=True)
    if not duration / dt < MAX_GRID_POINTS:
        raise TrajectoryError(f"a grid of {duration:.6g} s at dt = {dt:g} s would have {duration / dt:.4g} points, "
                              f"more than {MAX_GRID_POINTS}: a larger dt")
    times = np.arange(0.0, duration, dt)
    if duration - times[-1] > 1e-9 * dt:
        times = np.append(times, duration)
    return times


# --------------------------------------------------------------------------- base class

class Trajectory:
    """Interface of all trajectory families.

    Attributes
    ----------
    joint_names : tuple of str
        Joint order of the columns of ``q``, ``qd``, ``qdd``.
    duration : float
        Length [s]; :meth:`evaluate` accepts times in ``[0, duration]``, periodic families
        (Fourier, sine sum) any time.
    """

    kind: ClassVar[str] = ""
    periodic: ClassVar[bool] = False
    joint_names: tuple[str, ...]
    duration: float

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def evaluate(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Positions, velocities and accelerations at the given times.

        Parameters
        ----------
        t : array_like, shape (M,)
            Times [s] within ``[0, duration]`` (any order); any finite times for periodic
            families.

        Returns
        -------
        q, qd, qdd : ndarray, shape (M, n)
            [rad], [rad/s], [rad/s^2].
        """
        t = validators.array(t, "t", TrajectoryError, shape=(None,), axes=("times",), unit="s")
        if self.periodic:
            return self._evaluate(t)
        slack = 1e-9 * max(1.0, self.duration)
        if t.size and (t.min() < -slack or t.max() > self.duration + slack):
            raise TrajectoryError(
                f"t must lie within [0, {self.duration:g}] s of this {self.kind} trajectory, "
                f"got [{t.min():g}, {t.max():g}]")
        return self._evaluate(np.clip(t, 0.0, self.duration))

    def boundary_states(self) -> tuple[np.ndarray, np.ndarray]:
        """States at ``t = 0`` and ``t = duration``, each of shape (3, n): rows q, qd, qdd."""
        q, qd, qdd = self.evaluate(np.array([0.0, self.duration]))
        return np.stack([q[0], qd[0], qdd[0]]), np.stack([q[1], qd[1], qdd[1]])

    def sample(self, n_points: int | None = None, dt: float | None = None):
        """``(t, q, qd, qdd)`` on :func:`time_grid` ``(duration, n_points, dt)``."""
        t = time_grid(self.duration, n_points, dt)
        return (t,) + self.evaluate(t)

    def _evaluate(self, t: np.ndarray):
        raise NotImplementedError

    def to_dict(self) -> dict:
        raise NotImplementedError

    def _common_dict(self) -> dict:
        return {"type": self.kind, "joints": list(self.joint_names)}


def _check_common(trajectory: Trajectory) -> None:
    _set(trajectory, "joint_names", _joint_names(trajectory.joint_names))


def _vector(trajectory: Trajectory, field: str, value, unit: str) -> np.ndarray:
    return _array(value, (trajectory.n_joints,), field, ("joints",), unit, trajectory.joint_names)


def _floats(array: np.ndarray) -> list:
    return np.asarray(array, dtype=float).tolist()


def _tile(vector: np.ndarray, count: int) -> np.ndarray:
    return np.broadcast_to(vector, (count, vector.size)).copy()


# --------------------------------------------------------------------------- Fourier family

def fourier_basis(t, angular_frequency: float, harmonics: int) -> tuple[np.ndarray, ...]:
    """Basis of the Fourier form: q, qd, qdd are linear in the coefficients.

    For one joint with coefficients ``a``, ``b`` of shape (L,)::

        q   = q0 + q_a @ a + q_b @ b
        qd  = qd_a @ a + qd_b @ b
        qdd = qdd_a @ a + qdd_b @ b

    Parameters
    ----------
    t : array_like, shape (M,)
        Times [s].
    angular_frequency : float
        ``wf`` [rad/s].
    harmonics : int
        ``L``.

    Returns
    -------
    q_a, q_b, qd_a, qd_b, qdd_a, qdd_b : ndarray, shape (M, L)
        ``q_a = sin(wf l t) / (wf l)``, ``q_b = -cos(wf l t) / (wf l)``, ``qd_a = cos``,
        ``qd_b = sin``, ``qdd_a = -wf l sin``, ``qdd_b = wf l cos``.
    """
    omega = angular_frequency * np.arange(1, harmonics + 1)
    phase = np.outer(np.asarray(t, dtype=float), omega)
    sin, cos = np.sin(phase), np.cos(phase)
    return sin / omega, -cos / omega, cos, sin, -omega * sin, omega * cos


def _periods(value, n_joints: int, field: str = "period") -> np.ndarray:
    if isinstance(value, (list, tuple, np.ndarray)):
        periods = _array(value, (n_joints,), field, ("joints",), "s")
    else:
        periods = np.full(n_joints, _number(value, field))
    if np.any(periods <= 0.0):
        raise TrajectoryError(f"{field} must be > 0 s, got {_floats(periods)}")
    periods.setflags(write=False)
    return periods


def _check_periodic(trajectory: Trajectory) -> None:
    """The joint names, the periods [s] (one or one per joint) and the duration [s] of a periodic family (default
    the longest period)."""
    _check_common(trajectory)
    _set(trajectory, "period", _periods(trajectory.period, trajectory.n_joints))
    duration = float(trajectory.period.max()) if trajectory.duration is None else trajectory.duration
    _set(trajectory, "duration", _number(duration, "duration", positive=True))


def _period_to_yaml(periods: np.ndarray):
    return float(periods[0]) if np.all(periods == periods[0]) else _floats(periods)


@dataclass(frozen=True, eq=False)
class FourierTrajectory(Trajectory):
    """Finite Fourier series in the papers' form (see the module docstring).

    Parameters
    ----------
    joint_names : sequence of str, length n
    period : float or sequence of float, length n
        ``2 pi / wf`` [s], one for all joints or one per joint.
    q0 : array_like, shape (n,)
        Offsets [rad] (not the start pose, see :attr:`start_pose`).
    a, b : array_like, shape (n, L)
        Coefficients [rad/s], row per joint, column per harmonic ``l = 1..L``.
    duration : float, optional
        Length [s]; default the longest period.
    """

    kind: ClassVar[str] = "fourier"
    periodic: ClassVar[bool] = True
    joint_names: tuple[str, ...]
    period: object
    q0: np.ndarray
    a: np.ndarray
    b: np.ndarray
    duration: float | None = None

    def __post_init__(self) -> None:
        _check_periodic(self)
        n = self.n_joints
        _set(self, "q0", _vector(self, "q0", self.q0, "rad"))
        _set(self, "a", _array(self.a, (n, None), "a", ("joints", "harmonics"), "rad/s"))
        _set(self, "b", _array(self.b, (n, None), "b", ("joints", "harmonics"), "rad/s"))
        if self.a.shape[1] < 1:
            raise TrajectoryError("a must have at least one harmonic column, got shape "
                                  f"{self.a.shape}")
        if self.b.shape != self.a.shape:
            raise TrajectoryError(f"b must have the shape of a {self.a.shape} (joints, harmonics), "
                                  f"got {self.b.shape}")

    @property
    def harmonics(self) -> int:
        return self.a.shape[1]

    @property
    def angular_frequency(self) -> np.ndarray:
        """``wf`` per joint, shape (n,) [rad/s]."""
        return 2.0 * np.pi / self.period

    @property
    def start_pose(self) -> np.ndarray:
        """``q(0) = q0 - sum_l b_l / (wf l)``, shape (n,) [rad]."""
        orders = np.arange(1, self.harmonics + 1)
        return self.q0 - np.sum(self.b / (self.angular_frequency[:, None] * orders), axis=1)

    def _evaluate(self, t):
        q, qd, qdd = (np.empty((t.size, self.n_joints)) for _ in range(3))
        for joint, wf in enumerate(self.angular_frequency):
            q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = fourier_basis(t, wf, self.harmonics)
            a, b = self.a[joint], self.b[joint]
            q[:, joint] = self.q0[joint] + q_a @ a + q_b @ b
            qd[:, joint] = qd_a @ a + qd_b @ b
            qdd[:, joint] = qdd_a @ a + qdd_b @ b
        return q, qd, qdd

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(period=_period_to_yaml(self.period), q0=_floats(self.q0), a=_floats(self.a),
                    b=_floats(self.b), duration=self.duration)
        return data


@dataclass(frozen=True, eq=False)
class SineSumTrajectory(Trajectory):
    """``q = offset + sum_k a_k sin(k wf t)``, ``k = 1..K`` (the thesis's first attempt).

    Parameters
    ----------
    joint_names : sequence of str, length n
    period : float or sequence of float, length n
        ``2 pi / wf`` [s].
    amplitudes : array_like, shape (n, K)
        ``a_k`` [rad].
    offset : array_like, shape (n,), optional
        [rad], default zeros.
    duration : float, optional
        [s], default the longest period.
    """

    kind: ClassVar[str] = "sine_sum"
    periodic: ClassVar[bool] = True
    joint_names: tuple[str, ...]
    period: object
    amplitudes: np.ndarray
    offset: np.ndarray | None = None
    duration: float | None = None

    def __post_init__(self) -> None:
        _check_periodic(self)
        n = self.n_joints
        _set(self, "amplitudes", _array(self.amplitudes, (n, None), "amplitudes", ("joints", "harmonics"), "rad"))
        offset = np.zeros(n) if self.offset is None else self.offset
        _set(self, "offset", _vector(self, "offset", offset, "rad"))

    def _evaluate(self, t):
        orders = np.arange(1, self.amplitudes.shape[1] + 1)
        omega = (2.0 * np.pi / self.period)[:, None] * orders          # (n, K)
        phase = t[:, None, None] * omega                                 # (M, n, K)
        sin, cos = np.sin(phase), np.cos(phase)
        q = self.offset + np.sum(self.amplitudes * sin, axis=2)
        qd = np.sum(self.amplitudes * omega * cos, axis=2)
        qdd = -np.sum(self.amplitudes * omega**2 * sin, axis=2)
        return q, qd, qdd

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(period=_period_to_yaml(self.period), amplitudes=_floats(self.amplitudes),
                    offset=_floats(self.offset), duration=self.duration)
        return data


@dataclass(frozen=True, eq=False)
class RampedSine(Trajectory):
    """A pure sine of whole periods, entered and left at rest through amplitude ramps.

    With ``Tr = ramp_duration``, ``Ts = cycles 2 pi / w`` and ``T = 2 Tr + Ts``::

        q = center + amplitude e(t) sin(w (t - Tr))
        e = c(t / Tr) on [0, Tr],  1 on [Tr, Tr + Ts],  1 - c((t - Tr - Ts) / Tr) on [Tr + Ts, T]
        c(u) = u - sin(2 pi u) / (2 pi)

    ``c`` has zero slope and curvature at both ends, so ``q``, ``qd`` and ``qdd`` are continuous,
    the motion starts and ends at rest at ``center``, and on ``[Tr, Tr + Ts]`` it is exactly
    ``center + amplitude sin(w tau)``, ``tau = t - Tr`` (peak speed ``|amplitude| w``, peak
    acceleration ``|amplitude| w^2``; the ramps may exceed both slightly).

    Parameters
    ----------
    joint_names : sequence of str, length n
    center : array_like, shape (n,)
        [rad].
    amplitude : array_like, shape (n,)
        [rad], either sign, zero for joints that hold.
    angular_frequency : float
        w [rad/s] (> 0).
    cycles : int
        Whole periods of the pure sine (>= 1).
    ramp_duration : float
        ``Tr`` [s] (> 0).
    """

    kind: ClassVar[str] = "ramped_sine"
    joint_names: tuple[str, ...]
    center: np.ndarray
    amplitude: np.ndarray
    angular_frequency: float
    cycles: int
    ramp_duration: float

    def __post_init__(self) -> None:
        _check_common(self)
        _set(self, "center", _vector(self, "center", self.center, "rad"))
        _set(self, "amplitude", _vector(self, "amplitude", self.amplitude, "rad"))
        _set(self, "angular_frequency", validators.positive(self.angular_frequency, "angular_frequency",
                                                            TrajectoryError, "rad/s"))
        _set(self, "cycles", validators.count(self.cycles, "cycles", TrajectoryError))
        _set(self, "ramp_duration", validators.positive(self.ramp_duration, "ramp_duration", TrajectoryError, "s"))

    @property
    def sine_duration(self) -> float:
        """``Ts = cycles 2 pi / w`` [s], the pure sine between the ramps."""
        return self.cycles * 2.0 * np.pi / self.angular_frequency

    @property
    def duration(self) -> float:
        return 2.0 * self.ramp_duration + self.sine_duration

    def _envelope(self, t):
        """``e, e', e''`` at ``t`` (M,)."""
        ramp, steady_end = self.ramp_duration, self.ramp_duration + self.sine_duration
        rising, falling = t < ramp, t > steady_end
        u = np.where(rising, t / ramp, np.where(falling, (t - steady_end) / ramp, 0.0))
        angle = 2.0 * np.pi * u
        c = u - np.sin(angle) / (2.0 * np.pi)
        cd = (1.0 - np.cos(angle)) / ramp
        cdd = 2.0 * np.pi * np.sin(angle) / ramp**2
        sign = np.where(falling, -1.0, 1.0)
        e = np.where(rising, c, np.where(falling, 1.0 - c, 1.0))
        ramping = rising | falling
        return e, np.where(ramping, sign * cd, 0.0), np.where(ramping, sign * cdd, 0.0)

    def _evaluate(self, t):
        w = self.angular_frequency
        phase = w * (t - self.ramp_duration)
        sin, cos = np.sin(phase)[:, None], np.cos(phase)[:, None]
        e, ed, edd = (value[:, None] for value in self._envelope(t))
        q = self.center + self.amplitude * e * sin
        qd = self.amplitude * (ed * sin + w * e * cos)
        qdd = self.amplitude * (edd * sin + 2.0 * w * ed * cos - w**2 * e * sin)
        return q, qd, qdd

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(center=_floats(self.center), amplitude=_floats(self.amplitude),
                    angular_frequency=self.angular_frequency, cycles=self.cycles,
                    ramp_duration=self.ramp_duration)
        return data


@dataclass(frozen=True, eq=False)
class CylinderSine(Trajectory):
    """A hydraulic cylinder's rod displacement ``x = x_c + A e(t) sin(w (t - Tr))`` [m] (the envelope
    ``e`` of :class:`RampedSine`), made by one joint whose position is a smooth function of it,
    ``q_j = P(x)``, the other joints held at ``center``: the cylinder excitation of a cylinder whose
    moment arm varies with the pose (attached at two points).

    ``P`` is a Chebyshev series on ``domain`` fitted to the inverse of the attachment geometry
    (:mod:`robot_dynid.experiment.protocol` builds it); ``qd_j = P'(x) x'``,
    ``qdd_j = P''(x) x'^2 + P'(x) x''``.

    Parameters
    ----------
    joint_names : sequence of str, length n
    center : array_like, shape (n,)
        [rad] the pose held; ``center[j]`` is ``P(x_c)``.
    joint : str
        The moving joint ``j``.
    displacement_center : float
        ``x_c`` [m].
    amplitude : float
        ``A`` [m] (> 0).
    angular_frequency : float
        w [rad/s] (> 0).
    cycles : int
        Whole periods of the pure sine (>= 1).
    ramp_duration : float
        ``Tr`` [s] (> 0).
    coefficients : sequence of float
        Chebyshev coefficients of ``P`` [rad], on ``domain`` mapped to [-1, 1].
    domain : sequence of 2 float
        ``[x_low, x_high]`` [m], containing ``x_c -+ A``.
    """

    kind: ClassVar[str] = "cylinder_sine"
    joint_names: tuple[str, ...]
    center: np.ndarray
    joint: str
    displacement_center: float
    amplitude: float
    angular_frequency: float
    cycles: int
    ramp_duration: float
    coefficients: tuple
    domain: tuple

    def __post_init__(self) -> None:
        _check_common(self)
        _set(self, "center", _vector(self, "center", self.center, "rad"))
        _set(self, "_column", _joint_column(self))
        _set(self, "displacement_center", validators.number(self.displacement_center, "displacement_center",
                                                            TrajectoryError))
        _set(self, "amplitude", validators.positive(self.amplitude, "amplitude", TrajectoryError, "m"))
        coefficients = validators.array(self.coefficients, "coefficients", TrajectoryError, shape=(None,),
                                        axes=("coefficients",), min_length=2, unit="rad")
        _set(self, "coefficients", tuple(coefficients.tolist()))
        low, high = validators.numbers(list(self.domain), 2, "domain", TrajectoryError, "m")
        reach = (self.displacement_center - self.amplitude, self.displacement_center + self.amplitude)
        if not low < high or reach[0] < low or reach[1] > high:
            raise TrajectoryError(f"domain [{low:g}, {high:g}] m must contain the displacement range "
                                  f"[{reach[0]:g}, {reach[1]:g}] m")
        _set(self, "domain", (low, high))
        _set(self, "_envelope_sine", RampedSine(self.joint_names[:1], [0.0], [1.0], self.angular_frequency,
                                                self.cycles, self.ramp_duration))
        _set(self, "angular_frequency", self._envelope_sine.angular_frequency)
        _set(self, "cycles", self._envelope_sine.cycles)
        _set(self, "ramp_duration", self._envelope_sine.ramp_duration)

    @property
    def duration(self) -> float:
        return self._envelope_sine.duration

    @property
    def sine_duration(self) -> float:
        return self._envelope_sine.sine_duration

    def displacement(self, t) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``x`` [m], ``x'`` [m/s], ``x''`` [m/s^2] at times ``t`` (M,)."""
        s, sd, sdd = (value[:, 0] for value in self._envelope_sine.evaluate(t))
        return self.displacement_center + self.amplitude * s, self.amplitude * sd, self.amplitude * sdd

    def _evaluate(self, t):
        x, xd, xdd = self.displacement(t)
        series = np.polynomial.Chebyshev(self.coefficients, domain=self.domain)
        slope, curvature = series.deriv(1)(x), series.deriv(2)(x)
        j = self._column
        q = np.tile(self.center, (t.size, 1))
        qd, qdd = np.zeros_like(q), np.zeros_like(q)
        q[:, j] = series(x)
        qd[:, j] = slope * xd
        qdd[:, j] = curvature * xd**2 + slope * xdd
        return q, qd, qdd

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(center=_floats(self.center), joint=self.joint, displacement_center=self.displacement_center,
                    amplitude=self.amplitude, angular_frequency=self.angular_frequency, cycles=self.cycles,
                    ramp_duration=self.ramp_duration, coefficients=list(self.coefficients),
                    domain=list(self.domain))
        return data


# --------------------------------------------------------------------------- point moves

@dataclass(frozen=True, eq=False)
class Hold(Trajectory):
    """Constant ``pose`` (n,) [rad] for ``duration`` [s] (> 0)."""

    kind: ClassVar[str] = "hold"
    joint_names: tuple[str, ...]
    pose: np.ndarray
    duration: float

    def __post_init__(self) -> None:
        _check_common(self)
        _set(self, "pose", _vector(self, "pose", self.pose, "rad"))
        _set(self, "duration", _number(self.duration, "duration", positive=True))

    def _evaluate(self, t):
        zeros = np.zeros((t.size, self.n_joints))
        return _tile(self.pose, t.size), zeros, zeros.copy()

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(pose=_floats(self.pose), duration=self.duration)
        return data


def _shortest_rest_to_rest(distance, velocity_limit, acceleration_limit, peak_speed: float,
                           peak_acceleration: float) -> float:
    """Shortest ``T`` [s] of a rest-to-rest profile whose normalised speed peaks at ``peak_speed`` and
    acceleration at ``peak_acceleration``: ``max_j max(peak_speed d_j / v_j, sqrt(peak_acceleration d_j / a_j))``
    (arguments of shape (n,) [rad], [rad/s], [rad/s^2])."""
    distance = np.abs(np.asarray(distance, dtype=float))
    by_speed = peak_speed * distance / np.asarray(velocity_limit, dtype=float)
    by_acceleration = np.sqrt(peak_acceleration * distance / np.asarray(acceleration_limit, dtype=float))
    return float(np.max(np.maximum(by_speed, by_acceleration), initial=0.0))


class _RestToRest(Trajectory):
    """A rest-to-rest move ``q = start + delta p(s)``, ``s = t / duration``, along a normalised profile ``p``
    (0 to 1, ``p'`` and ``p''`` zero at both ends) that a subclass gives as :meth:`_profile`, with the peaks
    ``max p'`` (:attr:`PEAK_SPEED`) and ``max |p''|`` (:attr:`PEAK_ACCELERATION`); ``delta`` is :meth:`_delta`.
    The peak speed is ``PEAK_SPEED |delta| / T``, the peak acceleration ``PEAK_ACCELERATION |delta| / T^2``."""

    PEAK_SPEED: ClassVar[float]
    PEAK_ACCELERATION: ClassVar[float]
    TARGET: ClassVar[str]
    """The field [rad] (n,) beside ``start`` that says where the move goes."""

    def __post_init__(self) -> None:
        _check_common(self)
        for name in ("start", self.TARGET):
            _set(self, name, _vector(self, name, getattr(self, name), "rad"))
        _set(self, "duration", _number(self.duration, "duration", positive=True))

    @staticmethod
    def _profile(s):
        raise NotImplementedError

    def _delta(self) -> np.ndarray:
        raise NotImplementedError

    def _evaluate(self, t):
        period, delta = self.duration, self._delta()
        p, dp, ddp = self._profile((t / period)[:, None])
        return self.start + delta * p, delta / period * dp, delta / period**2 * ddp

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update({"start": _floats(self.start), self.TARGET: _floats(getattr(self, self.TARGET)),
                     "duration": self.duration})
        return data


@dataclass(frozen=True, eq=False)
class CycloidalMove(_RestToRest):
    """``q = start + displacement [s - sin(2 pi s) / (2 pi)]``, ``s = t / duration``.

    Rest-to-rest (``qd`` and ``qdd`` are zero at both ends); peak speed
    ``2 |displacement| / duration`` at ``s = 1/2``, peak acceleration
    ``2 pi |displacement| / duration^2`` at ``s = 1/4``.

    Parameters
    ----------
    joint_names : sequence of str, length n
    start : array_like, shape (n,)
        ``theta0`` [rad].
    displacement : array_like, shape (n,)
        ``dtheta`` [rad], either sign.
    duration : float
        ``T`` [s].
    """

    kind: ClassVar[str] = "cycloidal"
    PEAK_SPEED: ClassVar[float] = 2.0
    PEAK_ACCELERATION: ClassVar[float] = 2.0 * math.pi
    TARGET: ClassVar[str] = "displacement"
    joint_names: tuple[str, ...]
    start: np.ndarray
    displacement: np.ndarray
    duration: float

    @staticmethod
    def _profile(s):
        angle = 2.0 * np.pi * s
        return s - np.sin(angle) / (2.0 * np.pi), 1.0 - np.cos(angle), 2.0 * np.pi * np.sin(angle)

    def _delta(self) -> np.ndarray:
        return self.displacement


def cycloidal_duration(displacement, velocity_limit, acceleration_limit) -> float:
    """Shortest duration [s] of a :class:`CycloidalMove` within speed and acceleration limits.

    ``T = max_j max(2 |d_j| / v_j, sqrt(2 pi |d_j| / a_j))``; all arguments have shape (n,)
    [rad], [rad/s], [rad/s^2].
    """
    return _shortest_rest_to_rest(displacement, velocity_limit, acceleration_limit, CycloidalMove.PEAK_SPEED,
                                  CycloidalMove.PEAK_ACCELERATION)


@dataclass(frozen=True, eq=False)
class PointToPoint(_RestToRest):
    """Quintic rest-to-rest move ``q = start + (end - start)(10 s^3 - 15 s^4 + 6 s^5)``.

    Peak speed ``1.875 |end - start| / T``, peak acceleration ``5.774 |end - start| / T^2``.

    Parameters
    ----------
    joint_names : sequence of str, length n
    start, end : array_like, shape (n,)
        Poses [rad].
    duration : float
        ``T`` [s].
    """

    kind: ClassVar[str] = "point_to_point"
    PEAK_SPEED: ClassVar[float] = 1.875
    PEAK_ACCELERATION: ClassVar[float] = 10.0 / math.sqrt(3.0)
    TARGET: ClassVar[str] = "end"
    joint_names: tuple[str, ...]
    start: np.ndarray
    end: np.ndarray
    duration: float

    @staticmethod
    def shortest_duration(start, end, velocity_limit, acceleration_limit) -> float:
        """Shortest ``T`` [s] keeping every joint within the given speed and acceleration.

        All arguments have shape (n,) [rad], [rad], [rad/s], [rad/s^2].
        """
        return _shortest_rest_to_rest(np.asarray(end, float) - np.asarray(start, float), velocity_limit,
                                      acceleration_limit, PointToPoint.PEAK_SPEED, PointToPoint.PEAK_ACCELERATION)

    @staticmethod
    def _profile(s):
        return (s**3 * (10.0 - 15.0 * s + 6.0 * s**2), 30.0 * s**2 * (1.0 - s) ** 2,
                60.0 * s * (1.0 - s) * (1.0 - 2.0 * s))

    def _delta(self) -> np.ndarray:
        return self.end - self.start


# --------------------------------------------------------------------------- constant velocity

def _integrate_phases(durations, c0, c1, omega, t):
    """Normalised profile ``u`` whose acceleration in phase k is ``c0_k + c1_k cos(omega_k tau)``.

    Starting from ``u = u' = 0`` and integrating in closed form::

        u'  = v_k + c0 tau + c1 sin(omega tau) / omega
        u   = p_k + v_k tau + c0 tau^2 / 2 + c1 (1 - cos(omega tau)) / omega^2

    Returns ``(u, u', u'')`` at ``t`` (M,) and the end values ``(u(T), u'(T))``.
    """
    durations, c0, c1, omega = (np.asarray(x, dtype=float) for x in (durations, c0, c1, omega))
    starts_v = np.zeros(len(durations) + 1)
    starts_p = np.zeros(len(durations) + 1)
    for k, tau in enumerate(durations):
        sin_term = c1[k] * np.sin(omega[k] * tau) / omega[k]
        cos_term = c1[k] * (1.0 - np.cos(omega[k] * tau)) / omega[k] ** 2
        starts_v[k + 1] = starts_v[k] + c0[k] * tau + sin_term
        starts_p[k + 1] = starts_p[k] + starts_v[k] * tau + 0.5 * c0[k] * tau**2 + cos_term
    edges = np.concatenate([[0.0], np.cumsum(durations)])
    phase = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, len(durations) - 1)
    tau = t - edges[phase]
    w, a0, a1 = omega[phase], c0[phase], c1[phase]
    udd = a0 + a1 * np.cos(w * tau)
    ud = starts_v[phase] + a0 * tau + a1 * np.sin(w * tau) / w
    u = starts_p[phase] + starts_v[phase] * tau + 0.5 * a0 * tau**2 \
        + a1 * (1.0 - np.cos(w * tau)) / w**2
    return u, ud, udd


@dataclass(frozen=True, eq=False)
class ConstantVelocityMove(Trajectory):
    """Ramp up, cruise at constant ``velocity``, ramp down; starts and ends at rest.

    ``q(t) = start + velocity * u(t)`` with ``u'`` rising from 0 to 1 over ``ramp_duration``
    ``Tr``, staying 1 for ``cruise_duration`` ``Tc`` and falling back to 0 over ``Tr``. In a
    ramp ``u''`` rises along a raised cosine over ``Tj = jerk_duration``, stays at
    ``1 / (Tr - Tj)`` and falls back along a raised cosine (``Tj = 0``: constant acceleration;
    ``Tj = Tr / 2``: pure cosine pulse). Joint j's peak acceleration is
    ``|velocity_j| / (Tr - Tj)`` and its displacement ``velocity_j (Tr + Tc)``.

    Parameters
    ----------
    joint_names : sequence of str, length n
    start : array_like, shape (n,)
        Start pose [rad].
    velocity : array_like, shape (n,)
        Cruise velocity [rad/s], either sign, zero for joints that hold.
    cruise_duration : float
        ``Tc`` [s] (>= 0).
    ramp_duration : float
        ``Tr`` [s] (> 0).
    jerk_duration : float
        ``Tj`` [s], ``0 <= Tj <= Tr / 2``.
    """

    kind: ClassVar[str] = "constant_velocity"
    joint_names: tuple[str, ...]
    start: np.ndarray
    velocity: np.ndarray
    cruise_duration: float
    ramp_duration: float
    jerk_duration: float = 0.0

    def __post_init__(self) -> None:
        _check_common(self)
        _set(self, "start", _vector(self, "start", self.start, "rad"))
        _set(self, "velocity", _vector(self, "velocity", self.velocity,
                                       "rad/s"))
        _set(self, "cruise_duration", _number(self.cruise_duration, "cruise_duration",
                                              non_negative=True))
        _set(self, "ramp_duration", _number(self.ramp_duration, "ramp_duration", positive=True))
        _set(self, "jerk_duration", _number(self.jerk_duration, "jerk_duration",
                                            non_negative=True))
        if self.jerk_duration > 0.5 * self.ramp_duration * (1.0 + 1e-12):
            raise TrajectoryError(f"jerk_duration must be <= ramp_duration / 2 = "
                                  f"{0.5 * self.ramp_duration:g} s, got {self.jerk_duration:g}")
        _set(self, "jerk_duration", min(self.jerk_duration, 0.5 * self.ramp_duration))

    @property
    def duration(self) -> float:
        return 2.0 * self.ramp_duration + self.cruise_duration

    @property
    def plateau(self) -> tuple[float, float]:
        """Start and end [s] of the constant-velocity part."""
        return self.ramp_duration, self.ramp_duration + self.cruise_duration

    @property
    def peak_acceleration(self) -> np.ndarray:
        """``|velocity| / (Tr - Tj)``, shape (n,) [rad/s^2]."""
        return np.abs(self.velocity) / (self.ramp_duration - self.jerk_duration)

    @property
    def displacement(self) -> np.ndarray:
        """``velocity (Tr + Tc)``, shape (n,) [rad]."""
        return self.velocity * (self.ramp_duration + self.cruise_duration)

    def _phases(self):
        ramp, jerk = self.ramp_duration, self.jerk_duration
        peak = 1.0 / (ramp - jerk)
        w = np.pi / jerk if jerk > 0.0 else 1.0
        rise = [(jerk, 0.5 * peak, -0.5 * peak, w), (ramp - 2.0 * jerk, peak, 0.0, 1.0),
                (jerk, 0.5 * peak, 0.5 * peak, w)]
        fall = [(d, -c0, -c1, om) for d, c0, c1, om in rise]
        phases = rise + [(self.cruise_duration, 0.0, 0.0, 1.0)] + fall
        return [phase for phase in phases if phase[0] > 0.0]

    def _evaluate(self, t):
        u, ud, udd = _integrate_phases(*zip(*self._phases()), t)
        velocity = self.velocity
        return self.start + u[:, None] * velocity, ud[:, None] * velocity, udd[:, None] * velocity

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(start=_floats(self.start), velocity=_floats(self.velocity),
                    cruise_duration=self.cruise_duration, ramp_duration=self.ramp_duration,
                    jerk_duration=self.jerk_duration)
        return data


# --------------------------------------------------------------------------- composition

def _junction_jumps(before: Trajectory, after: Trajectory) -> np.ndarray:
    """|state(after, 0) - state(before, end)|, shape (3, n): rows q, qd, qdd."""
    return np.abs(after.boundary_states()[0] - before.boundary_states()[1])


_STATE_NAMES = ("q", "qd", "qdd")
_STATE_UNITS = ("rad", "rad/s", "rad/s^2")


def _worst_jump(jumps: np.ndarray, joint_names) -> str:
    row, joint = np.unravel_index(np.argmax(jumps), jumps.shape)
    return (f"joint {joint_names[joint]} {_STATE_NAMES[row]} jumps by "
            f"{jumps[row, joint]:.3g} {_STATE_UNITS[row]}")


def _tolerance(value) -> float:
    return _number(value, "tolerance", non_negative=True)


@dataclass(frozen=True, eq=False)
class Sequence(Trajectory):
    """Segments played one after the other.

    Parameters
    ----------
    segments : sequence of Trajectory
        All with the same ``joint_names`` in the same order.
    labels : sequence of str, optional
        One label per segment (free text, e.g. the protocol stage).
    tolerance : float
        Largest jump of q [rad], qd [rad/s], qdd [rad/s^2] allowed at a junction.
    """

    kind: ClassVar[str] = "sequence"
    segments: tuple
    labels: tuple | None = None
    tolerance: float = DEFAULT_CONTINUITY_TOLERANCE

    def __post_init__(self) -> None:
        segments = tuple(self.segments) if isinstance(self.segments, (list, tuple)) else ()
        if not segments or not all(isinstance(s, Trajectory) for s in segments):
            raise TrajectoryError("segments must be a non-empty list of trajectories, "
                                  f"got {self.segments!r}")
        _set(self, "segments", segments)
        names = segments[0].joint_names
        for index, segment in enumerate(segments):
            if segment.joint_names != names:
                raise TrajectoryError(
                    f"segments[{index}] has joints {list(segment.joint_names)}, expected "
                    f"{list(names)} as segments[0]")
        if self.labels is not None:
            labels = tuple(self.labels)
            if len(labels) != len(segments) or not all(isinstance(x, str) for x in labels):
                raise TrajectoryError(f"labels must be {len(segments)} strings (one per segment), "
                                      f"got {self.labels!r}")
            _set(self, "labels", labels)
        _set(self, "tolerance", _tolerance(self.tolerance))
        for index in range(len(segments) - 1):
            jumps = _junction_jumps(segments[index], segments[index + 1])
            if np.any(jumps > self.tolerance):
                raise TrajectoryError(
                    f"segments[{index}] -> segments[{index + 1}] is discontinuous: "
                    f"{_worst_jump(jumps, names)} (tolerance {self.tolerance:g})")
        _set(self, "_starts", np.concatenate([[0.0], np.cumsum([s.duration for s in segments])]))

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.segments[0].joint_names

    @property
    def duration(self) -> float:
        return float(self._starts[-1])

    @property
    def starts(self) -> np.ndarray:
        """Start time of each segment and the end of the last, shape (K + 1,) [s]."""
        return self._starts.copy()

    def segment_index(self, t) -> np.ndarray:
        """Index of the segment playing at each time ``t`` (M,) [s] (a junction belongs to the
        later segment, the end to the last)."""
        t = np.asarray(t, dtype=float)
        return np.clip(np.searchsorted(self._starts, t, side="right") - 1, 0,
                       len(self.segments) - 1)

    def _evaluate(self, t):
        index = self.segment_index(t)
        results = tuple(np.empty((t.size, self.n_joints)) for _ in range(3))
        order = np.argsort(index, kind="stable")
        segment_ids, first = np.unique(index[order], return_index=True)
        for segment_id, rows in zip(segment_ids, np.split(order, first[1:])):
            segment = self.segments[segment_id]
            local = np.clip(t[rows] - self._starts[segment_id], 0.0, segment.duration)
            for result, values in zip(results, segment.evaluate(local)):
                result[rows] = values
        return results

    def to_dict(self) -> dict:
        data = self._common_dict()
        data["tolerance"] = self.tolerance
        if self.labels is not None:
            data["labels"] = list(self.labels)
        data["segments"] = [_without_joints(segment.to_dict()) for segment in self.segments]
        return data


def _without_joints(data: dict) -> dict:
    data = dict(data)
    data.pop("joints", None)
    return data


@dataclass(frozen=True, eq=False)
class Parallel(Trajectory):
    """Groups of joints moving side by side; each shorter group then holds its final pose.

    Parameters
    ----------
    parts : sequence of Trajectory
        Disjoint joint groups; a part shorter than the longest must end at rest (within
        ``tolerance``) so that the idle hold that pads it is continuous.
    joint_names : sequence of str, optional
        Column order of the result; default the parts' joints in order.
    tolerance : float
        Largest ``|qd|`` [rad/s] and ``|qdd|`` [rad/s^2] at the end of a padded part.
    """

    kind: ClassVar[str] = "parallel"
    parts: tuple
    joint_names: tuple | None = None
    tolerance: float = DEFAULT_CONTINUITY_TOLERANCE

    def __post_init__(self) -> None:
        parts = tuple(self.parts) if isinstance(self.parts, (list, tuple)) else ()
        if not parts or not all(isinstance(p, Trajectory) for p in parts):
            raise TrajectoryError(f"parts must be a non-empty list of trajectories, got "
                                  f"{self.parts!r}")
        _set(self, "parts", parts)
        part_joints = unique_names([name for part in parts for name in part.joint_names], "parts",
                                   error=TrajectoryError)
        names = part_joints if self.joint_names is None else self.joint_names
        _set(self, "joint_names", _joint_names(names))
        columns = match_joints(part_joints, self.joint_names, "joint_names", "the parts", extra=False,
                               error=TrajectoryError)
        ends = np.cumsum([part.n_joints for part in parts])
        _set(self, "_columns", [list(block) for block in np.split(np.array(columns, dtype=int), ends[:-1])])
        _set(self, "tolerance", _tolerance(self.tolerance))
        duration = max(part.duration for part in parts)
        for index, part in enumerate(parts):
            if part.duration < duration:
                end_motion = np.abs(part.boundary_states()[1])
                end_motion[0] = 0.0
                if np.any(end_motion > self.tolerance):
                    raise TrajectoryError(
                        f"parts[{index}] ends at {part.duration:g} s before {duration:g} s but not "
                        f"at rest: {_worst_jump(end_motion, part.joint_names)} "
                        f"(tolerance {self.tolerance:g})")
        _set(self, "_duration", float(duration))

    @property
    def duration(self) -> float:
        return self._duration

    def _evaluate(self, t):
        results = tuple(np.empty((t.size, self.n_joints)) for _ in range(3))
        for part, columns in zip(self.parts, self._columns):
            q, qd, qdd = part.evaluate(np.minimum(t, part.duration))
            idle = t > part.duration
            qd[idle] = 0.0
            qdd[idle] = 0.0
            for result, values in zip(results, (q, qd, qdd)):
                result[:, columns] = values
        return results

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(tolerance=self.tolerance, parts=[part.to_dict() for part in self.parts])
        return data


@dataclass(frozen=True, eq=False)
class Repeat(Trajectory):
    """``trajectory`` played ``count`` times; its end must join its start within ``tolerance``."""

    kind: ClassVar[str] = "repeat"
    trajectory: Trajectory
    count: int
    tolerance: float = DEFAULT_CONTINUITY_TOLERANCE

    def __post_init__(self) -> None:
        if not isinstance(self.trajectory, Trajectory):
            raise TrajectoryError(f"trajectory must be a Trajectory, got {self.trajectory!r}")
        if isinstance(self.count, bool) or not isinstance(self.count, (int, np.integer)) \
                or self.count < 1:
            raise TrajectoryError(f"count must be an integer >= 1, got {self.count!r}")
        _set(self, "count", int(self.count))
        _set(self, "tolerance", _tolerance(self.tolerance))
        if self.count > 1:
            jumps = _junction_jumps(self.trajectory, self.trajectory)
            if np.any(jumps > self.tolerance):
                raise TrajectoryError(f"repeat: the end does not join the start: "
                                      f"{_worst_jump(jumps, self.joint_names)} "
                                      f"(tolerance {self.tolerance:g})")

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.trajectory.joint_names

    @property
    def duration(self) -> float:
        return self.count * self.trajectory.duration

    def _evaluate(self, t):
        period = self.trajectory.duration
        repetition = np.minimum(np.floor(t / period), self.count - 1)
        return self.trajectory.evaluate(np.clip(t - repetition * period, 0.0, period))

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(count=self.count, tolerance=self.tolerance,
                    trajectory=_without_joints(self.trajectory.to_dict()))
        return data


# --------------------------------------------------------------------------- velocity ladder

@dataclass(frozen=True)
class LadderStroke:
    """One stroke (or idle hold) of a :class:`VelocityLadder`.

    ``level`` indexes ``speeds``; ``direction`` is +1 or -1, 0 for the idle hold that completes
    a level when whole strokes do not fill it; ``start``/``end`` and the constant-velocity
    ``plateau`` (None for a hold) are times [s] from the start of the ladder.
    """

    level: int
    speed: float
    direction: int
    start: float
    end: float
    plateau: tuple[float, float] | None


def ladder_ramp(speed: float, acceleration: float, jerk_duration: float) -> tuple[float, float]:
    """Ramp and jerk durations [s] reaching ``speed`` [rad/s] with peak ``acceleration``.

    The jerk phase is shortened to ``speed / acceleration`` when the ramp would otherwise be
    shorter than two jerk phases: ``Tj = min(jerk_duration, v / A)``, ``Tr = v / A + Tj``.
    """
    jerk = min(jerk_duration, speed / acceleration)
    return speed / acceleration + jerk, jerk


def max_ladder_speed(stroke: float, acceleration: float, jerk_duration: float,
                     min_plateau: float) -> float:
    """Highest speed [rad/s] whose stroke fits ``stroke`` [rad] with a ``min_plateau`` [s] cruise.

    A stroke reaching speed ``v`` with a plateau ``Tc`` covers ``v (Tr + Tc)`` with
    ``Tr = v / A + Tj`` (see :func:`ladder_ramp`); solves ``v (v / A + Tj + Tc) = stroke``.
    """
    def covered(speed):
        ramp, _ = ladder_ramp(speed, acceleration, jerk_duration)
        return speed * (ramp + min_plateau)

    high = 1.0
    while covered(high) < stroke:
        high *= 2.0
    low = 0.0
    for _ in range(80):
        middle = 0.5 * (low + high)
        low, high = (middle, high) if covered(middle) <= stroke else (low, middle)
    return low


@dataclass(frozen=True, eq=False)
class VelocityLadder(Trajectory):
    """One joint back and forth at each speed in turn, equal time per level; others hold.

    Each level of ``level_duration`` D is filled with ``2 k`` rest-to-rest
    :class:`ConstantVelocityMove` strokes alternating in direction (first in the sign of
    ``stroke``), so every level starts and ends at ``pose``. A stroke at speed ``v`` lasts
    between ``2 Tr + min_plateau`` and ``|stroke| / v + Tr`` (the full stroke; ``Tr`` from
    :func:`ladder_ramp`). ``k`` is the smallest count whose strokes of ``D / (2 k)`` fit the
    stroke; when those would be shorter than the minimum, ``k - 1`` full strokes are run and an
    idle hold at ``pose`` completes the level.

    Parameters
    ----------
    joint_names : sequence of str, length n
    pose : array_like, shape (n,)
        Pose [rad] of all joints at the start (the moving joint at one end of its stroke).
    joint : str
        The moving joint.
    speeds : sequence of float
        Cruise speeds [rad/s] (> 0), one level each.
    level_duration : float
        D [s] per level.
    stroke : float
        Longest allowed stroke [rad]; its sign gives the first direction.
    acceleration : float
        Peak acceleration of the ramps [rad/s^2].
    jerk_duration : float
        Raised-cosine edge of the ramps [s].
    min_plateau : float
        Shortest acceptable constant-velocity part of a stroke [s].
    """

    kind: ClassVar[str] = "velocity_ladder"
    joint_names: tuple[str, ...]
    pose: np.ndarray
    joint: str
    speeds: tuple
    level_duration: float
    stroke: float
    acceleration: float
    jerk_duration: float = 0.1
    min_plateau: float = 0.3

    def __post_init__(self) -> None:
        _check_common(self)
        _set(self, "pose", _vector(self, "pose", self.pose, "rad"))
        _set(self, "_column", _joint_column(self))
        speeds = _array(self.speeds, (None,), "speeds", ("levels",), "rad/s")
        if speeds.size == 0 or np.any(speeds <= 0.0):
            raise TrajectoryError(f"speeds must be a non-empty list of speeds > 0 rad/s, got "
                                  f"{_floats(speeds)}")
        _set(self, "speeds", tuple(_floats(speeds)))
        _set(self, "level_duration", _number(self.level_duration, "level_duration", positive=True))
        _set(self, "stroke", _number(self.stroke, "stroke"))
        if self.stroke == 0.0:
            raise TrajectoryError("stroke must be non-zero [rad]")
        _set(self, "acceleration", _number(self.acceleration, "acceleration", positive=True))
        _set(self, "jerk_duration", _number(self.jerk_duration, "jerk_duration",
                                            non_negative=True))
        _set(self, "min_plateau", _number(self.min_plateau, "min_plateau", non_negative=True))
        self._build()

    def _build(self) -> None:
        column = self._column
        length, sign = abs(self.stroke), (1 if self.stroke > 0 else -1)
        segments, strokes = [], []
        start_time = 0.0
        for level, speed in enumerate(self.speeds):
            ramp, jerk = ladder_ramp(speed, self.acceleration, self.jerk_duration)
            half = self.level_duration / 2.0
            longest = length / speed + ramp
            shortest = 2.0 * ramp + self.min_plateau
            slack = 1.0 + 1e-9
            if shortest > longest * slack or shortest > half * slack:
                fastest = max_ladder_speed(length, self.acceleration, self.jerk_duration,
                                           self.min_plateau)
                raise TrajectoryError(
                    f"velocity ladder of joint {self.joint}: level {level} at {speed:g} rad/s does "
                    f"not fit: a stroke with a {self.min_plateau:g} s plateau takes "
                    f"{shortest:.3g} s; needs level_duration >= {2.0 * shortest:.3g} s and speed "
                    f"<= {fastest:.3g} rad/s for a {length:.3g} rad stroke")
            if not half / longest < MAX_LADDER_STROKES / 2:
                raise TrajectoryError(
                    f"velocity ladder of joint {self.joint}: level {level} of {self.level_duration:g} s at "
                    f"{speed:g} rad/s would take more than {MAX_LADDER_STROKES} strokes of at most {longest:.3g} s: "
                    "a shorter level_duration")
            pairs = math.ceil(half / longest - 1e-12)
            if half / pairs * slack < shortest:
                pairs -= 1
            stroke_time = min(half / pairs, longest)
            idle = self.level_duration - 2 * pairs * stroke_time
            cruise = stroke_time - 2.0 * ramp
            for index in range(2 * pairs):
                direction = sign if index % 2 == 0 else -sign
                velocity = np.zeros(self.n_joints)
                velocity[column] = direction * speed
                begin = self.pose if index % 2 == 0 else segments[-1].boundary_states()[1][0]
                move = ConstantVelocityMove(self.joint_names, begin, velocity, cruise, ramp, jerk)
                segments.append(move)
                strokes.append(LadderStroke(level, speed, direction, start_time,
                                            start_time + move.duration,
                                            (start_time + ramp, start_time + ramp + cruise)))
                start_time += move.duration
            if idle > 1e-9 * self.level_duration:
                segments.append(Hold(self.joint_names, self.pose, idle))
                strokes.append(LadderStroke(level, speed, 0, start_time, start_time + idle, None))
                start_time += idle
        _set(self, "_sequence", Sequence(segments))
        _set(self, "_strokes", tuple(strokes))

    @property
    def strokes(self) -> tuple[LadderStroke, ...]:
        return self._strokes

    @property
    def duration(self) -> float:
        return self._sequence.duration

    def _evaluate(self, t):
        return self._sequence.evaluate(t)

    def to_dict(self) -> dict:
        data = self._common_dict()
        data.update(pose=_floats(self.pose), joint=self.joint, speeds=list(self.speeds),
                    level_duration=self.level_duration, stroke=self.stroke,
                    acceleration=self.acceleration, jerk_duration=self.jerk_duration,
                    min_plateau=self.min_plateau)
        return data


# --------------------------------------------------------------------------- files

TRAJECTORY_TYPES = {
    cls.kind: cls for cls in (FourierTrajectory, SineSumTrajectory, RampedSine, CylinderSine, Hold, CycloidalMove,
                              PointToPoint, ConstantVelocityMove, VelocityLadder, Sequence,
                              Parallel, Repeat)
}
_NESTED_KEYS = {"sequence": "segments", "parallel": "parts", "repeat": "trajectory"}


def trajectory_from_dict(data: dict, source: str = "<dict>", joint_names=None) -> Trajectory:
    """Build a trajectory from its file form (see ``docs/excitation.md``).

    Parameters
    ----------
    data : dict
        ``{type: fourier | sine_sum | ramped_sine | cylinder_sine | hold | cycloidal | point_to_point |
        constant_velocity | velocity_ladder | sequence | parallel | repeat, joints: [...], ...}``; the fields are
        those of the matching class, with ``joints`` for ``joint_names``. Segments of a
        sequence and the body of a repeat may omit ``joints`` (inherited).
    source : str
        Where the data came from, for messages.
    joint_names : sequence of str, optional
        Joints inherited from an enclosing trajectory.

    Raises
    ------
    TrajectoryError
        Unknown type or key, missing key, wrong shape; the message names the path of the field.
    """
    if not isinstance(data, dict):
        raise TrajectoryError(f"{source}: a trajectory must be a mapping, got "
                              f"{type(data).__name__}")
    kind = data.get("type")
    validators.text(kind, f"{source}: trajectory type", TrajectoryError, sorted(TRAJECTORY_TYPES))
    cls = TRAJECTORY_TYPES[kind]
    fields = {field.name: field for field in dataclasses.fields(cls)}
    allowed = {"type", "joints"} | (set(fields) - {"joint_names"})
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise TrajectoryError(f"{source}: unknown key(s) {unknown} in a {kind} trajectory; "
                              f"expected some of {sorted(allowed)}")
    joints = data.get("joints", joint_names)
    kwargs = {key: value for key, value in data.items() if key not in ("type", "joints")}
    nested = _NESTED_KEYS.get(kind)
    if nested is not None:
        kwargs[nested] = _nested(kind, data, nested, source, joints)
    if "joint_names" in fields:
        if joints is None and kind != "parallel":
            raise TrajectoryError(f"{source}: missing key 'joints' in a {kind} trajectory")
        if joints is not None:
            kwargs["joint_names"] = joints
    required = [name for name, field in fields.items()
                if field.default is dataclasses.MISSING and name not in kwargs]
    if required:
        raise TrajectoryError(f"{source}: missing key(s) {required} in a {kind} trajectory")
    try:
        trajectory = cls(**kwargs)
    except TrajectoryError as error:
        raise TrajectoryError(f"{source}: {kind}: {error}") from None
    if joints is not None and tuple(trajectory.joint_names) != tuple(joints):
        raise TrajectoryError(f"{source}: {kind}: joints {list(joints)} differ from the joints "
                              f"of its content {list(trajectory.joint_names)}")
    return trajectory


def _nested(kind, data, key, source, joints):
    if key not in data:
        raise TrajectoryError(f"{source}: missing key {key!r} in a {kind} trajectory")
    if kind == "repeat":
        return trajectory_from_dict(data[key], f"{source}.{key}", joints)
    items = data[key]
    if not isinstance(items, list) or not items:
        raise TrajectoryError(f"{source}: {key} must be a non-empty list, got {items!r}")
    inherited = joints if kind == "sequence" else None
    return [trajectory_from_dict(item, f"{source}.{key}[{index}]", inherited)
            for index, item in enumerate(items)]


def load_trajectory(path) -> Trajectory:
    """Read a trajectory YAML file (see :func:`trajectory_from_dict`)."""
    return trajectory_from_dict(read_yaml(path, TrajectoryError, "trajectory file"), str(path))


def dump_trajectory(trajectory: Trajectory) -> str:
    """YAML text of ``trajectory.to_dict()`` (flow-style number lists, deterministic)."""
    header = "# robot_dynid trajectory: angles [rad], velocities [rad/s], times [s]\n"
    return header + yaml.safe_dump(trajectory.to_dict(), sort_keys=False,
                                   default_flow_style=None, width=100)


def save_trajectory(trajectory: Trajectory, path) -> None:
    """Write ``trajectory`` to a YAML file readable by :func:`load_trajectory`."""
    pathlib.Path(path).write_text(dump_trajectory(trajectory), encoding="utf-8")
