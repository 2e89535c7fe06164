"""Closed loop: a MuJoCo arm driven the way ros2_control drives an effort-controlled arm (``sim_robot``'s
``control`` mode), and how well it tracks.

**The controller** (:class:`ControlledArm`) runs at ``control_rate`` (1 kHz by default) on the simulated arm. At
each cycle ``k`` (time ``t_k = k / control_rate``) it reads the measured state ``(q, qd)`` and applies, held over
the cycle (zero-order hold),

``tau_k = kp (q_d - q) + kd (qd_d - qd) + tau_ff,k``

with ``(q_d, qd_d)`` the reference of the :class:`~robot_dynid.experiment.trajectory_following.TrajectoryFollower`
(joint_trajectory_controller semantics) at ``t_k`` and the feed-forward ``tau_ff`` the sum of two inputs:

- the **forward command** path (:class:`FeedforwardHold`): vectors [N m] received at times on the arm's clock, as
  a ros2_control forward command controller (effort interface) receives ``std_msgs/Float64MultiArray``. A cycle
  applies the last vector received at or before ``t_k`` (after ``feedforward_delay``, to rehearse a late path)
  as long as it is at most ``feedforward_timeout`` old, else zero: hardware holds the last command for a while,
  and an arm whose feed-forward stopped must not keep a stale torque;
- the **trajectory** path (:class:`EffortSchedule`): the ``effort`` of JointTrajectory points (what the
  feedforward node's ``trajectory_out_topic`` fills in), linear between points, held before the first and after
  the last, replaced by the next trajectory from its receipt as the follower is.

**Gains** (:func:`pd_gains`): ``kp`` [N m/rad] and ``kd`` [N m s/rad] per joint as given, or from a bandwidth ``f``
[Hz] and damping ratio ``zeta``: ``kp = I (2 pi f)^2``, ``kd = 2 zeta I (2 pi f)``, ``I`` the largest diagonal
entry of MuJoCo's joint-space inertia (armature included) over poses within the limits (:func:`joint_inertia`), so
that each joint alone is a critically damped second-order system of bandwidth at least ``f``. The default
``f = 5 Hz`` (:data:`DEFAULT_BANDWIDTH`) is what effort-controlled arms run in joint space: stiff enough to
hold a pose within a few mrad against gravity, far below the 1 kHz loop and the drives' torque bandwidth.

**The physics** (:class:`ControlledArm`): MuJoCo's semi-implicit Euler steps, ``ceil(1 / (control_rate
timestep))`` per cycle, the arm's damping and friction loss warming up as
:class:`~robot_dynid.experiment.mujoco_engine.MujocoRobot` says, payloads fixed to the last link at given times
(:meth:`ControlledArm.attach_payload`). Samples (``rate``, dividing ``control_rate``) carry the measured state,
the applied torque, the reference and the feed-forward applied (:class:`ControlledSamples`).

**Tracking** (:func:`tracking_metrics`, :func:`recovery_time`): RMS and peak of ``q_d - q`` per joint [rad] and
the RMS applied and PD torque [N m] over a window, and how long after an event the error takes to come back to a
reference run's.
"""
from __future__ import annotations

import collections
import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.experiment.mujoco_engine import MujocoArm, MujocoRobot
from robot_dynid.experiment.trajectory_following import ArmSamples
from robot_dynid.joint_names import index_in
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.payload import Payload

__all__ = ["DEFAULT_CONTROL_RATE", "MAX_CONTROL_RATE", "DEFAULT_BANDWIDTH", "MAX_BANDWIDTH", "DEFAULT_DAMPING_RATIO",
           "DEFAULT_FEEDFORWARD_TIMEOUT", "MAX_FEEDFORWARD_TIMEOUT", "MAX_FEEDFORWARD_DELAY", "INERTIA_POSES",
           "ControlSettings", "joint_inertia", "pd_gains", "FeedforwardHold", "EffortSchedule", "ControlledSamples",
           "ControlledArm", "TrackingMetrics", "join_samples", "tracking_metrics", "windowed_rms", "recovery_time",
           "gravity_joints", "true_parameter_model", "PathLatency", "feedforward_latency"]

logger = logging.getLogger(__name__)

DEFAULT_CONTROL_RATE = 1000.0           # Hz, ros2_control's usual update_rate for an arm
MAX_CONTROL_RATE = 10_000.0             # Hz
DEFAULT_BANDWIDTH = 5.0                 # Hz, the PD's bandwidth on the largest inertia each joint sees
MAX_BANDWIDTH = 50.0                    # Hz, a tenth of the Nyquist rate of a 1 kHz loop
DEFAULT_DAMPING_RATIO = 1.0             # critically damped
DEFAULT_FEEDFORWARD_TIMEOUT = 0.05      # s: 50 cycles at 1 kHz
MAX_FEEDFORWARD_TIMEOUT = 60.0          # s
MAX_FEEDFORWARD_DELAY = 10.0            # s
#: Poses (seeded, within the position limits, +-pi at most) over which :func:`joint_inertia` takes its maximum.
INERTIA_POSES = 64


@dataclass(frozen=True)
class ControlSettings:
    """The simulated controller's settings.

    Attributes
    ----------
    control_rate : float
        [Hz], > 0 and at most :data:`MAX_CONTROL_RATE`; a multiple of the sample rate.
    kp, kd : tuple of float or None
        Per joint [N m/rad], [N m s/rad], >= 0; None: from ``bandwidth`` and ``damping_ratio`` (:func:`pd_gains`).
    bandwidth : float
        [Hz], in (0, :data:`MAX_BANDWIDTH`].
    damping_ratio : float
        [1], in (0, 10].
    feedforward_timeout : float
        [s], in (0, :data:`MAX_FEEDFORWARD_TIMEOUT`]: the forward command is held at most this long.
    feedforward_delay : float
        [s], in [0, :data:`MAX_FEEDFORWARD_DELAY`]: added to every forward command's arrival (a late path).
    """

    control_rate: float = DEFAULT_CONTROL_RATE
    kp: tuple | None = None
    kd: tuple | None = None
    bandwidth: float = DEFAULT_BANDWIDTH
    damping_ratio: float = DEFAULT_DAMPING_RATIO
    feedforward_timeout: float = DEFAULT_FEEDFORWARD_TIMEOUT
    feedforward_delay: float = 0.0

    def __post_init__(self):
        for name, unit, low, high, closed in (
                ("control_rate", "Hz", 0.0, MAX_CONTROL_RATE, False), ("bandwidth", "Hz", 0.0, MAX_BANDWIDTH, False),
                ("damping_ratio", "1", 0.0, 10.0, False),
                ("feedforward_timeout", "s", 0.0, MAX_FEEDFORWARD_TIMEOUT, False),
                ("feedforward_delay", "s", 0.0, MAX_FEEDFORWARD_DELAY, True)):
            object.__setattr__(self, name, validators.in_range(getattr(self, name), name, DynIdError, unit, low, high,
                                                               allow_minimum=closed))


def joint_inertia(simulator: MujocoRobot, poses: int = INERTIA_POSES, seed: int = 0) -> np.ndarray:
    """The largest diagonal entry of MuJoCo's joint-space inertia ``M(q)`` per joint (n,) [kg m^2] over ``poses``
    random poses within the position limits (at most +-pi), armature included."""
    mujoco, model = simulator.mujoco, simulator.model.model
    data = mujoco.MjData(model)
    lower, upper = simulator.regressor.robot.limit_arrays()[:2]
    lower, upper = np.maximum(lower, -math.pi), np.minimum(upper, math.pi)
    dofs = simulator.model.dofs
    unit, column = np.zeros(model.nv), np.zeros(model.nv)
    largest = np.zeros(len(dofs))
    for q in np.random.default_rng(seed).uniform(lower, upper, (poses, len(dofs))):
        data.qpos[simulator.model.qpos] = q
        mujoco.mj_forward(model, data)
        for joint, dof in enumerate(dofs):
            # M e_dof (mj_mulM keeps one signature across MuJoCo 3 and 4; mj_fullM's changed)
            unit[:] = 0.0
            unit[dof] = 1.0
            mujoco.mj_mulM(model, data, column, unit)
            largest[joint] = max(largest[joint], column[dof])
    return largest


def pd_gains(simulator: MujocoRobot, settings: ControlSettings) -> tuple[np.ndarray, np.ndarray]:
    """``(kp (n,) [N m/rad], kd (n,) [N m s/rad])``: the settings' own, else ``kp = I w^2``, ``kd = 2 zeta I w``
    (``w = 2 pi bandwidth``, ``I`` of :func:`joint_inertia`)."""
    joints = simulator.regressor.robot.joint_names
    omega = 2.0 * math.pi * settings.bandwidth
    inertia = joint_inertia(simulator) if settings.kp is None or settings.kd is None else None
    gains = []
    for name, given, derived in (("kp", settings.kp, None if inertia is None else inertia * omega**2),
                                 ("kd", settings.kd, None if inertia is None else
                                  2.0 * settings.damping_ratio * inertia * omega)):
        unit = "N m/rad" if name == "kp" else "N m s/rad"
        gains.append(derived if given is None else validators.array(
            given, name, DynIdError, shape=(len(joints),), axes=("joints",), columns=joints, minimum=0.0, unit=unit,
            copy=True))
    return gains[0], gains[1]


class FeedforwardHold:
    """A forward command input: the last vector received, held for at most ``timeout``, then zero.

    Parameters
    ----------
    n_joints : int
    timeout : float
        [s], > 0.
    delay : float
        [s], >= 0, added to every arrival.
    keep_history : bool
        Keep every arrival time and vector (:attr:`history`), for latency analyses; otherwise only those the
        arm still needs are kept.
    """

    def __init__(self, n_joints: int, timeout: float, delay: float = 0.0, keep_history: bool = False) -> None:
        self.n_joints, self.timeout, self.delay = n_joints, float(timeout), float(delay)
        self._times = collections.deque()
        self._values = collections.deque()
        self.history = [] if keep_history else None
        self.received = 0

    def receive(self, time: float, values) -> None:
        """A vector ``values`` (n,) [N m] arrived at ``time`` [s]; applied from ``time + delay`` on (after the last
        arrival, if that is later: vectors are applied in the order they arrive). DataError, nothing kept, for a
        vector of another size or not finite."""
        values = validators.array(values, "feed-forward", DataError, shape=(self.n_joints,), axes=("joints",),
                                  unit="N m", copy=True)
        arrival = float(time) + self.delay
        if self._times and arrival < self._times[-1]:
            arrival = self._times[-1]
        self._times.append(arrival)
        self._values.append(values)
        self.received += 1
        if self.history is not None:
            self.history.append((arrival, values))

    def sample(self, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The vector applied at each of ``times`` (N,) [s], increasing, and its age [s] (NaN where none is held):
        ``((N, n), (N,))``. Vectors no longer needed after ``times[-1]`` are dropped."""
        times = np.asarray(times, dtype=float)
        values = np.zeros((times.size, self.n_joints))
        age = np.full(times.size, np.nan)
        if self._times:
            arrivals = np.fromiter(self._times, float, len(self._times))
            index = np.searchsorted(arrivals, times, side="right") - 1
            held = (index >= 0) & (times - arrivals[np.maximum(index, 0)] <= self.timeout)
            if held.any():
                stacked = np.array(self._values)
                values[held] = stacked[index[held]]
                age[held] = times[held] - arrivals[index[held]]
            while len(self._times) > 1 and self._times[1] <= times[-1]:
                self._times.popleft()
                self._values.popleft()
        return values, age


class EffortSchedule:
    """The ``effort`` of the JointTrajectory points commanded, as a function of time (the trajectory path).

    A trajectory received at ``r`` replaces the schedule from ``r`` on; its efforts are linear in time between
    points (due at ``start_time + time_from_start``), held before the first and after the last; joints it does not
    name get 0; a trajectory without efforts leaves none (0) from ``r`` on.
    """

    def __init__(self, joint_names) -> None:
        self.joint_names = tuple(joint_names)
        self._plans = []     # (received, point times (M,), efforts (M, n) or None), received increasing

    def table(self, joint_names, efforts) -> np.ndarray | None:
        """The points' ``efforts`` (M sequences of m values [N m] for ``joint_names``, or all empty) as (M, n) in
        the arm's joint order (0 for joints not named), or None without efforts; DataError naming what is
        wrong."""
        rows = [np.asarray(row, dtype=float).reshape(-1) for row in efforts]
        if not any(row.size for row in rows):
            return None
        names = tuple(joint_names)
        columns = index_in(self.joint_names, names, "joint_names", "the arm")
        for index, row in enumerate(rows):
            if row.size != len(names):
                raise DataError(f"point {index}: effort has {row.size} values, expected {len(names)} (one per joint "
                                "in joint_names; give effort for every point or none)")
        table = np.zeros((len(rows), len(self.joint_names)))
        table[:, columns] = validators.array(rows, "effort", DataError, axes=("points", "joints"), columns=names,
                                             unit="N m")
        return table

    def replace(self, point_times, table: np.ndarray | None, received_time: float) -> None:
        """From ``received_time`` [s] on: the efforts ``table`` (M, n) [N m] (:meth:`table`) at ``point_times``
        (M,) [s], or none."""
        self._plans = [plan for plan in self._plans if plan[0] < received_time]
        self._plans.append((float(received_time), np.asarray(point_times, dtype=float), table))

    def sample(self, times: np.ndarray) -> np.ndarray:
        """The scheduled effort (N, n) [N m] at ``times`` (N,) [s], increasing; plans replaced before
        ``times[0]`` are dropped."""
        times = np.asarray(times, dtype=float)
        out = np.zeros((times.size, len(self.joint_names)))
        starts = [plan[0] for plan in self._plans]
        for k, (received, point_times, table) in enumerate(self._plans):
            end = starts[k + 1] if k + 1 < len(self._plans) else np.inf
            inside = (times >= received) & (times < end)
            if table is not None and inside.any():
                for j in range(table.shape[1]):
                    out[inside, j] = np.interp(times[inside], point_times, table[:, j])
        while len(self._plans) > 1 and times.size and self._plans[1][0] <= times[0]:
            self._plans.pop(0)
        return out


@dataclass(frozen=True)
class ControlledSamples(ArmSamples):
    """Samples of a :class:`ControlledArm`: :class:`ArmSamples` (``torque`` the torque applied, PD plus
    feed-forward; ``measured_torque`` it plus noise) and

    Attributes
    ----------
    q_desired, qd_desired : ndarray, shape (N, n)
        The reference [rad], [rad/s].
    feedforward : ndarray, shape (N, n)
        The feed-forward applied [N m] (both paths).
    feedforward_age : ndarray, shape (N,)
        How long before the sample the forward command applied arrived [s]; NaN where none was held.
    """

    q_desired: np.ndarray | None = None
    qd_desired: np.ndarray | None = None
    feedforward: np.ndarray | None = None
    feedforward_age: np.ndarray | None = None


class ControlledArm(MujocoArm):
    """A MuJoCo arm under a joint-space PD plus feed-forward at ``control_rate`` (module docstring).

    Send trajectories (the reference and their points' efforts) to :meth:`command`, forward commands to
    :attr:`feedforward` (``receive(time, values)``), call :meth:`advance`. Times are seconds since the arm's start
    (its cold start).

    Parameters
    ----------
    simulator : MujocoRobot
    rate : float
        Sample rate [Hz]; ``control_rate / rate`` must be a whole number.
    initial_positions : array_like, shape (n,), optional
        [rad]; where the arm rests at the start (and the reference until the first trajectory).
    seed : int or None
        Seed of the measurement noise.
    max_lag : float
        :meth:`advance` returns at most this much [s] of samples (all cycles are integrated).
    settings : ControlSettings
    keep_history : bool
        Keep every cycle (:attr:`history`) and every forward command's arrival (:attr:`FeedforwardHold.history`),
        for analyses; a list set to either later starts keeping from then.

    Attributes
    ----------
    kp, kd : ndarray, shape (n,)
        The gains [N m/rad], [N m s/rad].
    cycles : int
        Controller cycles integrated so far.
    skipped : int
        Samples not returned because :meth:`advance` came more than ``max_lag`` late (their cycles integrated).
    history : list of ControlledSamples or None
        With ``keep_history``: one per :meth:`advance`, every cycle of it (:func:`join_samples` joins them).
    payload_times : list of float
        When each payload attached so far takes effect [s].
    """

    def __init__(self, simulator: MujocoRobot, rate: float, initial_positions=None, seed=None, max_lag: float = 1.0,
                 settings: ControlSettings = ControlSettings(), keep_history: bool = False) -> None:
        super().__init__(simulator, rate, initial_positions, seed, max_lag)
        ratio = settings.control_rate / self.rate
        if abs(ratio - round(ratio)) > 1e-9 or round(ratio) < 1:
            raise DynIdError(f"control_rate {settings.control_rate:g} Hz must be a whole multiple of the sample rate "
                             f"{self.rate:g} Hz")
        self.settings = settings
        self.cycles_per_sample = round(ratio)
        self._set_substeps(settings.control_rate)
        self.steps_per_cycle = self.substeps // self.cycles_per_sample
        self.kp, self.kd = pd_gains(simulator, settings)
        joints = simulator.regressor.robot.joint_names
        self.feedforward = FeedforwardHold(len(joints), settings.feedforward_timeout, settings.feedforward_delay,
                                           keep_history)
        self.efforts = EffortSchedule(joints)
        self._payloads = []     # (time [s], Payload, the MuJoCo model with it and the earlier ones), time increasing
        self._scratch = None    # the MjData mj_setConst works in when a payload is fixed
        self.cycles = self.skipped = 0
        self.history = [] if keep_history else None
        self.payload_times = []

    def command(self, joint_names, time_from_start, positions, velocities=None, accelerations=None, efforts=(),
                start_time: float = 0.0, received_time: float | None = None) -> None:
        """A trajectory: the reference (:meth:`TrajectoryFollower.command
        <robot_dynid.experiment.trajectory_following.TrajectoryFollower.command>`, same arguments) and its points'
        ``efforts`` (M sequences of m values [N m], or all empty: none), replacing both from ``received_time`` (by
        default ``start_time``) [s]. DataError, nothing changed, when either is refused."""
        table = self.efforts.table(joint_names, efforts)
        self.follower.command(joint_names, time_from_start, positions, velocities, accelerations, start_time,
                              received_time)
        received = start_time if received_time is None else received_time
        self.efforts.replace(float(start_time) + np.asarray(time_from_start, dtype=float).reshape(-1), table, received)

    def attach_payload(self, payload: Payload, time: float) -> None:
        """Fix ``payload`` to the last link from the first cycle at or after ``time`` [s] (the past: the next);
        PayloadError for a frame the robot lacks. The arm's model with it is computed now (milliseconds), so that
        the cycle fixing it only copies arrays."""
        if not isinstance(payload, Payload):
            raise DynIdError(f"payload must be a Payload, got {type(payload).__name__}")
        payload.link_parameters(self.simulator.regressor.robot)
        time = validators.number(time, "payload time [s]", DataError)
        pending = sorted([(at, added) for at, added, _ in self._payloads] + [(time, payload)],
                         key=lambda event: event[0])
        base, self._payloads = None, []
        for at, added in pending:       # each model computed now, on top of the earlier ones
            base = self.simulator.payload_model(added, base)
            self._payloads.append((at, added, base))
        if self._scratch is None:
            self._scratch = self.simulator.mujoco.MjData(self.simulator.model.model)
        self.payload_times.append(time)

    def _due(self, now: float):
        """The samples due up to ``now`` [s] (:meth:`GridArm._due`) whose last cycle is not after ``now``: a
        sample's cycles run from its grid time to the next one, so one due from its grid time on would integrate
        up to ``1 / rate`` s ahead with the feed-forward held at ``now``, and commands that arrive meanwhile would
        come too late for their cycles (at 100 Hz samples: up to 9 ms of extra, random lag)."""
        return super()._due(now - (self.cycles_per_sample - 1) / self.settings.control_rate)

    def advance(self, now: float) -> ControlledSamples | None:
        """Integrate the samples whose cycles are all at or before ``now`` [s] (:meth:`_due`) and return those not
        returned before (at most ``max_lag * rate``; older ones counted in ``n_skipped``); None when none is due."""
        due = self._due(now)
        if due is None:
            return None
        count, first = due
        steps = self._step_times(count)
        cycles = steps[::self.steps_per_cycle]
        q_d, qd_d, _ = self.follower.sample(cycles)
        forward, age = self.feedforward.sample(cycles)
        feedforward = forward + self.efforts.sample(cycles)
        factors = self._friction_factors(steps)
        mujoco, model, data, simulator = self.simulator.mujoco, self.simulator.model.model, self._data, self.simulator
        dofs, qpos = simulator.model.dofs, simulator.model.qpos
        kp, kd = self.kp, self.kd
        n_cycles, n = cycles.size, len(dofs)
        q, qd, qdd, tau = (np.empty((n_cycles, n)) for _ in range(4))
        for cycle in range(n_cycles):
            while self._payloads and self._payloads[0][0] <= cycles[cycle]:
                simulator.use_inertials(self._payloads.pop(0)[2], self._scratch)
            q[cycle], qd[cycle] = data.qpos[qpos], data.qvel[dofs]
            tau[cycle] = kp * (q_d[cycle] - q[cycle]) + kd * (qd_d[cycle] - qd[cycle]) + feedforward[cycle]
            data.qfrc_applied[dofs] = tau[cycle]
            for step in range(cycle * self.steps_per_cycle, (cycle + 1) * self.steps_per_cycle):
                if factors is not None:
                    simulator.set_friction(factors[step])
                mujoco.mj_step(model, data)
                if step == cycle * self.steps_per_cycle:
                    qdd[cycle] = data.qacc[dofs]
        self.cycles += n_cycles
        self.skipped += first
        measured = tau + self._rng.normal(0.0, 1.0, tau.shape) * simulator.noise_std
        every = ControlledSamples(cycles, q, qd, qdd, tau, measured, q_desired=q_d, qd_desired=qd_d,
                                  feedforward=feedforward, feedforward_age=age)
        if self.history is not None:
            self.history.append(every)
        self._next_index += count
        sampled = slice(first * self.cycles_per_sample, None, self.cycles_per_sample)
        return ControlledSamples(**{field.name: getattr(every, field.name)[sampled]
                                    for field in dataclasses.fields(ControlledSamples) if field.name != "n_skipped"},
                                 n_skipped=first)


@dataclass(frozen=True)
class TrackingMetrics:
    """How well an arm tracked its reference over a window (per joint).

    Attributes
    ----------
    rms_error, peak_error : ndarray, shape (n,)
        RMS and largest ``|q_d - q|`` [rad].
    rms_torque : ndarray, shape (n,)
        RMS of the torque applied (PD plus feed-forward) [N m].
    rms_feedback : ndarray, shape (n,)
        RMS of the PD's share of it, ``tau - tau_ff`` [N m]: what the feed-forward left the feedback to do.
    samples : int
    """

    rms_error: np.ndarray
    peak_error: np.ndarray
    rms_torque: np.ndarray
    rms_feedback: np.ndarray
    samples: int

    def to_dict(self) -> dict:
        return {field.name: (value.tolist() if isinstance(value, np.ndarray) else value)
                for field in dataclasses.fields(self) for value in [getattr(self, field.name)]}


def join_samples(batches) -> ControlledSamples:
    """The batches of :meth:`ControlledArm.advance` (in order; None entries passed over) as one."""
    batches = [batch for batch in batches if batch is not None]
    if not batches:
        raise DataError("no samples to join")
    fields = {}
    for field in dataclasses.fields(ControlledSamples):
        values = [getattr(batch, field.name) for batch in batches]
        fields[field.name] = sum(values) if field.name == "n_skipped" else np.concatenate(values)
    return ControlledSamples(**fields)


def tracking_metrics(samples: ControlledSamples, start: float = -np.inf, end: float = np.inf) -> TrackingMetrics:
    """:class:`TrackingMetrics` of ``samples`` with ``start <= time < end`` [s]; DataError when none is."""
    window = (samples.time >= start) & (samples.time < end)
    if not window.any():
        raise DataError(f"no samples between {start:g} s and {end:g} s (they cover {samples.time[0]:g} to "
                        f"{samples.time[-1]:g} s)")
    error = samples.q_desired[window] - samples.q[window]
    torque = samples.torque[window]

    def rms(values):
        return np.sqrt(np.mean(values**2, axis=0))

    return TrackingMetrics(rms(error), np.max(np.abs(error), axis=0), rms(torque),
                           rms(torque - samples.feedforward[window]), int(window.sum()))


def windowed_rms(time: np.ndarray, error: np.ndarray, window: float, centred: bool = False) -> np.ndarray:
    """The RMS of ``error`` (N, n) over a window of ``window`` [s] at each sample of ``time`` (N,) [s], increasing:
    trailing (``(t - window, t]``) or ``centred`` (``[t - window / 2, t + window / 2]``); (N, n)."""
    time = np.asarray(time, dtype=float)
    squares = np.concatenate([np.zeros((1, error.shape[1])), np.cumsum(np.asarray(error, dtype=float)**2, axis=0)])
    if centred:
        begin = np.searchsorted(time, time - window / 2.0, side="left")
        end = np.searchsorted(time, time + window / 2.0, side="right")
    else:
        begin = np.searchsorted(time, time - window, side="right")
        end = np.arange(1, time.size + 1)
    return np.sqrt((squares[end] - squares[begin]) / (end - begin)[:, None])


def recovery_time(samples: ControlledSamples, reference: ControlledSamples, event: float, joints,
                  factor: float = 1.5, window: float = 0.05, hold: float = 0.5, end: float = np.inf) -> float:
    """How long after ``event`` [s] the tracking error of ``samples`` takes to settle within ``factor`` times that
    of ``reference`` (a run of the same reference without the event) [s]: the first time from which it stays there
    for ``hold`` s (or up to ``end``, if sooner); inf if it never does.

    The error compared is the RMS over the joints ``joints`` (indices) and a centred window of ``window`` [s]
    (:func:`windowed_rms`), on ``reference``'s grid.
    """
    times = reference.time
    inside = (times >= event) & (times < end)
    if not inside.any():
        raise DataError(f"no samples between the event at {event:g} s and the end at {end:g} s")

    def error(run):
        values = run.q_desired - run.q
        at = np.array([np.interp(times, run.time, values[:, j]) for j in joints]).T
        return np.sqrt(np.mean(windowed_rms(times, at, window, centred=True) ** 2, axis=1))[inside]

    within = error(samples) <= factor * error(reference)
    after = times[inside]
    outside, candidates = np.flatnonzero(~within), np.flatnonzero(within)
    following = np.searchsorted(outside, candidates, side="right")     # the next sample outside, if any
    settled = following == outside.size
    settled[~settled] = after[outside[following[~settled]]] - after[candidates[~settled]] >= hold
    return float(after[candidates[settled][0]] - event) if settled.any() else math.inf


def gravity_joints(simulator: MujocoRobot, q, fraction: float = 0.01) -> np.ndarray:
    """Which joints carry gravity along the poses ``q`` (N, n) [rad]: those whose RMS gravity torque (MuJoCo's
    inverse dynamics at rest) exceeds ``fraction`` of the largest joint's; bool (n,)."""
    q = np.atleast_2d(np.asarray(q, dtype=float))
    gravity = simulator.torques(q, np.zeros_like(q), np.zeros_like(q), noise=False)
    rms = np.sqrt(np.mean(gravity**2, axis=0))
    return rms > fraction * rms.max()


def true_parameter_model(structure: DynamicModel, parameters) -> DynamicModel:
    """A model of ``structure``'s robot, regressor and base parameters whose values are the true ``parameters``
    (p,) (in ``structure.regressor``'s order) projected onto them, standard deviations 0: the feed-forward of the
    best model of that family (no payload, no metrics)."""
    names = structure.regressor.parameter_names
    parameters = validators.array(parameters, "parameters", DynIdError, shape=(len(names),), axes=("parameters",),
                                  columns=names)
    values = structure.base.projection @ parameters
    return dataclasses.replace(structure, values=values, std=np.zeros_like(values), metrics={}, standard=None,
                               payload=None, provenance={"data_source": "the simulator's true parameters"})


@dataclass(frozen=True)
class PathLatency:
    """The forward command path's timing, each command matched to the reference it was computed for.

    Attributes
    ----------
    delivered : ndarray, shape (M,)
        Arrival at the controller minus the reference's stamp [s].
    applied : ndarray, shape (M,)
        The first controller cycle that applies it minus the reference's stamp [s].
    unmatched : int
        Commands matched to no reference (or to more than one, identical ones): left out.
    """

    delivered: np.ndarray
    applied: np.ndarray
    unmatched: int

    def summary(self) -> dict:
        """``{delivered, applied: {p50, p99, max} [s], matched, unmatched}``."""
        def spread(values):
            if values.size == 0:
                return {"p50": math.nan, "p99": math.nan, "max": math.nan}
            return {"p50": float(np.percentile(values, 50)), "p99": float(np.percentile(values, 99)),
                    "max": float(values.max())}

        return {"delivered": spread(self.delivered), "applied": spread(self.applied), "matched": int(self.applied.size),
                "unmatched": self.unmatched}


def feedforward_latency(stamps, expected, arrivals, received, control_rate: float, rtol: float = 1e-9,
                        atol: float = 1e-9) -> PathLatency:
    """Match each command received to the reference it was computed for and time the path.

    Parameters
    ----------
    stamps : array_like, shape (R,)
        The references' stamps [s], increasing.
    expected : array_like, shape (R, n)
        The feed-forward each reference gives [N m] (computed apart, e.g. with the model served).
    arrivals : array_like, shape (M,)
        When each command arrived at the controller [s], on the clock of ``stamps``, increasing.
    received : array_like, shape (M, n)
        The commands [N m].
    control_rate : float
        [Hz]: cycles at ``k / control_rate`` on that clock.

    A command matches reference ``k`` when their values agree within ``rtol`` and ``atol`` and ``stamps[k]`` is
    not after its arrival; commands come in the order of their references, so the search goes on from the last
    match. A command with several such references (the same values, e.g. a held pose) is ambiguous: unmatched.
    """
    stamps, arrivals = np.asarray(stamps, dtype=float), np.asarray(arrivals, dtype=float)
    expected, received = np.asarray(expected, dtype=float), np.asarray(received, dtype=float)
    delivered, applied, unmatched, start = [], [], 0, 0
    for arrival, values in zip(arrivals, received):
        stop = int(np.searchsorted(stamps, arrival, side="right"))
        close = np.flatnonzero(np.all(np.isclose(expected[start:stop], values, rtol=rtol, atol=atol), axis=1))
        if close.size != 1:
            unmatched += 1
            continue
        k = start + int(close[0])
        delivered.append(arrival - stamps[k])
        applied.append(math.ceil(arrival * control_rate - 1e-9) / control_rate - stamps[k])
        start = k + 1
    return PathLatency(np.array(delivered), np.array(applied), unmatched)
