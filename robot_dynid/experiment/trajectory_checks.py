"""Trajectories checked against a robot's limits.

:func:`check_trajectory` samples a trajectory on a dense grid and reports, per joint, the
position range, peak speed and acceleration (absolute and as fractions of the limits) and the
state at start and end; it lists every violated position / velocity / acceleration limit and,
for rest-to-rest trajectories, every boundary velocity or acceleration larger than a tolerance.
The ``excitation check`` command, the protocol, the experiment schedule and the excitation
design (:mod:`robot_dynid.experiment.excitation`) use it.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import TrajectoryError
from robot_dynid.experiment.trajectories import Trajectory

__all__ = ["LIMIT_SLACK", "VIOLATION_KINDS", "DEFAULT_CHECK_POINTS", "JointCheck", "Violation", "TrajectoryCheck",
           "check_trajectory"]

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
        Largest ``|qd|`` [rad/s] and ``|qdd|`` [rad/s^2].
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
        Largest ``|qd|`` [rad/s] and ``|qdd|`` [rad/s^2] accepted at start and end (printed
        coefficients are rounded, so exact zeros cannot be expected).
    require_rest : bool
        Check the rest-to-rest boundary conditions ``qd = qdd = 0`` at start and end.

    Returns
    -------
    TrajectoryCheck
    """
    if not isinstance(trajectory, Trajectory):
        raise TrajectoryError(f"trajectory must be a Trajectory, got {type(trajectory).__name__}")
    validators.positive(tolerance, "tolerance", TrajectoryError, allow_zero=True)
    if n_points is None and dt is None:
        n_points = DEFAULT_CHECK_POINTS
    lower, upper, velocity, acceleration, _ = robot.limit_arrays(trajectory.joint_names)
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
