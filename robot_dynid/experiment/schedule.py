"""Running a protocol plan on a robot: reference windows, stage boundary events, deviation checks.

What the ``experiment_runner`` node decides without ROS. Times are seconds of *plan time*
(``t = 0`` at the start of the plan's first sample); the node adds the wall-clock start.

- The reference (the plan sampled at ``rate_hz``, as :meth:`ProtocolPlan.sample`) is cut into
  consecutive :class:`ReferenceWindow` s of ``window_duration``; they concatenate to the sampled
  plan. Window ``k`` is sent ``lookahead`` seconds before it starts, as a
  :class:`CommandChunk` that also carries the reference from ``lookahead`` before the window
  (the end of the window before): a joint_trajectory_controller replaces its trajectory from the
  moment a new one arrives, so a chunk that starts before its arrival continues the motion on
  the same points (splicing) instead of cutting a corner to the window's first point.
- Every plan stage row gives two :class:`~robot_dynid.recordings.stages.StageMarker` s, its start
  and its end, in time order (the end of one stage before the start of the next at the same
  time).
- :meth:`ExperimentSchedule.deviation` compares measured positions with the reference at their
  stamps: ``e_j = max_k |q_meas[k, j] - q_ref(t_k)[j]|`` and flags the worst joint when
  ``e_j > threshold``; a non-finite measured position (NaN, inf: the arm's pose is unknown) is
  flagged before any finite error, naming the joint and the value.
- :class:`ExperimentRun` waits for an explicit :meth:`~ExperimentRun.start` (refused, naming the
  reason, when the arm's pose is unknown, nothing subscribes to the commands, the run already
  started, or the arm is farther than ``start_tolerance`` from the plan's start pose and the
  approach is disabled), steps through the schedule (what is due at time ``t``), and turns an
  abort into the end marker of the stage playing; :meth:`~ExperimentRun.hold_pose` is where an
  abort holds the arm, always finite: the measured pose if it is finite and recent, else the last
  commanded reference point (where the controller is). A window due more than :data:`MAX_LATENESS`
  after its own start is not sent (:class:`ReferenceLate`): the controller has been holding the
  previous window's last point since then, and a late window would make its reference jump.
  :class:`FeedbackWatchdog` ends a run whose joint states stopped.
- :func:`approach_move` is the rest-to-rest cycloidal move from the measured pose to the plan's
  start pose that a start prepends when the arm is farther than ``start_tolerance``: the
  shortest keeping every joint within ``approach_speed_fraction`` of its velocity and
  acceleration limits, checked by :func:`~robot_dynid.experiment.excitation.check_trajectory`. It plays in
  plan time ``[-T, 0)`` and belongs to no stage: the plan's markers and plan time start after it.
"""
from __future__ import annotations

import copy
import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError, TrajectoryError
from robot_dynid.experiment.protocol import ProtocolPlan
from robot_dynid.experiment.trajectories import CycloidalMove, Trajectory, cycloidal_duration
from robot_dynid.experiment.trajectory_checks import check_trajectory
from robot_dynid.joint_names import match_joints
from robot_dynid.recordings.stages import StageMarker

__all__ = ["DEFAULT_START_TOLERANCE", "DEFAULT_APPROACH_SPEED_FRACTION", "DEFAULT_MAX_POSE_AGE", "MAX_LATENESS",
           "MAX_REFERENCE_SAMPLES", "StartRefused", "NotReady", "ReferenceLate", "ReferenceWindow", "CommandChunk",
           "Deviation", "stage_events", "ExperimentSchedule", "positions_in_order", "approach_move", "RunStart",
           "HoldPose", "check_start_tolerance", "FeedbackWatchdog", "ExperimentRun"]

logger = logging.getLogger(__name__)

DEFAULT_START_TOLERANCE = 0.05
"""[rad] per joint: farther than this from the plan's start pose, a start approaches it first."""
DEFAULT_APPROACH_SPEED_FRACTION = 0.1
"""Fraction of each joint's velocity and acceleration limits the approach move may use."""
DEFAULT_MAX_POSE_AGE = 1.0
"""[s] a start is refused (not ready) when the last joint state arrived longer ago than this, and
a run aborts when none arrives for this long (:class:`FeedbackWatchdog`)."""
MAX_LATENESS = 0.05
"""[s] a window handed out later than this after its start ends the run (:class:`ReferenceLate`)."""
MAX_REFERENCE_SAMPLES = 2_000_000
"""Samples of the plan a schedule holds at most: it samples the whole plan at once (for six joints
about 350 bytes per sample at the peak, 0.7 GB at this maximum; the 24-cycle default plan
at 100 Hz is 840,000 samples). A longer plan, more cycles or a higher rate is refused, naming them."""


class StartRefused(DynIdError):
    """The run cannot start (already started, finished or aborted; the arm too far from the plan)."""


class NotReady(StartRefused):
    """The run cannot start yet: no joint state has arrived, or nothing subscribes to the commands.

    Autostart retries on these; every other :class:`StartRefused` is final until the arm moves."""


class ReferenceLate(DynIdError):
    """A reference window came due after its own start (the caller stalled for longer than
    ``lookahead``): the run must abort; the message says which window and how late. The
    controller holds the last point handed out: :meth:`ExperimentRun.hold_pose` without a
    measured pose."""


@dataclass(frozen=True, eq=False)
class ReferenceWindow:
    """Consecutive samples of the reference.

    Attributes
    ----------
    index : int
        0-based window number.
    t : ndarray, shape (M,)
        [s] plan time of each sample.
    q, qd, qdd : ndarray, shape (M, n)
        [rad], [rad/s], [rad/s^2].
    """

    index: int
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray

    @property
    def start(self) -> float:
        return float(self.t[0])


@dataclass(frozen=True, eq=False)
class CommandChunk:
    """Points of one trajectory message: ``time_from_start`` counts from ``start_time``.

    Attributes
    ----------
    window : int
        The window the chunk delivers.
    start_time : float
        [s] plan time of the first point (the message's header stamp).
    send_time : float
        [s] plan time at which the chunk is due to be sent.
    time_from_start : ndarray, shape (M,)
        [s], starting at 0.
    q, qd, qdd : ndarray, shape (M, n)
        [rad], [rad/s], [rad/s^2].
    """

    window: int
    start_time: float
    send_time: float
    time_from_start: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray


@dataclass(frozen=True)
class Deviation:
    """Largest tracking error per joint over a batch of measurements, or the first measured
    position that is not finite.

    Attributes
    ----------
    max_error : ndarray, shape (n,)
        [rad] ``max_k |q_meas - q_ref|`` per joint; NaN for a joint with a non-finite measurement.
    joint : str
        The joint with the largest error, or the first (in time, then joint order) measured as
        NaN or inf.
    error : float
        [rad] its error (NaN or inf for a non-finite measurement).
    time : float
        [s] plan time at which it occurred.
    threshold : float
        [rad].
    position : float
        [rad] the joint's measured position there.
    """

    max_error: np.ndarray
    joint: str
    error: float
    time: float
    threshold: float
    position: float

    @property
    def finite(self) -> bool:
        """True when no measured position was NaN or inf; else the arm's pose is unknown."""
        return math.isfinite(self.position)

    @property
    def exceeded(self) -> bool:
        """Beyond the threshold, or a measurement not finite: the run must abort."""
        return not self.error <= self.threshold

    def describe(self) -> str:
        if not self.finite:
            return (f"joint {self.joint} reports position {self.position!r} rad at t = {self.time:.3f} s: the "
                    "arm's pose is unknown (driver fault?)")
        return (f"joint {self.joint} deviates {self.error:.4g} rad from the reference at "
                f"t = {self.time:.3f} s (threshold {self.threshold:g} rad)")


def _positive(name: str, value, unit: str, allow_zero: bool = False) -> float:
    return validators.positive(value, name, TrajectoryError, unit, allow_zero)


def stage_events(plan: ProtocolPlan) -> tuple[StageMarker, ...]:
    """The start and end marker of every stage row of ``plan``, in time order, stamped with plan
    time [s] and labelled with the row's name; ``joint_name`` is ``""`` outside friction and
    cylinder stages and ``speed_fraction`` 0 outside friction stages, as the message wants."""
    events = []
    for row in plan.stages:
        friction = row.kind == "friction"
        for start, time in ((True, row.start_time), (False, row.end_time)):
            events.append(StageMarker(
                stamp=float(time), kind=row.kind, cycle=int(row.cycle), start=start, label=row.label,
                joint_name=(row.joint or "") if row.kind in ("friction", "cylinder") else "",
                speed_fraction=float(row.speed_fraction or 0.0) if friction else 0.0, direction=int(row.direction)))
    return tuple(events)


class ExperimentSchedule:
    """A plan sampled at ``rate_hz`` and cut into windows of ``window_duration``, optionally
    preceded by an approach move (:meth:`with_approach`).

    Parameters
    ----------
    plan : ProtocolPlan
    rate_hz : float
        Reference sample rate [Hz].
    window_duration : float
        [s] per window (rounded to whole samples, at least one).

    Raises
    ------
    TrajectoryError
        A rate or duration not finite and > 0, more than :data:`MAX_REFERENCE_SAMPLES` samples, or
        a reference value that is not finite.

    Attributes
    ----------
    windows : tuple of ReferenceWindow
        Concatenated, equal to ``plan.sample(rate_hz)`` (after the approach's samples, at plan
        times ``[-approach_duration, 0)``, if there is one).
    events : tuple of StageMarker (stamped in plan time)
        See :func:`stage_events`.
    approach : Trajectory or None
        Played before the plan, ending at its start pose.
    """

    def __init__(self, plan: ProtocolPlan, rate_hz: float, window_duration: float = 2.0):
        window_duration = _positive("window_duration", window_duration, "s")
        rate_hz = _positive("rate_hz", rate_hz, "Hz")
        samples = plan.duration * rate_hz + 1.0
        if samples > MAX_REFERENCE_SAMPLES:
            raise TrajectoryError(
                f"the plan of {plan.duration:.6g} s ({plan.cycles} cycle(s)) at rate_hz {rate_hz:g} Hz is "
                f"{samples:.3g} reference samples, more than {MAX_REFERENCE_SAMPLES:,} (the whole plan is held in "
                "memory): lower rate_hz or the number of cycles")
        self.plan = plan
        self.rate_hz = rate_hz
        self.window_duration = window_duration
        self.approach = None
        self._parts = (plan.sample(rate_hz)[:4],)    # (t, q, qd, qdd) per part, in time order
        for name, values in zip(("position", "velocity", "acceleration"), self._parts[0][1:]):
            bad = np.argwhere(~np.isfinite(values))
            if bad.size:
                k, j = bad[0]
                raise TrajectoryError(f"the plan's reference {name} of joint {plan.joint_names[j]} at "
                                      f"t = {self._parts[0][0][k]:.3f} s is {values[k, j]!r}")
        self.windows = self._cut(self._parts[0], 0)
        self.events = stage_events(plan)

    def _cut(self, part, first_index: int) -> tuple:
        t, q, qd, qdd = part
        size = max(1, int(round(self.window_duration * self.rate_hz)))
        return tuple(ReferenceWindow(first_index + k, t[s:s + size], q[s:s + size], qd[s:s + size],
                                     qdd[s:s + size])
                     for k, s in enumerate(range(0, t.size, size)))

    def with_approach(self, approach: Trajectory) -> "ExperimentSchedule":
        """This schedule with ``approach`` played in plan time ``[-T, 0)`` before the plan.

        ``approach`` ends at rest at :attr:`start_pose`; its duration ``T`` must be a whole
        number of samples (:func:`approach_move` with ``time_step = 1 / rate_hz``), so the
        reference stays on one grid. The plan's samples are shared, not copied.
        """
        if self.approach is not None:
            raise TrajectoryError("this schedule already has an approach move")
        if tuple(approach.joint_names) != tuple(self.joint_names):
            raise TrajectoryError(f"approach joints {list(approach.joint_names)} differ from the plan's "
                                  f"{list(self.joint_names)}")
        count = approach.duration * self.rate_hz
        if abs(count - round(count)) > 1e-6:
            raise TrajectoryError(f"approach duration {approach.duration:g} s is not a whole number of "
                                  f"samples at {self.rate_hz:g} Hz")
        jump = np.max(np.abs(approach.boundary_states()[1][0] - self.start_pose))
        if jump > 1e-9:
            raise TrajectoryError(f"the approach ends {jump:.3g} rad from the plan's start pose")
        tau = np.arange(int(round(count))) / self.rate_hz
        part = (tau - approach.duration, *approach.evaluate(tau))
        schedule = copy.copy(self)
        schedule.approach = approach
        schedule._parts = (part, *self._parts)
        before = self._cut(part, 0)
        schedule.windows = before + tuple(dataclasses.replace(w, index=len(before) + w.index) for w in self.windows)
        return schedule

    @property
    def joint_names(self) -> tuple:
        return self.plan.joint_names

    @property
    def duration(self) -> float:
        """[s] of the plan (plan time of its end), without the approach."""
        return self.plan.duration

    @property
    def approach_duration(self) -> float:
        """[s]; 0 without an approach."""
        return 0.0 if self.approach is None else float(self.approach.duration)

    @property
    def start_pose(self) -> np.ndarray:
        """[rad] (n,) the plan's first point."""
        return self.plan.trajectory.evaluate([0.0])[0][0]

    def chunk(self, window: int, lookahead: float) -> CommandChunk:
        """Window ``window`` as a message sent ``lookahead`` s before it starts.

        The chunk starts at the last sample at or before ``window start - lookahead`` (clipped
        to the first sample), so it contains the reference the arm is following when it arrives.
        """
        lookahead = _positive("lookahead", lookahead, "s", allow_zero=True)
        if not 0 <= window < len(self.windows):
            raise TrajectoryError(f"window {window} is not in 0..{len(self.windows) - 1}")
        target = self.windows[window]
        send_time = target.start - lookahead
        slack = 1e-9 / self.rate_hz
        start_time = float(self._parts[0][0][0])    # the first sample, or the last at or before send_time
        for t, *_ in self._parts:
            last = int(np.searchsorted(t, send_time + slack, side="right")) - 1
            if last >= 0:
                start_time = float(t[last])
        pieces = []   # the samples in [start_time, window end] of each part (approach, plan)
        for part in self._parts:
            first = np.searchsorted(part[0], start_time - slack)
            stop = np.searchsorted(part[0], target.t[-1] + slack, side="right")
            pieces.append([array[first:stop] for array in part])
        t, q, qd, qdd = (np.concatenate(arrays) for arrays in zip(*pieces))
        return CommandChunk(window, start_time, send_time, t - start_time, q, qd, qdd)

    def reference(self, t) -> np.ndarray:
        """Reference positions (N, n) [rad] at plan times ``t`` (N,) [s]: the approach in
        ``[-approach_duration, 0)``, the plan from 0; held outside."""
        t = np.clip(np.asarray(t, dtype=float).reshape(-1), -self.approach_duration, self.duration)
        q = self.plan.trajectory.evaluate(np.maximum(t, 0.0))[0]
        approaching = t < 0.0
        if approaching.any():
            q[approaching] = self.approach.evaluate(t[approaching] + self.approach_duration)[0]
        return q

    def deviation(self, t, q, threshold: float) -> Deviation:
        """Largest ``|q - q_ref(t)|`` per joint.

        Parameters
        ----------
        t : array_like, shape (N,)
            [s] plan times of the measurements (N >= 1).
        q : array_like, shape (N, n)
            [rad] measured positions in :attr:`joint_names` order; NaN or inf flags the joint.
        threshold : float
            [rad].
        """
        threshold = _positive("deviation threshold", threshold, "rad")
        t = validators.array(t, "stamps", finite=False).reshape(-1)
        q = validators.array(q, "measured positions", shape=(t.size, len(self.joint_names)), axes=("stamps", "joints"),
                             min_length=1, finite=False)
        error = np.abs(q - self.reference(t))
        unknown = np.argwhere(~np.isfinite(q))
        k, j = unknown[0] if unknown.size else np.unravel_index(int(np.argmax(error)), error.shape)
        max_error = np.where(np.isfinite(q).all(axis=0), error.max(axis=0), np.nan)
        return Deviation(max_error, self.joint_names[j], float(error[k, j]), float(t[k]), threshold,
                         float(q[k, j]))


def positions_in_order(names, positions, joint_names) -> np.ndarray:
    """Positions (n,) [rad] of ``joint_names`` from a message's ``names`` and ``positions``.

    Raises
    ------
    DataError
        A joint of ``joint_names`` is missing, or the lengths differ.
    """
    names = list(names)
    if len(positions) != len(names):
        raise DataError(f"joint state has {len(names)} names but {len(positions)} positions")
    return np.asarray(positions, dtype=float)[match_joints(joint_names, names, "joint state", "the plan")]


def approach_move(robot, joint_names, start, end, speed_fraction: float,
                  time_step: float | None = None) -> CycloidalMove:
    """The shortest rest-to-rest cycloidal move from ``start`` to ``end`` within ``speed_fraction``
    of every joint's velocity and acceleration limits.

    ``T = max_j max(2 |d_j| / (f v_j), sqrt(2 pi |d_j| / (f a_j)))`` (peak speed ``2 |d| / T``,
    peak acceleration ``2 pi |d| / T^2``), rounded up to a multiple of ``time_step`` [s] if given;
    the move is then checked on a grid against the robot's limits (positions included) and the
    fraction.

    Parameters
    ----------
    robot : RobotDescription
        Limits of ``joint_names``.
    joint_names : sequence of str, length n
    start, end : array_like, shape (n,)
        [rad].
    speed_fraction : float
        ``f`` in (0, 1].

    Raises
    ------
    TrajectoryError
        ``start == end``, a bad fraction, or a check failing (naming the joint).
    """
    fraction = _positive("approach speed fraction", speed_fraction, "fraction of the limits")
    if fraction > 1.0:
        raise TrajectoryError(f"approach speed fraction must be <= 1, got {speed_fraction!r}")
    _, _, velocity, acceleration, _ = robot.limit_arrays(joint_names)
    start = np.asarray(start, dtype=float)
    displacement = np.asarray(end, dtype=float) - start
    duration = cycloidal_duration(displacement, fraction * velocity, fraction * acceleration)
    if duration == 0.0:
        raise TrajectoryError("the approach move has nothing to do: start and end poses are equal")
    if time_step is not None:
        step = _positive("time_step", time_step, "s")
        duration = math.ceil(duration / step - 1e-6) * step
    move = CycloidalMove(joint_names, start, displacement, duration)
    check = check_trajectory(robot, move)
    problems = [violation.describe() for violation in check.violations]
    problems += [f"joint {joint.name}: {name} {value:.4g} of its limit beyond the fraction {fraction:g}"
                 for joint in check.joints
                 for name, value in (("peak speed", joint.qd_fraction), ("peak acceleration", joint.qdd_fraction))
                 if value > fraction * (1.0 + 1e-9)]
    if problems:
        raise TrajectoryError(f"approach move of {duration:.3g} s: " + "; ".join(problems))
    return move


@dataclass(frozen=True)
class RunStart:
    """What an accepted :meth:`ExperimentRun.start` plays.

    Attributes
    ----------
    approach : CycloidalMove or None
        To the plan's start pose, before the plan.
    joint : str
        The joint farthest from the plan's start pose.
    distance : float
        [rad] its distance.
    tolerance : float
        [rad] ``start_tolerance``.
    plan_duration : float
        [s].
    """

    approach: CycloidalMove | None
    joint: str
    distance: float
    tolerance: float
    plan_duration: float

    def describe(self) -> str:
        if self.approach is None:
            return (f"at the plan's start pose (largest offset {self.joint} {self.distance:.2g} rad, within "
                    f"{self.tolerance:g} rad): playing the {self.plan_duration:.0f} s plan")
        return (f"approaching the plan's start pose in {self.approach.duration:.1f} s (largest move "
                f"{self.joint} {self.distance:.2g} rad), then playing the {self.plan_duration:.0f} s plan")


@dataclass(frozen=True, eq=False)
class HoldPose:
    """Where an abort holds the arm (:meth:`ExperimentRun.hold_pose`).

    Attributes
    ----------
    pose : ndarray, shape (n,)
        [rad], finite, in the schedule's joint order.
    source : str
        ``"the measured pose"`` or ``"the last commanded point"``, for the log.
    """

    pose: np.ndarray
    source: str


def check_start_tolerance(start_tolerance: float, deviation_threshold: float) -> None:
    """TrajectoryError when ``start_tolerance`` [rad] is above ``deviation_threshold`` [rad]: a start that far
    from the plan's start pose (no approach) would abort at once."""
    if start_tolerance > deviation_threshold:
        raise TrajectoryError(f"start_tolerance {start_tolerance:g} rad is above deviation_threshold "
                              f"{deviation_threshold:g} rad: a start that far from the plan's start pose (no "
                              "approach) would abort at once; lower start_tolerance")


class FeedbackWatchdog:
    """Whether the measured joint states stopped while a run plays (the deviation check sees
    nothing then, and the arm moves unmonitored).

    Call :meth:`state_received` at each joint state and :meth:`check` at each timer tick, both
    with the caller's clock [s]. A run must abort when no joint state has come for more than
    ``timeout`` s over two checks in a row: a caller that stalled itself finds the states queued
    (one is taken between two ticks), a silent driver does not send any.
    """

    def __init__(self, timeout: float):
        self.timeout = _positive("joint state timeout", timeout, "s")
        self.last = None
        self.quiet_checks = 0

    def state_received(self, t: float) -> None:
        self.last = float(t)
        self.quiet_checks = 0

    def check(self, t: float) -> float | None:
        """The silence [s] when the run must abort, else None (also before any state)."""
        if self.last is None or t - self.last <= self.timeout:
            return None
        self.quiet_checks += 1
        return t - self.last if self.quiet_checks >= 2 else None


class ExperimentRun:
    """Starting a schedule, progress through it (what to send at plan time ``t``), aborting.

    ``state`` is ``"idle"`` (until :meth:`start`), ``"running"``, ``"done"`` (every chunk sent
    and every event due) or ``"aborted"``. :attr:`schedule` gains the approach move on start.

    Parameters
    ----------
    schedule : ExperimentSchedule
    lookahead : float
        [s] chunks are due this long before their window starts.
    robot : RobotDescription
        Velocity and acceleration limits of the schedule's joints (for the approach).
    start_tolerance : float
        [rad] per joint, >= 0: farther from the plan's start pose, the start approaches it.
    approach_speed_fraction : float
        In [0, 1]: of the velocity and acceleration limits, for the approach; 0 = no approach
        (a start farther than ``start_tolerance`` is refused).
    max_pose_age : float
        [s] > 0: a start from a joint state older than this is not ready (the approach would
        begin from where the arm was, not where it is).
    deviation_threshold : float, optional
        [rad] the caller's abort threshold (:meth:`ExperimentSchedule.deviation`); given, a
        ``start_tolerance`` above it is refused: a start that far from the start pose, without an
        approach, would abort at once.
    """

    def __init__(self, schedule: ExperimentSchedule, lookahead: float, robot,
                 start_tolerance: float = DEFAULT_START_TOLERANCE,
                 approach_speed_fraction: float = DEFAULT_APPROACH_SPEED_FRACTION,
                 max_pose_age: float = DEFAULT_MAX_POSE_AGE, deviation_threshold: float | None = None):
        self.schedule = schedule
        self.lookahead = _positive("lookahead", lookahead, "s", allow_zero=True)
        self.robot = robot
        robot.limit_arrays(schedule.joint_names)   # every joint of the plan has limits
        self.start_tolerance = _positive("start_tolerance", start_tolerance, "rad", allow_zero=True)
        self.approach_speed_fraction = _positive("approach_speed_fraction", approach_speed_fraction,
                                                 "fraction of the limits", allow_zero=True)
        if self.approach_speed_fraction > 1.0:
            raise TrajectoryError(f"approach_speed_fraction must be <= 1, got {approach_speed_fraction!r}")
        self.max_pose_age = _positive("max_pose_age", max_pose_age, "s")
        if deviation_threshold is not None:
            deviation_threshold = _positive("deviation_threshold", deviation_threshold, "rad")
        if deviation_threshold is not None:
            check_start_tolerance(self.start_tolerance, deviation_threshold)
        self.next_window = 0
        self.next_event = 0
        self.state = "idle"
        self.initial_pose = None    # [rad] (n,) the measured pose the run started from

    def start(self, pose, command_subscribers: int, pose_age: float = 0.0) -> RunStart:
        """Start the run from the measured ``pose`` (n,) [rad] in the schedule's joint order (None:
        none has arrived), received ``pose_age`` [s] ago, with ``command_subscribers`` controllers
        listening.

        Raises
        ------
        NotReady
            ``pose`` is None or older than ``max_pose_age``, or ``command_subscribers`` is 0.
        StartRefused
            Not idle; a position is not finite; the arm is farther than ``start_tolerance`` from
            the plan's start pose with the approach disabled (naming the joint, its distance and
            the tolerance), or the approach fails its checks.
        """
        if self.state != "idle":
            raise StartRefused({"running": "the run already started", "done": "the run already finished",
                                "aborted": "the run was aborted"}[self.state] + "; restart the node to run again")
        if pose is None:
            raise NotReady("no joint state has arrived yet: the arm's pose is unknown")
        if not pose_age <= self.max_pose_age:
            raise NotReady(f"the last joint state arrived {pose_age:.3g} s ago, more than max_joint_state_age "
                           f"{self.max_pose_age:g} s: the arm's pose is not known now (has the driver stopped "
                           "publishing?)")
        if command_subscribers < 1:
            raise NotReady("nothing subscribes to the command topic: no controller to move the arm")
        names = self.schedule.joint_names
        pose = np.asarray(pose, dtype=float)
        bad = [name for name, value in zip(names, pose) if not math.isfinite(value)]
        if bad:
            raise StartRefused(f"the measured position of joint(s) {bad} is not finite")
        distance = np.abs(pose - self.schedule.start_pose)
        j = int(np.argmax(distance))
        started = RunStart(None, names[j], float(distance[j]), self.start_tolerance, self.schedule.duration)
        if distance[j] > self.start_tolerance:
            if self.approach_speed_fraction == 0.0:
                raise StartRefused(
                    f"joint {names[j]} is {distance[j]:.3g} rad from the plan's start pose, beyond start_tolerance "
                    f"{self.start_tolerance:g} rad, and the approach is disabled (approach_speed_fraction 0): "
                    "move the arm to the plan's start pose first")
            try:
                approach = approach_move(self.robot, names, pose, self.schedule.start_pose,
                                         self.approach_speed_fraction, 1.0 / self.schedule.rate_hz)
            except TrajectoryError as error:
                raise StartRefused(f"cannot approach the plan's start pose: {error}") from None
            self.schedule = self.schedule.with_approach(approach)
            started = dataclasses.replace(started, approach=approach)
        self.state = "running"
        self.initial_pose = pose.copy()
        return started

    def due(self, t: float) -> tuple[list, list]:
        """Chunks (list of CommandChunk) and markers (list of StageMarker) due by plan time ``t``
        and not yet handed out; nothing unless running.

        Raises
        ------
        ReferenceLate
            A window is due more than :data:`MAX_LATENESS` after its start; nothing is handed out
            and the run stays running for :meth:`abort`.
        """
        if self.state != "running":
            return [], []
        chunks, events = [], []
        windows, all_events = self.schedule.windows, self.schedule.events
        while self.next_window < len(windows) \
                and windows[self.next_window].start - self.lookahead <= t:
            window = windows[self.next_window]
            if t - window.start > MAX_LATENESS:
                raise ReferenceLate(
                    f"the reference window for plan time {window.start:.3f} to {window.t[-1]:.3f} s was due "
                    f"{self.lookahead:g} s before it starts and is {t - window.start:.3f} s past its start: the "
                    f"controller has been holding the previous window's last point, and this window would make its "
                    f"reference jump (the runner was stalled for more than lookahead {self.lookahead:g} s)")
            chunks.append(self.schedule.chunk(self.next_window, self.lookahead))
            self.next_window += 1
        while self.next_event < len(all_events) and all_events[self.next_event].stamp <= t:
            events.append(all_events[self.next_event])
            self.next_event += 1
        if self.next_window == len(windows) and self.next_event == len(all_events):
            self.state = "done"
        return chunks, events

    def abort(self, t: float) -> StageMarker | None:
        """Stop; the end event (stamped ``t``) of the stage whose start was handed out and whose
        end was not, or None (none started, e.g. during the approach; or not running)."""
        if self.state != "running":
            return None
        self.state = "aborted"
        events = self.schedule.events
        if self.next_event == 0 or not events[self.next_event - 1].start:
            return None
        started = events[self.next_event - 1]
        return dataclasses.replace(started, stamp=float(t), start=False)

    def monitored(self, t: float, q) -> bool:
        """Whether a joint state stamped plan time ``t`` [s] with positions ``q`` (n,) [rad] goes to the
        deviation check: while running, one stamped within the reference (approach included), and
        one with a non-finite position whatever its stamp (the arm's pose is unknown)."""
        if self.state != "running":
            return False
        return -self.schedule.approach_duration <= t <= self.schedule.duration or not np.isfinite(q).all()

    def commanded_point(self, t: float) -> np.ndarray | None:
        """[rad] (n,) the reference point last due at plan time ``t`` [s] among the windows handed
        out (the sample at or before ``t``; past them, their last point, where the controller holds);
        before the first sample, the measured pose the run started from (the controller holds the
        arm there); None before a start."""
        if self.next_window == 0 or t < self.schedule.windows[0].start:
            return None if self.initial_pose is None else self.initial_pose.copy()
        windows = self.schedule.windows[:self.next_window]
        slack = 1e-9 / self.schedule.rate_hz
        window = windows[int(np.searchsorted([w.start for w in windows], t + slack, side="right")) - 1]
        k = int(np.searchsorted(window.t, t + slack, side="right")) - 1
        return window.q[k].copy()

    def hold_pose(self, t: float, measured=None, measured_age: float = math.inf) -> HoldPose:
        """Where an abort at plan time ``t`` [s] holds the arm: ``measured`` (n,) [rad] if it is
        given, finite and at most ``max_pose_age`` s old (``measured_age``), else
        :meth:`commanded_point`, where the controller is. Never a non-finite point: pass no
        ``measured`` after a non-finite joint state or a stall (the pose measured before it is not
        where the arm is)."""
        if measured is not None:
            measured = np.asarray(measured, dtype=float)
            if np.isfinite(measured).all() and measured_age <= self.max_pose_age:
                return HoldPose(measured.copy(), "the measured pose")
        commanded = self.commanded_point(t)   # finite: the schedule's samples are, and the start pose
        if commanded is None:
            raise TrajectoryError(f"no pose to hold at plan time {t:.3f} s: the run has not started")
        return HoldPose(commanded, "the last commanded point")
