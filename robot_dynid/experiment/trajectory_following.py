"""Following joint trajectories the way ros2_control's joint_trajectory_controller does, and a
simulated arm that follows them.

:class:`TrajectoryFollower` turns the content of ``trajectory_msgs/JointTrajectory`` messages
(joint names, ``time_from_start`` of each point, positions, optional velocities and
accelerations) into ``q, qd, qdd`` at any time, with the interpolation of
:mod:`robot_dynid.model.joint_trajectory` (linear, cubic or quintic, as the points carry positions, velocities
and accelerations).

A trajectory received at time ``r`` with start time ``t_s`` (a message's header stamp; the node
passes ``r`` for a zero stamp) replaces the current one from ``r``, as in the controller: from
the state ``(q, qd, qdd)`` at ``r`` the arm moves to the first point, due at
``t_s + time_from_start[0]``, with that point's interpolation; segments that end before ``r``
are passed over. Joints the trajectory does not name keep their position at ``r`` with zero
velocity and acceleration at every point (the controller's partial goals). After the last
point the arm rests there (``qd = qdd = 0``; the controller would keep commanding the last
point's velocity, which an arm holding position does not have).

:class:`SimulatedArm` couples a follower with a :class:`~robot_dynid.experiment.simulation.SimulatedRobot`:
states and noise-free and measured torques on a fixed sample grid, for the ``sim_robot`` node.

All times are seconds on one clock; for :class:`SimulatedArm` that clock starts at the arm's
cold start (``t = 0``), which the friction warm-up uses as elapsed time.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.experiment.simulation import SimulatedRobot
from robot_dynid.joint_names import index_in, unique_names
from robot_dynid.model.joint_trajectory import evaluate, hold_coefficients, segment_coefficients

__all__ = ["TrajectoryFollower", "ArmSamples", "GridArm", "SimulatedArm"]

logger = logging.getLogger(__name__)


def _point_values(field: str, values, times: np.ndarray, joint_names, required: bool):
    """Stack per-point sequences into (M, m), or None when no point gives ``field``."""
    rows = [] if values is None else [np.asarray(row, dtype=float).reshape(-1) for row in values]
    if not required and all(row.size == 0 for row in rows):
        return None
    if len(rows) != times.size:
        raise DataError(f"{field} has {len(rows)} points, time_from_start has {times.size}")
    for index, row in enumerate(rows):
        if row.size != len(joint_names):
            raise DataError(f"point {index}: {field} has {row.size} values, expected {len(joint_names)} "
                            f"(one per joint in joint_names; give {field} for every point or none)")
    return validators.array(rows, field, axes=("points", "joints"), columns=joint_names)


def _check_time(name: str, value) -> float:
    return validators.number(value, f"{name} [s]", DataError)


class TrajectoryFollower:
    """Joint states along commanded trajectories (joint_trajectory_controller semantics).

    Parameters
    ----------
    joint_names : sequence of str, length n
        The arm's joints, in the order of every returned array.
    initial_positions : array_like, shape (n,), optional
        Where the arm rests before the first command [rad]; zeros by default.
    history : float
        How long [s] the plan before a new command's receipt is kept for :meth:`sample`
        (earlier times give the oldest kept state).
    """

    def __init__(self, joint_names, initial_positions=None, history: float = 1.0) -> None:
        self.joint_names = tuple(joint_names)
        if not self.joint_names:
            raise DataError("joint_names is empty")
        unique_names(self.joint_names, "joint_names")
        n = len(self.joint_names)
        positions = np.zeros(n) if initial_positions is None else validators.array(
            initial_positions, "initial_positions", shape=(n,), axes=("joints",), columns=self.joint_names, unit="rad")
        if not history >= 0.0:
            raise DataError(f"history must be >= 0 [s], got {history!r}")
        self.history = float(history)
        self._starts = np.array([-np.inf])
        self._origins = np.zeros(1)
        self._coefficients = hold_coefficients(positions)[None]
        self.end_time = -np.inf

    @property
    def n_joints(self) -> int:
        return len(self.joint_names)

    def command(self, joint_names, time_from_start, positions, velocities=None, accelerations=None,
                start_time: float = 0.0, received_time: float | None = None) -> None:
        """Replace the rest of the current trajectory with a new one.

        Parameters
        ----------
        joint_names : sequence of str, length m <= n
            Joints the trajectory moves, any order; the others hold.
        time_from_start : array_like, shape (M,)
            Point times after ``start_time`` [s], >= 0 and strictly increasing.
        positions : array_like, shape (M, m) or M sequences of m values
            [rad].
        velocities, accelerations : same as positions, optional
            [rad/s], [rad/s^2]; None or M empty sequences when not given. Accelerations need
            velocities.
        start_time : float
            Time the trajectory's ``time_from_start`` counts from [s].
        received_time : float, optional
            Time the trajectory replaces the current one [s]; ``start_time`` by default.

        Raises
        ------
        DataError
            Unknown or repeated joints, no points, times not increasing, sizes that do not
            match ``joint_names``, non-finite values.
        """
        names = tuple(joint_names)
        columns = index_in(self.joint_names, names, "joint_names", "the arm")
        times = validators.array(time_from_start, "time_from_start", axes=("points",), minimum=0.0,
                                 unit="s").reshape(-1)
        if times.size == 0:
            raise DataError("no points given")
        decreasing = np.flatnonzero(np.diff(times) <= 0.0)
        if decreasing.size:
            k = decreasing[0] + 1
            raise DataError(f"time_from_start must increase: point {k} at {times[k]} s is not after "
                            f"point {k - 1} at {times[k - 1]} s")
        positions = _point_values("positions", positions, times, names, required=True)
        velocities = _point_values("velocities", velocities, times, names, required=False)
        accelerations = _point_values("accelerations", accelerations, times, names, required=False)
        if accelerations is not None and velocities is None:
            raise DataError("accelerations are given without velocities; quintic interpolation needs both")
        start_time = _check_time("start_time", start_time)
        received = start_time if received_time is None else _check_time("received_time", received_time)

        state = tuple(value[0] for value in self.sample([received]))

        def full(values, rest):
            if values is None:
                return [None] * times.size
            array = np.tile(rest, (times.size, 1))
            array[:, columns] = values
            return list(array)

        points = list(zip(full(positions, state[0]), full(velocities, np.zeros(self.n_joints)),
                          full(accelerations, np.zeros(self.n_joints))))
        point_times = start_time + times
        starts, origins, coefficients = [], [], []
        if point_times[0] > received:
            starts.append(received)
            origins.append(received)
            coefficients.append(segment_coefficients(point_times[0] - received, state, points[0]))
        for k in range(times.size - 1):
            if point_times[k + 1] > received:
                starts.append(max(point_times[k], received))
                origins.append(point_times[k])
                coefficients.append(segment_coefficients(point_times[k + 1] - point_times[k],
                                                         points[k], points[k + 1]))
        starts.append(max(point_times[-1], received))
        origins.append(starts[-1])
        coefficients.append(hold_coefficients(points[-1][0]))

        next_starts = np.append(self._starts[1:], np.inf)
        kept = (self._starts < received) & (np.minimum(next_starts, received) > received - self.history)
        self._starts = np.concatenate([self._starts[kept], starts])
        self._origins = np.concatenate([self._origins[kept], origins])
        self._coefficients = np.concatenate([self._coefficients[kept], coefficients])
        self.end_time = float(point_times[-1])
        logger.debug("trajectory of %d points for %s from %.6f s, received at %.6f s",
                     times.size, names, start_time, received)

    def sample(self, times):
        """Positions, velocities and accelerations at ``times``.

        Parameters
        ----------
        times : array_like, shape (N,)
            [s], on the clock of :meth:`command`'s times.

        Returns
        -------
        q, qd, qdd : ndarray, shape (N, n)
            [rad], [rad/s], [rad/s^2].
        """
        t = validators.array(times, "times", unit="s").reshape(-1)
        t = np.maximum(t, self._starts[0])
        segment = np.searchsorted(self._starts, t, side="right") - 1
        return evaluate(self._coefficients[segment], t - self._origins[segment])


@dataclass(frozen=True)
class ArmSamples:
    """Samples of a :class:`SimulatedArm`.

    Attributes
    ----------
    time : ndarray, shape (N,)
        [s] since the cold start.
    q, qd, qdd : ndarray, shape (N, n)
        [rad], [rad/s], [rad/s^2].
    torque : ndarray, shape (N, n)
        Noise-free joint torques [N m].
    measured_torque : ndarray, shape (N, n)
        ``torque`` plus the simulator's Gaussian measurement noise [N m].
    n_skipped : int
        Grid samples passed over because the caller fell more than ``max_lag`` behind.
    """

    time: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    torque: np.ndarray
    measured_torque: np.ndarray
    n_skipped: int = 0


class GridArm:
    """What every arm sampled on the grid ``t_k = k / rate`` checks and holds (:class:`SimulatedArm`,
    :class:`~robot_dynid.experiment.mujoco_engine.MujocoArm`): its simulator (of ``simulator_type``), the
    rate [Hz] and ``max_lag`` [s] (finite, > 0), the :class:`TrajectoryFollower`, the noise generator and
    the index of the next grid sample.

    Parameters
    ----------
    simulator : ``simulator_type``
        The torque model.
    rate : float
        Sample rate [Hz] (> 0).
    initial_positions : array_like, shape (n,), optional
        [rad]; zeros by default.
    seed : int or None
        Seed of the measurement noise.
    max_lag : float
        ``advance`` returns at most this much [s] of samples; older due samples are skipped.

    Attributes
    ----------
    follower : TrajectoryFollower
        Send trajectories here (``follower.command``).
    """

    simulator_type: ClassVar[type] = SimulatedRobot

    def __init__(self, simulator, rate: float, initial_positions=None, seed=None, max_lag: float = 1.0) -> None:
        if not isinstance(simulator, self.simulator_type):
            raise DataError(f"simulator must be a {self.simulator_type.__name__}, got {type(simulator).__name__}")
        self.simulator = simulator
        self.rate = validators.positive(rate, "rate", DataError, "Hz")
        self.max_lag = validators.positive(max_lag, "max_lag", DataError, "s")
        self.follower = TrajectoryFollower(simulator.regressor.robot.joint_names, initial_positions)
        self._rng = np.random.default_rng(seed)
        self._next_index = 0

    def _due(self, now: float):
        """``(count, skipped)`` of the grid samples due up to ``now`` [s] from the next one not returned: ``count``
        of them, the first ``skipped`` older than ``max_lag`` (not returned, logged); None when none is due."""
        last = math.floor(_check_time("now", now) * self.rate + 1e-9)
        if last < self._next_index:
            return None
        count = last - self._next_index + 1
        skipped = max(0, count - max(1, round(self.max_lag * self.rate)))
        if skipped:
            logger.warning("fell %d samples (%.3f s) behind; skipped them", skipped, skipped / self.rate)
        return count, skipped


class SimulatedArm(GridArm):
    """A simulated arm following trajectories, sampled on the grid ``t_k = k / rate``; the parameters are
    :class:`GridArm`'s, ``simulator`` a :class:`SimulatedRobot` (parameters, noise, friction warm-up)."""

    def samples(self, times) -> ArmSamples:
        """State and torques at ``times`` (N,) [s since the cold start]."""
        t = np.asarray(times, dtype=float).reshape(-1)
        q, qd, qdd = self.follower.sample(t)
        torque = self.simulator.torques(q, qd, qdd, elapsed=t, noise=False)
        measured = torque + self._rng.normal(0.0, 1.0, torque.shape) * self.simulator.noise_std
        return ArmSamples(t, q, qd, qdd, torque, measured)

    def advance(self, now: float) -> ArmSamples | None:
        """Samples of the grid times not returned before, up to ``now`` [s]; None when none is due.

        At most ``max_lag * rate`` samples are returned; older due ones are skipped and counted
        in ``n_skipped``.
        """
        due = self._due(now)
        if due is None:
            return None
        count, skipped = due
        first, self._next_index = self._next_index + skipped, self._next_index + count
        return dataclasses.replace(self.samples(np.arange(first, self._next_index) / self.rate), n_skipped=skipped)
