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
- Every plan stage row gives two :class:`StageEvent` s, its start and its end, in time order
  (the end of one stage before the start of the next at the same time).
- :meth:`ExperimentSchedule.deviation` compares measured positions with the reference at their
  stamps: ``e_j = max_k |q_meas[k, j] - q_ref(t_k)[j]|`` and flags the worst joint when
  ``e_j > threshold``.
- :class:`ExperimentRun` steps through a schedule (what is due at time ``t``), and turns an abort
  into the end marker of the stage playing.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import DataError, TrajectoryError
from robot_dynid.protocol import ProtocolPlan
from robot_dynid.recording import STAGE_KINDS

logger = logging.getLogger(__name__)


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
class StageEvent:
    """Start or end of one plan stage row (the fields of ``ExperimentStage.msg``).

    ``joint`` is ``""`` and ``speed_fraction`` 0 outside friction sub-stages, as the message
    wants; ``kind_code`` is the ``KIND_*`` value (index into ``STAGE_KINDS``).
    """

    time: float
    stage_index: int
    kind: str
    kind_code: int
    name: str
    cycle: int
    start: bool
    joint: str
    speed_fraction: float
    direction: int


@dataclass(frozen=True)
class Deviation:
    """Largest tracking error per joint over a batch of measurements.

    Attributes
    ----------
    max_error : ndarray, shape (n,)
        [rad] ``max_k |q_meas - q_ref|`` per joint.
    joint : str
        The joint with the largest error.
    error : float
        [rad] its error.
    time : float
        [s] plan time at which it occurred.
    threshold : float
        [rad].
    """

    max_error: np.ndarray
    joint: str
    error: float
    time: float
    threshold: float

    @property
    def exceeded(self) -> bool:
        return self.error > self.threshold

    def describe(self) -> str:
        return (f"joint {self.joint} deviates {self.error:.4g} rad from the reference at "
                f"t = {self.time:.3f} s (threshold {self.threshold:g} rad)")


def _positive(name: str, value, unit: str, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0.0 or (value == 0.0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise TrajectoryError(f"{name} must be a finite number {bound} [{unit}], got {value!r}")
    return float(value)


def stage_events(plan: ProtocolPlan) -> tuple[StageEvent, ...]:
    """Start and end events of every stage row of ``plan``, in time order."""
    events = []
    for index, row in enumerate(plan.stages):
        friction = row.kind == "friction"
        for start, time in ((True, row.start), (False, row.end)):
            events.append(StageEvent(
                time=float(time), stage_index=index, kind=row.kind,
                kind_code=STAGE_KINDS.index(row.kind), name=row.name, cycle=int(row.cycle),
                start=start, joint=(row.joint or "") if friction else "",
                speed_fraction=float(row.speed_fraction or 0.0) if friction else 0.0,
                direction=int(row.direction)))
    return tuple(events)


class ExperimentSchedule:
    """A plan sampled at ``rate_hz`` and cut into windows of ``window_duration``.

    Parameters
    ----------
    plan : ProtocolPlan
    rate_hz : float
        Reference sample rate [Hz].
    window_duration : float
        [s] per window (rounded to whole samples, at least one).

    Attributes
    ----------
    windows : tuple of ReferenceWindow
        Concatenated, equal to ``plan.sample(rate_hz)``.
    events : tuple of StageEvent
        See :func:`stage_events`.
    """

    def __init__(self, plan: ProtocolPlan, rate_hz: float, window_duration: float = 2.0):
        window_duration = _positive("window_duration", window_duration, "s")
        self.plan = plan
        self.rate_hz = float(rate_hz)
        self.window_duration = window_duration
        t, q, qd, qdd, _, _ = plan.sample(rate_hz)
        size = max(1, int(round(window_duration * rate_hz)))
        self._t, self._q, self._qd, self._qdd = t, q, qd, qdd
        self.windows = tuple(ReferenceWindow(k, t[s:s + size], q[s:s + size], qd[s:s + size],
                                             qdd[s:s + size])
                             for k, s in enumerate(range(0, t.size, size)))
        self._window_starts = np.arange(0, t.size, size)
        self.events = stage_events(plan)

    @property
    def joint_names(self) -> tuple:
        return self.plan.joint_names

    @property
    def duration(self) -> float:
        return self.plan.duration

    def chunk(self, window: int, lookahead: float) -> CommandChunk:
        """Window ``window`` as a message sent ``lookahead`` s before it starts.

        The chunk starts at the last sample at or before ``window start - lookahead`` (clipped
        to 0), so it contains the reference the arm is following when it arrives.
        """
        lookahead = _positive("lookahead", lookahead, "s", allow_zero=True)
        if not 0 <= window < len(self.windows):
            raise TrajectoryError(f"window {window} is not in 0..{len(self.windows) - 1}")
        target = self.windows[window]
        send_time = target.start - lookahead
        first = max(0, int(math.floor(send_time * self.rate_hz + 1e-9)))
        stop = self._window_starts[window] + target.t.size
        start_time = float(self._t[first])
        return CommandChunk(window, start_time, send_time, self._t[first:stop] - start_time,
                            self._q[first:stop], self._qd[first:stop], self._qdd[first:stop])

    def reference(self, t) -> np.ndarray:
        """Reference positions (N, n) [rad] at plan times ``t`` (N,) [s], held outside the plan."""
        t = np.clip(np.asarray(t, dtype=float).reshape(-1), 0.0, self.duration)
        return self.plan.trajectory.evaluate(t)[0]

    def deviation(self, t, q, threshold: float) -> Deviation:
        """Largest ``|q - q_ref(t)|`` per joint.

        Parameters
        ----------
        t : array_like, shape (N,)
            [s] plan times of the measurements (N >= 1).
        q : array_like, shape (N, n)
            [rad] measured positions in :attr:`joint_names` order.
        threshold : float
            [rad].
        """
        threshold = _positive("deviation threshold", threshold, "rad")
        t = np.asarray(t, dtype=float).reshape(-1)
        q = np.asarray(q, dtype=float)
        n = len(self.joint_names)
        if t.size == 0 or q.shape != (t.size, n):
            raise DataError(f"measured positions must have shape ({t.size}, {n}) for {t.size} "
                            f"stamps and joints {list(self.joint_names)}, got {q.shape}")
        error = np.abs(q - self.reference(t))
        k, j = np.unravel_index(int(np.argmax(error)), error.shape)
        return Deviation(error.max(axis=0), self.joint_names[j], float(error[k, j]), float(t[k]),
                         threshold)


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
    missing = [name for name in joint_names if name not in names]
    if missing:
        raise DataError(f"joint state lacks joint(s) {missing} (has {names})")
    return np.array([positions[names.index(name)] for name in joint_names], dtype=float)


class ExperimentRun:
    """Progress through a schedule: what to send at plan time ``t``, and aborting.

    ``state`` is ``"running"``, ``"done"`` (every chunk sent and every event due) or
    ``"aborted"``.
    """

    def __init__(self, schedule: ExperimentSchedule, lookahead: float):
        self.schedule = schedule
        self.lookahead = _positive("lookahead", lookahead, "s", allow_zero=True)
        self.next_window = 0
        self.next_event = 0
        self.state = "running"

    def due(self, t: float) -> tuple[list, list]:
        """Chunks (list of CommandChunk) and events (list of StageEvent) due by plan time ``t``
        and not yet handed out; nothing once aborted."""
        if self.state != "running":
            return [], []
        chunks, events = [], []
        windows, all_events = self.schedule.windows, self.schedule.events
        while self.next_window < len(windows) \
                and windows[self.next_window].start - self.lookahead <= t:
            chunks.append(self.schedule.chunk(self.next_window, self.lookahead))
            self.next_window += 1
        while self.next_event < len(all_events) and all_events[self.next_event].time <= t:
            events.append(all_events[self.next_event])
            self.next_event += 1
        if self.next_window == len(windows) and self.next_event == len(all_events):
            self.state = "done"
        return chunks, events

    def abort(self, t: float) -> StageEvent | None:
        """Stop; the end event (stamped ``t``) of the stage whose start was handed out and whose
        end was not, or None (not started, or already done / aborted)."""
        if self.state != "running":
            return None
        self.state = "aborted"
        events = self.schedule.events
        if self.next_event == 0 or not events[self.next_event - 1].start:
            return None
        started = events[self.next_event - 1]
        return dataclasses.replace(started, time=float(t), start=False)
