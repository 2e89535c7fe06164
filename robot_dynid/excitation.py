"""Checking excitation trajectories against a robot's limits, and optimising them.

:func:`check_trajectory` samples a trajectory on a dense grid and reports, per joint, the
position range, peak speed and acceleration (absolute and as fractions of the limits) and the
state at start and end; it lists every violated position / velocity / acceleration limit and,
for rest-to-rest trajectories, every boundary velocity or acceleration larger than a tolerance.

:func:`optimize_excitation` designs a :class:`~robot_dynid.trajectories.FourierTrajectory`
minimising a criterion of the base regressor subject to the limits (see its docstring).
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import TrajectoryError
from robot_dynid.trajectories import FourierTrajectory, Trajectory, fourier_basis

logger = logging.getLogger(__name__)

LIMIT_SLACK = 1e-9
"""Relative slack on the limits, so values computed to equal a limit are not violations."""

VIOLATION_KINDS = ("position_min", "position_max", "velocity", "acceleration",
                   "start_velocity", "start_acceleration", "end_velocity", "end_acceleration")
DEFAULT_CHECK_POINTS = 2001


@dataclass(frozen=True)
class JointCheck:
    """Extremes and boundary states of one joint on the check grid.

    Attributes
    ----------
    name : str
    q_min, q_max : float
        Lowest and highest position [rad].
    qd_peak, qdd_peak : float
        Largest |qd| [rad/s] and |qdd| [rad/s^2].
    position_fraction : float
        Largest excursion from the middle of the range over the half range (1: touches a limit).
    range_fraction : float
        ``(q_max - q_min) / (upper - lower)``.
    qd_fraction, qdd_fraction : float
        ``qd_peak / velocity limit``, ``qdd_peak / acceleration limit``.
    start, end : tuple of float
        ``(q, qd, qdd)`` at ``t = 0`` and ``t = duration``.
    """

    name: str
    q_min: float
    q_max: float
    qd_peak: float
    qdd_peak: float
    position_fraction: float
    range_fraction: float
    qd_fraction: float
    qdd_fraction: float
    start: tuple[float, float, float]
    end: tuple[float, float, float]


@dataclass(frozen=True)
class Violation:
    """One violated limit or boundary condition.

    ``kind`` is one of :data:`VIOLATION_KINDS`; ``value`` the offending value and ``limit`` the
    bound it breaks (for the boundary kinds, the tolerance), in rad, rad/s or rad/s^2;
    ``time`` [s] where the worst value occurs.
    """

    joint: str
    kind: str
    value: float
    limit: float
    time: float

    def describe(self) -> str:
        return (f"joint {self.joint}: {self.kind.replace('_', ' ')} {self.value:.6g} beyond "
                f"{self.limit:.6g} at t = {self.time:.4g} s")


@dataclass(frozen=True)
class TrajectoryCheck:
    """Result of :func:`check_trajectory`.

    Attributes
    ----------
    joints : tuple of JointCheck
        In the trajectory's joint order.
    violations : tuple of Violation
    duration : float
        [s].
    n_points : int
        Size of the check grid.
    tolerance : float
        Boundary tolerance used for qd [rad/s] and qdd [rad/s^2].
    require_rest : bool
        Whether start and end were required to be at rest.
    """

    joints: tuple[JointCheck, ...]
    violations: tuple[Violation, ...]
    duration: float
    n_points: int
    tolerance: float
    require_rest: bool

    @property
    def ok(self) -> bool:
        return not self.violations

    def joint(self, name: str) -> JointCheck:
        for check in self.joints:
            if check.name == name:
                return check
        raise TrajectoryError(f"no joint {name!r} in this check; joints are "
                              f"{[c.name for c in self.joints]}")

    def to_dict(self) -> dict:
        """Plain dict: ``{ok, duration, n_points, tolerance, require_rest, joints, violations}``."""
        joints = [{key: (list(value) if isinstance(value, tuple) else value)
                   for key, value in dataclasses.asdict(check).items()} for check in self.joints]
        return {"ok": self.ok, "duration": self.duration, "n_points": self.n_points,
                "tolerance": self.tolerance, "require_rest": self.require_rest, "joints": joints,
                "violations": [dataclasses.asdict(v) for v in self.violations]}

    def format_table(self) -> str:
        """Human-readable table (degrees for readability) and the list of violations."""
        header = (f"{'joint':<10} {'q min':>9} {'q max':>9} {'pos %':>6} {'qd peak':>9} "
                  f"{'qd %':>6} {'qdd peak':>9} {'qdd %':>6} {'qd start':>9} {'qdd start':>9} "
                  f"{'qd end':>9} {'qdd end':>9}")
        lines = [f"duration {self.duration:g} s, {self.n_points} points; angles in deg, "
                 "speeds in deg/s, accelerations in deg/s^2", header]
        for c in self.joints:
            deg = np.degrees
            lines.append(
                f"{c.name:<10} {deg(c.q_min):9.2f} {deg(c.q_max):9.2f} "
                f"{100 * c.position_fraction:6.1f} {deg(c.qd_peak):9.2f} {100 * c.qd_fraction:6.1f} "
                f"{deg(c.qdd_peak):9.2f} {100 * c.qdd_fraction:6.1f} {deg(c.start[1]):9.4f} "
                f"{deg(c.start[2]):9.4f} {deg(c.end[1]):9.4f} {deg(c.end[2]):9.4f}")
        if self.ok:
            lines.append("OK: within all limits" + (", rest to rest" if self.require_rest else ""))
        else:
            lines.append(f"{len(self.violations)} violation(s) (SI units):")
            lines.extend("  " + violation.describe() for violation in self.violations)
        return "\n".join(lines)


def robot_limit_arrays(robot, joint_names=None):
    """Limits of ``joint_names`` (default all joints) as arrays.

    Returns
    -------
    lower, upper : ndarray, shape (n,)
        Position limits [rad].
    velocity : ndarray, shape (n,)
        [rad/s].
    acceleration : ndarray, shape (n,)
        [rad/s^2].
    """
    names = robot.joint_names if joint_names is None else joint_names
    unknown = [name for name in names if name not in robot.joint_names]
    if unknown:
        raise TrajectoryError(f"joint(s) {unknown} are not joints of robot {robot.name!r} "
                              f"{list(robot.joint_names)}")
    limits = [robot.limits[robot.joint_names.index(name)] for name in names]
    lower = np.array([limit.position[0] for limit in limits], dtype=float)
    upper = np.array([limit.position[1] for limit in limits], dtype=float)
    velocity = np.array([limit.velocity for limit in limits], dtype=float)
    acceleration = np.array([limit.acceleration for limit in limits], dtype=float)
    return lower, upper, velocity, acceleration


def check_trajectory(robot, trajectory: Trajectory, n_points: int | None = None,
                     dt: float | None = None, tolerance: float = 1e-3,
                     require_rest: bool = True) -> TrajectoryCheck:
    """Check a trajectory against the robot's limits on a grid.

    Parameters
    ----------
    robot : RobotDescription
        Its ``joint_names`` must include every joint of the trajectory.
    trajectory : Trajectory
    n_points : int, optional
        Grid size over ``[0, duration]`` (ends included); default
        :data:`DEFAULT_CHECK_POINTS` unless ``dt`` is given.
    dt : float, optional
        Grid spacing [s] instead of ``n_points``.
    tolerance : float
        Largest |qd| [rad/s] and |qdd| [rad/s^2] accepted at start and end (printed
        coefficients are rounded, so exact zeros cannot be expected).
    require_rest : bool
        Check the rest-to-rest boundary conditions ``qd = qdd = 0`` at start and end.

    Returns
    -------
    TrajectoryCheck
    """
    if not isinstance(trajectory, Trajectory):
        raise TrajectoryError(f"trajectory must be a Trajectory, got {type(trajectory).__name__}")
    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise TrajectoryError(f"tolerance must be a finite number >= 0, got {tolerance!r}")
    if n_points is None and dt is None:
        n_points = DEFAULT_CHECK_POINTS
    lower, upper, velocity, acceleration = robot_limit_arrays(robot, trajectory.joint_names)
    t, q, qd, qdd = trajectory.sample(n_points, dt)
    start, end = trajectory.boundary_states()
    middle, half = 0.5 * (upper + lower), 0.5 * (upper - lower)
    q_min, q_max = q.min(axis=0), q.max(axis=0)
    qd_peak, qdd_peak = np.abs(qd).max(axis=0), np.abs(qdd).max(axis=0)
    joints, violations = [], []
    for j, name in enumerate(trajectory.joint_names):
        joints.append(JointCheck(
            name=name, q_min=float(q_min[j]), q_max=float(q_max[j]),
            qd_peak=float(qd_peak[j]), qdd_peak=float(qdd_peak[j]),
            position_fraction=float(max(q_max[j] - middle[j], middle[j] - q_min[j]) / half[j]),
            range_fraction=float((q_max[j] - q_min[j]) / (upper[j] - lower[j])),
            qd_fraction=float(qd_peak[j] / velocity[j]),
            qdd_fraction=float(qdd_peak[j] / acceleration[j]),
            start=tuple(float(x) for x in start[:, j]), end=tuple(float(x) for x in end[:, j])))

        def slack(limit):
            return LIMIT_SLACK * max(1.0, abs(limit))

        if q_min[j] < lower[j] - slack(lower[j]):
            violations.append(Violation(name, "position_min", float(q_min[j]), float(lower[j]),
                                        float(t[np.argmin(q[:, j])])))
        if q_max[j] > upper[j] + slack(upper[j]):
            violations.append(Violation(name, "position_max", float(q_max[j]), float(upper[j]),
                                        float(t[np.argmax(q[:, j])])))
        if qd_peak[j] > velocity[j] + slack(velocity[j]):
            violations.append(Violation(name, "velocity", float(qd_peak[j]), float(velocity[j]),
                                        float(t[np.argmax(np.abs(qd[:, j]))])))
        if qdd_peak[j] > acceleration[j] + slack(acceleration[j]):
            violations.append(Violation(name, "acceleration", float(qdd_peak[j]),
                                        float(acceleration[j]),
                                        float(t[np.argmax(np.abs(qdd[:, j]))])))
        if require_rest:
            for where, state, time in (("start", start, 0.0), ("end", end, trajectory.duration)):
                for row, quantity in ((1, "velocity"), (2, "acceleration")):
                    if abs(state[row, j]) > tolerance:
                        violations.append(Violation(name, f"{where}_{quantity}",
                                                    float(state[row, j]), float(tolerance),
                                                    float(time)))
    check = TrajectoryCheck(tuple(joints), tuple(violations), float(trajectory.duration),
                            int(t.size), float(tolerance), bool(require_rest))
    for violation in violations:
        logger.info("trajectory check: %s", violation.describe())
    return check


# --------------------------------------------------------------------------- Fourier designs

def _rest_to_rest_projection(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project coefficients (n, L) onto ``sum_l a_l = 0`` (qd(0) = 0) and ``sum_l l b_l = 0``
    (qdd(0) = 0), the rest-to-rest conditions of a Fourier trajectory (also at every period)."""
    orders = np.arange(1, a.shape[1] + 1)
    a = a - a.mean(axis=1, keepdims=True)
    b = b - np.outer(b @ orders, orders) / (orders @ orders)
    return a, b


def scaled_fourier(robot, period: float, a, b, amplitude_fraction: float = 0.5,
                   n_grid: int = 400) -> FourierTrajectory:
    """Fourier trajectory of the given coefficient shapes scaled to a fraction of the limits.

    Joint j's coefficients are multiplied by the largest factor that keeps its excursion within
    ``amplitude_fraction`` of the half range around the middle of its range and its peak speed
    and acceleration within ``amplitude_fraction`` of its limits (on a grid of ``n_grid``
    points per period); ``q0`` centres the excursion in the range.

    Parameters
    ----------
    robot : RobotDescription
    period : float
        [s].
    a, b : array_like, shape (n, L)
        Coefficient shapes (any scale), rows in ``robot.joint_names`` order.
    amplitude_fraction : float
        In (0, 1].
    n_grid : int
        Grid points per period used for the extremes.
    """
    if not 0.0 < amplitude_fraction <= 1.0:
        raise TrajectoryError(f"amplitude_fraction must be in (0, 1], got {amplitude_fraction!r}")
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    lower, upper, velocity, acceleration = robot_limit_arrays(robot)
    t = np.linspace(0.0, period, n_grid, endpoint=False)
    q_a, q_b, qd_a, qd_b, qdd_a, qdd_b = fourier_basis(t, 2.0 * np.pi / period, a.shape[1])
    shape_q, shape_qd = q_a @ a.T + q_b @ b.T, qd_a @ a.T + qd_b @ b.T
    shape_qdd = qdd_a @ a.T + qdd_b @ b.T
    half_width = 0.5 * (shape_q.max(axis=0) - shape_q.min(axis=0))
    tiny = np.finfo(float).tiny
    factor = amplitude_fraction * np.min([
        0.5 * (upper - lower) / np.maximum(half_width, tiny),
        velocity / np.maximum(np.abs(shape_qd).max(axis=0), tiny),
        acceleration / np.maximum(np.abs(shape_qdd).max(axis=0), tiny)], axis=0)
    centre = 0.5 * (shape_q.max(axis=0) + shape_q.min(axis=0))
    q0 = 0.5 * (upper + lower) - factor * centre
    return FourierTrajectory(robot.joint_names, float(period), q0, a * factor[:, None],
                             b * factor[:, None])


def random_excitation(robot, harmonics: int = 5, period: float = 10.0,
                      amplitude_fraction: float = 0.5, seed=0) -> FourierTrajectory:
    """Random rest-to-rest Fourier trajectory within a fraction of the limits.

    Coefficients are drawn from a standard normal distribution (``numpy.random.default_rng
    (seed)``), projected onto the rest-to-rest conditions ``sum_l a_l = 0`` and
    ``sum_l l b_l = 0`` (needs ``harmonics >= 2``) and scaled by :func:`scaled_fourier`.

    Parameters
    ----------
    robot : RobotDescription
    harmonics : int
        ``L`` (>= 2).
    period : float
        [s].
    amplitude_fraction : float
        In (0, 1].
    seed : int or numpy.random.Generator
    """
    if isinstance(harmonics, bool) or not isinstance(harmonics, (int, np.integer)) \
            or harmonics < 2:
        raise TrajectoryError(f"harmonics must be an integer >= 2 (rest to rest needs two), "
                              f"got {harmonics!r}")
    if not (isinstance(period, (int, float)) and math.isfinite(period) and period > 0):
        raise TrajectoryError(f"period must be > 0 s, got {period!r}")
    rng = np.random.default_rng(seed)
    shape = (robot.n_joints, int(harmonics))
    a, b = _rest_to_rest_projection(rng.standard_normal(shape), rng.standard_normal(shape))
    return scaled_fourier(robot, period, a, b, amplitude_fraction)
