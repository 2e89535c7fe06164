"""Recorded samples checked against physics and the robot: unit mistakes are errors, glitches dropped.

A unit mistake makes every sample wrong, so it is an error naming the column:

- time: a median sampling interval above :data:`MAX_SAMPLE_INTERVAL` (0.25 s) looks like
  milliseconds (or microseconds, nanoseconds by its size); below :data:`MIN_SAMPLE_INTERVAL`
  (10 us) like minutes or hours: no arm is identified from such rates;
- positions [rad], velocities [rad/s] and torques [N m] of a joint (of a prismatic joint: [m], [m/s],
  [N]) beyond the bounds below in more than :data:`UNIT_FRACTION` of the samples. Positions that fit
  the limits once read as degrees (a prismatic joint's: as millimetres) are said to look like that;
  positions that fit them once divided by the joint's gear ratio (the largest entry of its column
  of the transmission T, else its drive's ``gear_ratio``; at least :data:`MIN_MOTOR_RATIO`), or,
  without a known ratio, lie beyond
  :data:`MOTOR_ANGLE_FACTOR` times the limits in most samples, look like motor-side angles
  (they belong in ``qm.<motor>`` columns or a bag's motor states).

A sample beyond a bound on fewer samples than that is a glitch (a corrupt message, a sensor
spike): it is dropped and counted by reason in ``Recording.dropped``, never fed to an estimator.
The bounds, per joint:

- position: the joint's position limits widened by :data:`POSITION_MARGIN` [rad, or m];
- velocity: :data:`VELOCITY_FACTOR` times the velocity limit [rad/s];
- torque: :data:`EFFORT_FACTOR` times the effort limit [N m] where the robot gives one, else
  :data:`MAX_TORQUE` [N m] (beyond any arm's joint).

Stale rows (:func:`stale_rows`): a logger that reads the driver's state faster than the driver updates it
writes the same positions, velocities and torques twice, under a new stamp (1,131 of 20,544 rows in one
recording). Such a row is not a measurement at its stamp: it makes a moving joint stand still for a step and
jump the next, which derivatives turn into spikes. Rows that repeat every position, recorded velocity and
torque of the previous row exactly while the arm moves are dropped here, before derivatives, counted in
``Recording.dropped`` under :data:`STALE_ROW` (count and first stamp) and said in one warning with their
share. A true rest (velocities exactly 0, positions unchanged before and after) is not stale.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.joint_names import index_in
from robot_dynid.recordings.recording import DropCounter, Recording
from robot_dynid.recordings.signal_processing import median_step
from robot_dynid.stored_columns import column_extremes, float_values

__all__ = ["MAX_SAMPLE_INTERVAL", "MIN_SAMPLE_INTERVAL", "POSITION_MARGIN", "VELOCITY_FACTOR", "EFFORT_FACTOR",
           "MAX_TORQUE", "UNIT_FRACTION", "UNIT_FIT", "MIN_MOTOR_RATIO", "MOTOR_ANGLE_FACTOR", "STALE_ROW",
           "check_time_unit", "SampleBounds", "stale_rows", "check_samples"]

logger = logging.getLogger(__name__)

MAX_SAMPLE_INTERVAL = 0.25  # s: slower than 4 Hz is no identification recording
MIN_SAMPLE_INTERVAL = 1e-5  # s: faster than 100 kHz neither
POSITION_MARGIN = 0.5       # rad beyond a position limit
VELOCITY_FACTOR = 10.0      # times the velocity limit
EFFORT_FACTOR = 10.0        # times the effort limit
MAX_TORQUE = 1e5            # N m, when the robot gives no effort limit
UNIT_FRACTION = 0.05        # more samples than this beyond a bound: a unit mistake, not glitches
UNIT_FIT = 0.99             # a rescaled column fitting the bounds in more samples than this: that is its unit
MIN_MOTOR_RATIO = 5.0       # gear ratios [1] from which positions divided by them are tried as motor-side angles
MOTOR_ANGLE_FACTOR = 5.0    # without a known ratio: beyond this many times the limits in most samples
STALE_ROW = "repeats the previous row's positions, velocities and torques under a new stamp (a stale read)"
"""The ``dropped`` reason of stale rows (module docstring)."""


def check_time_unit(time, source: str) -> None:
    """DataError when the median step of ``time`` (N,) [s] says it is not in seconds."""
    time = np.asarray(time, dtype=float)
    if time.size < 2:
        return
    step = median_step(time)
    if step > MAX_SAMPLE_INTERVAL:
        unit, factor = next((unit, factor) for unit, factor in
                            (("milliseconds", 1e-3), ("microseconds", 1e-6), ("nanoseconds", 1e-9))
                            if step * factor <= MAX_SAMPLE_INTERVAL or unit == "nanoseconds")
        raise DataError(f"{source}: the median sampling interval is {step:g} s ({1.0 / step:.3g} Hz), too slow "
                        f"for identification: time looks like {unit} ({step:g} {unit} = "
                        f"{1.0 / (step * factor):.4g} Hz); give time in seconds")
    if step < MIN_SAMPLE_INTERVAL:
        raise DataError(f"{source}: the median sampling interval is {step:g} s ({1.0 / step:.3g} Hz): time "
                        "does not look like seconds (minutes or hours?); give time in seconds")


@dataclass(frozen=True)
class SampleBounds:
    """Per-joint bounds of plausible samples (module docstring), in the order of ``joint_names``.

    ``position_low`` / ``position_high`` [rad], ``velocity`` [rad/s], ``torque`` [N m]: each (n,);
    ``gear_ratio`` (n,) [1] motor turns per joint turn, NaN where unknown (module docstring);
    ``prismatic`` (n,) True where the joint slides (its bounds are in m, m/s, N).
    """

    joint_names: tuple[str, ...]
    position_low: np.ndarray
    position_high: np.ndarray
    position_limits: tuple[tuple[float, float], ...]
    velocity: np.ndarray
    torque: np.ndarray
    gear_ratio: np.ndarray | None = None
    prismatic: np.ndarray | None = None

    def units(self, joint: int) -> tuple[str, str, str]:
        """Position, velocity and effort units of ``joint``."""
        sliding = self.prismatic is not None and bool(self.prismatic[joint])
        return ("m", "m/s", "N") if sliding else ("rad", "rad/s", "N m")

    @classmethod
    def for_robot(cls, robot, joint_names: Sequence[str] | None = None) -> "SampleBounds":
        names = tuple(robot.joint_names if joint_names is None else joint_names)
        rows = index_in(robot.joint_names, names, "joint_names", f"robot {robot.name!r}")
        limits = robot.limit_arrays(names)
        torque = np.where(np.isnan(limits.effort), MAX_TORQUE, EFFORT_FACTOR * limits.effort)
        return cls(names, limits.lower - POSITION_MARGIN, limits.upper + POSITION_MARGIN,
                   tuple(zip(limits.lower.tolist(), limits.upper.tolist())), VELOCITY_FACTOR * limits.velocity, torque,
                   _gear_ratios(robot)[rows], np.array(robot.prismatic, dtype=bool)[rows])

    def violations(self, q, qd=None, tau=None):
        """``(field, joint index, reason, mask (N,))`` for every joint with a sample beyond a bound.

        ``q``, ``qd``, ``tau``: (N, n) [rad, rad/s, N m] in ``joint_names`` order; None: not checked.
        """
        found = []
        checks = (("q", q, self.position_low, self.position_high,
                   lambda j: f"position beyond the limits of {self.joint_names[j]} by more than "
                             f"{POSITION_MARGIN:g} {self.units(j)[0]}"),
                  ("qd", qd, -self.velocity, self.velocity,
                   lambda j: f"|velocity| of {self.joint_names[j]} above {self.velocity[j]:.4g} {self.units(j)[1]} "
                             f"({VELOCITY_FACTOR:g}x its limit)"),
                  ("tau", tau, -self.torque, self.torque,
                   lambda j: f"|torque| of {self.joint_names[j]} above {self.torque[j]:.4g} {self.units(j)[2]}"))
        for field, values, low, high, reason in checks:
            if values is None:
                continue
            values = float_values(values)
            if values.shape[0] == 0:
                continue
            # a joint has samples beyond a bound only where its extremes lie beyond it
            smallest, largest = column_extremes(values)
            flagged = (smallest < low) | (largest > high)
            for joint in np.flatnonzero(flagged):
                column = values[:, joint]
                found.append((field, int(joint), reason(joint), (column < low[joint]) | (column > high[joint])))
        return found

    def reason(self, q, qd=None, tau=None) -> str | None:
        """Why one sample ``q``, ``qd``, ``tau`` (n,) is implausible, or None when it is not."""
        q = np.asarray(q, dtype=float)
        if ((q >= self.position_low).all() and (q <= self.position_high).all()
                and (qd is None or (np.abs(qd) <= self.velocity).all())
                and (tau is None or (np.abs(tau) <= self.torque).all())):
            return None
        found = self.violations(*(None if values is None else np.asarray(values, dtype=float)[None]
                                  for values in (q, qd, tau)))
        return found[0][2] if found else None


def _gear_ratios(robot) -> np.ndarray:
    """Per joint of ``robot``, motor turns per joint turn [1]: the largest magnitude in its column of the
    transmission T, else its drive's ``gear_ratio``; NaN where neither is known."""
    transmission = getattr(robot, "transmission", None)
    if transmission is not None:
        return np.abs(np.asarray(transmission.motor_from_joint, dtype=float)).max(axis=0)
    drives = getattr(robot, "drives", None) or [None] * len(robot.joint_names)
    return np.array([np.nan if getattr(drive, "gear_ratio", None) is None else float(drive.gear_ratio)
                     for drive in drives])


def _looks_motor_side(values: np.ndarray, bounds: SampleBounds, joint: int) -> float | None:
    """The gear ratio (NaN: unknown) by which positions ``values`` (N,) [rad] of ``joint`` look like motor-side
    angles, or None when they do not (module docstring)."""
    low, high = bounds.position_low[joint], bounds.position_high[joint]
    ratio = np.nan if bounds.gear_ratio is None else float(bounds.gear_ratio[joint])
    if np.isfinite(ratio):
        scaled = values / ratio
        fits = np.mean((scaled >= low) & (scaled <= high)) > UNIT_FIT
        return ratio if ratio >= MIN_MOTOR_RATIO and fits else None
    reach = MOTOR_ANGLE_FACTOR * max(abs(low), abs(high))
    return ratio if np.mean(np.abs(values) > reach) > 0.5 else None


def _unit_message(recording: Recording, bounds: SampleBounds, field: str, joint: int, mask) -> str:
    name = bounds.joint_names[joint]
    values = getattr(recording, field)[:, joint]
    fraction = float(np.mean(mask))
    worst = float(values[np.argmax(np.abs(values))])
    head = f"{recording.source}: column {field}.{name}"
    if bounds.units(joint)[0] == "m":
        return _prismatic_unit_message(head, values, bounds, field, joint, fraction, worst)
    if field == "q":
        low, high = bounds.position_limits[joint]
        text = (f"{head} lies beyond the joint's position limits [{low:g}, {high:g}] rad by more than "
                f"{POSITION_MARGIN:g} rad in {fraction:.0%} of the samples (up to {worst:.6g})")
        in_degrees = np.radians(values)
        degrees = (np.mean((in_degrees >= bounds.position_low[joint]) & (in_degrees <= bounds.position_high[joint]))
                   > UNIT_FIT)
        in_degrees_text = f"degrees ({worst:.6g} deg = {math.radians(worst):.4g} rad)"
        ratio = _looks_motor_side(values, bounds, joint)
        if ratio is not None and (np.isfinite(ratio) or not degrees):
            factor = (f"{ratio:g} times the joint's angle, its gear ratio" if np.isfinite(ratio)
                      else f"over {MOTOR_ANGLE_FACTOR:g} times its limits in most samples")
            return (f"{text}: it looks like motor-side angles ({factor}; give them as qm.<motor> columns, or a bag's "
                    "motor states with --motor-states-topic, with the robot description's transmission)"
                    + (f" or {in_degrees_text}" if degrees else ""))
        if degrees:
            return f"{text}: it looks like {in_degrees_text}; give radians"
        return f"{text}: check its unit (rad) and the robot's limits"
    if field == "qd":
        text = (f"{head} exceeds {bounds.velocity[joint]:.4g} rad/s ({VELOCITY_FACTOR:g}x the joint's velocity "
                f"limit) in {fraction:.0%} of the samples (up to {worst:.6g})")
        if np.mean(np.abs(np.radians(values)) <= bounds.velocity[joint]) > 0.99:
            return f"{text}: it looks like deg/s; give rad/s"
        return f"{text}: check its unit (rad/s) and the robot's velocity limit"
    return (f"{head} exceeds {bounds.torque[joint]:.4g} N m in {fraction:.0%} of the samples (up to {worst:.6g}): "
            "check its unit (N m; mN m? motor currents?) and the robot's effort limit")


def _prismatic_unit_message(head: str, values, bounds: SampleBounds, field: str, joint: int, fraction: float,
                            worst: float) -> str:
    """:func:`_unit_message` of a prismatic joint: positions [m], velocities [m/s], forces [N]; millimetres
    are the likely mistake."""
    millimetres = values * 1e-3
    if field == "q":
        low, high = bounds.position_limits[joint]
        text = (f"{head} lies beyond the joint's position limits [{low:g}, {high:g}] m by more than "
                f"{POSITION_MARGIN:g} m in {fraction:.0%} of the samples (up to {worst:.6g})")
        fits = np.mean((millimetres >= bounds.position_low[joint]) & (millimetres <= bounds.position_high[joint]))
    elif field == "qd":
        text = (f"{head} exceeds {bounds.velocity[joint]:.4g} m/s ({VELOCITY_FACTOR:g}x the joint's velocity limit) "
                f"in {fraction:.0%} of the samples (up to {worst:.6g})")
        fits = np.mean(np.abs(millimetres) <= bounds.velocity[joint])
    else:
        return (f"{head} exceeds {bounds.torque[joint]:.4g} N in {fraction:.0%} of the samples (up to {worst:.6g}): "
                "check its unit (N, a prismatic joint's force) and the robot's effort limit")
    unit, small = ("m", "mm") if field == "q" else ("m/s", "mm/s")
    if fits > UNIT_FIT:
        name = "millimetres" if field == "q" else "mm/s"
        return f"{text}: it looks like {name} ({worst:.6g} {small} = {worst * 1e-3:.4g} {unit}); give {unit}"
    return f"{text}: check its unit ({unit}) and the robot's limits"


def stale_rows(q, qd, tau) -> np.ndarray:
    """(N,) True for the rows of a stale read (module docstring).

    A row repeats when its positions ``q``, recorded velocities ``qd`` (None: not recorded) and torques ``tau``
    (None: nothing is judged), each (N, n) [rad, rad/s, N m], all equal the previous row's exactly. A run of
    repeating rows is stale when the arm moves through it: a recorded velocity in it is not 0, or, without
    recorded velocities, the positions change into the run and out of it (at the recording's first or last
    rows: on the side there is).
    """
    q = float_values(q)
    stale = np.zeros(q.shape[0], dtype=bool)
    if tau is None or q.shape[0] < 2:
        return stale
    if qd is not None:
        qd = float_values(qd)
    # rows that repeat the previous one: first by the first position (rare while the arm moves), then whole
    if q.shape[1]:
        first = q[:, 0]         # one read of a stored column
        candidates = np.flatnonzero(first[1:] == first[:-1])
    else:
        candidates = np.arange(q.shape[0] - 1)
    for values in (q, float_values(tau), qd):
        if values is not None and candidates.size:
            candidates = candidates[np.all(values[candidates + 1] == values[candidates], axis=1)]
    repeats = np.zeros(q.shape[0], dtype=bool)
    repeats[candidates + 1] = True
    starts = np.flatnonzero(repeats & ~np.concatenate([[False], repeats[:-1]]))
    for start in starts:
        stop = start + int(np.argmin(np.concatenate([repeats[start:], [False]])))    # first row after the run
        if qd is not None:
            moving = bool(np.any(qd[start] != 0.0))
        else:       # at the recording's first or last rows, the side that is there
            into = None if start < 2 else bool(np.any(q[start - 1] != q[start - 2]))
            out = None if stop >= q.shape[0] else bool(np.any(q[stop] != q[start]))
            moving = (into, out) != (None, None) and into is not False and out is not False
        stale[start:stop] = moving
    return stale


def check_samples(recording: Recording, robot) -> Recording:
    """``recording`` (joints matched to ``robot`` by name) without its implausible samples and its stale rows
    (module docstring).

    Raises
    ------
    DataError
        A unit mistake (module docstring), naming the column.
    """
    check_time_unit(recording.time, recording.source)
    names = [name for name in recording.joint_names if name in robot.joint_names]
    if not names:
        return recording
    bounds = SampleBounds.for_robot(robot, names)
    columns = index_in(recording.joint_names, names, "the robot's joints", recording.source)
    every = list(columns) == list(range(recording.n_joints))      # no copy of an hour's arrays then
    fields = {field: None if getattr(recording, field) is None else
              getattr(recording, field) if every else getattr(recording, field)[:, columns]
              for field in ("q", "qd", "tau")}
    keep = np.ones(recording.n_samples, dtype=bool)
    dropped = DropCounter(recording.dropped)
    for field, joint, reason, mask in bounds.violations(**fields):
        if np.mean(mask) > UNIT_FRACTION:
            subset = recording.reorder(names)
            raise DataError(_unit_message(subset, bounds, field, joint, mask))
        newly = mask & keep
        if newly.any():
            dropped.add(reason, float(recording.time[np.argmax(newly)]), int(np.count_nonzero(newly)))
            keep &= ~newly
    if keep.all():
        stale = stale_rows(*(fields[name] for name in ("q", "qd", "tau")))
    else:
        rows = np.flatnonzero(keep)
        stale = np.zeros_like(keep)
        stale[rows] = stale_rows(*(None if fields[name] is None else fields[name][rows]
                                   for name in ("q", "qd", "tau")))
    if stale.any():
        count, first = int(np.count_nonzero(stale)), float(recording.time[np.argmax(stale)])
        dropped.add(STALE_ROW, first, count)
        keep &= ~stale
        logger.warning("%s: %d of %d rows (%.2g %%) repeat the previous row's positions, velocities and torques "
                       "under a new stamp (a logger reading the same state twice), first at %.6f s: dropped before "
                       "derivatives", recording.source, count, recording.n_samples, 100.0 * count / recording.n_samples,
                       first)
    if keep.all():
        return recording
    if not keep.any():
        raise DataError(f"{recording.source}: every sample is implausible: {dropped.counts}")
    return dataclasses.replace(recording.take(keep), dropped=dropped.counts)
