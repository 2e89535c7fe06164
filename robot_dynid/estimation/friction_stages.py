"""The friction stages of a test (METHODS.md section 7): plateaus, per-joint fits, drift over time.

- :func:`extract_friction_segments`: the constant-velocity portion (:func:`plateau`) of every friction
  sub-stage (joint, speed level, direction).
- :func:`fit_joint_friction`: the thesis's per-joint least squares
  ``tau = Im q'' - mPx sin q - mPy cos q + f1 sgn q' + f2 q' + f3 q'|q'| + f4 q'^3`` of one joint's
  friction stage (the polynomial of :func:`~robot_dynid.model.friction.friction_model`, solved by the
  registry's OLS), which removes gravity (and inertia) from joints whose motion is not horizontal;
  :func:`friction_analysis` both over a whole test.
- :func:`friction_drift`: the friction at one speed level against elapsed time with the
  double-exponential fit (:func:`~robot_dynid.model.friction_drift.fit_double_exponential`, t in minutes).

Numbers only: :mod:`robot_dynid.reports` draws and writes them.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Iterable, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation.analysis_defaults import DEFAULT_FRICTION_SPEED, GRAVITY_MODES
from robot_dynid.estimation.cycles import test_time_offsets
from robot_dynid.estimation.estimators import build_estimator
from robot_dynid.joint_names import index_in
from robot_dynid.model.friction import friction_model
from robot_dynid.model.friction_drift import DoubleExponentialFit, fit_double_exponential
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stage_detection import DEFAULT_PLATEAU_TOLERANCE, REST_THRESHOLD
from robot_dynid.recordings.stages import NO_CYCLE, StageInterval

__all__ = ["MIN_PLATEAU_SAMPLES", "VERTICAL_AXIS_COSINE", "FRICTION_COEFFICIENTS", "FrictionSegment", "plateau",
           "friction_intervals", "JointFrictionFit", "friction_columns", "fit_joint_friction", "horizontal_joints",
           "FrictionAnalysis", "extract_friction_segments", "friction_analysis", "FrictionDrift", "friction_drift"]

MIN_PLATEAU_SAMPLES = 5
VERTICAL_AXIS_COSINE = math.cos(math.radians(1.0))
"""A joint axis within 1 deg of gravity moves horizontally: gravity exerts no torque about it."""
_POLYNOMIAL = friction_model("polynomial")
FRICTION_COEFFICIENTS = _POLYNOMIAL.coefficient_names


@dataclasses.dataclass(frozen=True)
class FrictionSegment:
    """The constant-velocity portion of one friction sub-stage.

    Attributes
    ----------
    joint : str
    cycle : int
        -1 when unknown (stages detected from the motion).
    label : str
        The cycle's segment label (``"cycle 3"``; ``"file 2 cycle 3"``; ``"-"`` without cycles).
    speed_fraction : float
        The stage's speed level over the joint's velocity limit [1] (the marker's).
    direction : int
        +1 or -1.
    start_time, end_time : float
        The plateau [s] on the recording's clock.
    elapsed_minutes : float
        Its mid time on the test clock [min].
    speed : float
        Mean joint velocity over the plateau [rad/s] (signed).
    torque : float
        Mean measured torque [N m].
    friction : float
        Mean friction torque [N m]: the measured torque less the inertia and gravity of the joint's
        friction fit where they were removed (:func:`friction_analysis`), else the measured torque.
    n_samples : int
    """

    joint: str
    cycle: int
    label: str
    speed_fraction: float
    direction: int
    start_time: float
    end_time: float
    elapsed_minutes: float
    speed: float
    torque: float
    friction: float
    n_samples: int

    @property
    def level(self) -> float:
        """The speed level, rounded to 1e-3 (groups the strokes of one level)."""
        return round(float(self.speed_fraction), 3)

    def to_dict(self) -> dict:
        return {key: getattr(self, key) for key in (
            "joint", "cycle", "label", "speed_fraction", "direction", "start_time", "end_time", "elapsed_minutes",
            "speed", "torque", "friction", "n_samples")}


def plateau(speed, direction: int, tolerance: float = DEFAULT_PLATEAU_TOLERANCE) -> slice | None:
    """The longest run of samples at constant velocity in ``direction``.

    Parameters
    ----------
    speed : array_like, shape (N,)
        Joint velocity over a stroke [rad/s].
    direction : int
        +1 or -1.
    tolerance : float
        [1] samples within ``tolerance * v_p`` of the plateau speed ``v_p`` count; ``v_p`` is the
        median of ``direction * speed`` over the samples above half its maximum.

    Returns
    -------
    slice or None
        None when fewer than :data:`MIN_PLATEAU_SAMPLES` samples qualify.
    """
    signed = direction * np.asarray(speed, dtype=float)
    if signed.size < MIN_PLATEAU_SAMPLES or not np.max(signed) > 0.0:
        return None
    cruise = float(np.median(signed[signed >= 0.5 * np.max(signed)]))
    on = np.abs(signed - cruise) <= tolerance * cruise
    edges = np.flatnonzero(np.diff(np.concatenate(([0], on.astype(np.int8), [0]))))
    starts, stops = edges[::2], edges[1::2]
    if not starts.size:
        return None
    longest = int(np.argmax(stops - starts))
    if stops[longest] - starts[longest] < MIN_PLATEAU_SAMPLES:
        return None
    return slice(int(starts[longest]), int(stops[longest]))


def friction_intervals(intervals: Iterable[StageInterval]) -> list[StageInterval]:
    """The friction sub-stages that move one joint in one direction (strokes), in time order."""
    return sorted((i for i in intervals if i.kind == "friction" and i.joint and i.direction in (1, -1)),
                  key=lambda i: i.start_time)


@dataclasses.dataclass(frozen=True)
class JointFrictionFit:
    """The thesis's least squares of one joint over its friction stage in one cycle.

    ``tau = Im q'' - mPx sin q - mPy cos q + f1 sgn q' + f2 q' + f3 q'|q'| + f4 q'^3`` (the gravity
    terms only where ``gravity_removed``). Units: ``inertia`` [kg m^2], ``gravity`` (mPx, mPy)
    [N m], ``coefficients`` f1 [N m], f2 [N m s/rad], f3 [N m s^2/rad^2], f4 [N m s^3/rad^3].
    """

    joint: str
    label: str
    inertia: float
    gravity: tuple[float, float] | None
    coefficients: tuple[float, float, float, float]
    horizontal: bool
    gravity_removed: bool
    residual_rms: float
    n_samples: int

    def friction(self, speed) -> np.ndarray:
        """The fitted friction polynomial at ``speed`` (M,) [rad/s] -> [N m]."""
        return friction_columns(speed) @ np.array(self.coefficients)

    def removed(self, q, qdd) -> np.ndarray:
        """What the fit attributes to inertia and gravity at ``q`` [rad], ``qdd`` [rad/s^2] -> [N m]."""
        q, qdd = np.asarray(q, float), np.asarray(qdd, float)
        torque = self.inertia * qdd
        if self.gravity is not None:
            torque = torque - self.gravity[0] * np.sin(q) - self.gravity[1] * np.cos(q)
        return torque

    def to_dict(self) -> dict:
        return {"joint": self.joint, "cycle": self.label, "inertia": self.inertia,
                "gravity": None if self.gravity is None else list(self.gravity),
                "coefficients": dict(zip(FRICTION_COEFFICIENTS, self.coefficients)),
                "horizontal": self.horizontal, "gravity_removed": self.gravity_removed,
                "residual_rms": self.residual_rms, "n_samples": self.n_samples}


def friction_columns(speed) -> np.ndarray:
    """``[sgn v, v, v|v|, v^3]`` (M, 4) of speeds ``v`` (M,) [rad/s]: the thesis's polynomial model
    (:func:`~robot_dynid.model.friction.friction_model` ``"polynomial"``) for one joint."""
    return _POLYNOMIAL.columns(np.asarray(speed, dtype=float)[:, None])[:, 0, :]


def fit_joint_friction(q, qd, qdd, tau, joint: str, label: str, with_gravity: bool, horizontal: bool
                       ) -> JointFrictionFit:
    """Least squares of one joint's torque during its friction stage (see :class:`JointFrictionFit`).

    Parameters
    ----------
    q, qd, qdd, tau : array_like, shape (M,)
        The joint's position [rad], velocity [rad/s], acceleration [rad/s^2] and torque [N m] while
        it alone moves (the others held).
    with_gravity : bool
        Include ``- mPx sin q - mPy cos q``.

    Raises
    ------
    DataError
        Fewer samples than unknowns, or the columns are rank deficient (naming the joint and, from
        the estimator, the parameters involved).
    """
    q, qd, qdd, tau = (np.asarray(a, dtype=float) for a in (q, qd, qdd, tau))
    columns = [qdd[:, None]] + ([-np.sin(q)[:, None], -np.cos(q)[:, None]] if with_gravity else []) \
        + [friction_columns(qd)]
    A = np.hstack(columns)
    names = ("Im",) + (("mPx", "mPy") if with_gravity else ()) + tuple(FRICTION_COEFFICIENTS)
    if A.shape[0] <= A.shape[1]:
        raise DataError(f"joint {joint} ({label}): {A.shape[0]} friction samples for {A.shape[1]} unknowns")
    try:
        solution = build_estimator("ols", A.shape[1], parameter_names=names).fit(A, tau).theta_
    except IdentificationError as error:
        raise DataError(f"joint {joint} ({label}): its friction stage does not determine the "
                        f"{A.shape[1]} parameters of the friction fit ({error})") from error
    residual = tau - A @ solution
    gravity = (float(solution[1]), float(solution[2])) if with_gravity else None
    return JointFrictionFit(joint, label, float(solution[0]), gravity, tuple(float(x) for x in solution[-4:]),
                            horizontal, with_gravity, float(np.sqrt(np.mean(residual**2))), int(tau.size))


def horizontal_joints(robot: RobotDescription, q) -> np.ndarray:
    """Whether each joint's axis at pose ``q`` (n,) [rad] is within 1 deg of the gravity vector
    (its motion is horizontal: gravity exerts no torque about it); all False without gravity."""
    import pinocchio as pin
    gravity = np.asarray(robot.gravity, dtype=float)
    if not np.linalg.norm(gravity) > 0.0:
        return np.zeros(robot.n_joints, dtype=bool)
    model = build_pinocchio_model(robot)
    data = model.createData()
    result = []
    for j in range(robot.n_joints):
        velocity = np.zeros(model.nv)
        velocity[j] = 1.0
        pin.forwardKinematics(model, data, np.asarray(q, dtype=float), velocity)
        axis = data.oMi[j + 1].rotation @ np.asarray(data.v[j + 1].angular, dtype=float)
        cosine = abs(float(axis @ gravity)) / (np.linalg.norm(axis) * np.linalg.norm(gravity))
        result.append(cosine >= VERTICAL_AXIS_COSINE)
    return np.array(result)


@dataclasses.dataclass(frozen=True)
class FrictionAnalysis:
    """Friction stages of a test: plateau segments, per-joint-and-cycle fits, and notes."""

    segments: tuple[FrictionSegment, ...]
    fits: tuple[JointFrictionFit, ...]
    notes: tuple[str, ...]

    def joints(self) -> list[str]:
        seen = []
        for segment in self.segments:
            if segment.joint not in seen:
                seen.append(segment.joint)
        return seen

    def to_dict(self) -> dict:
        return {"segments": [s.to_dict() for s in self.segments], "fits": [f.to_dict() for f in self.fits],
                "notes": list(self.notes)}


def _in_interval(time: np.ndarray, interval: StageInterval) -> slice:
    return slice(int(np.searchsorted(time, interval.start_time, side="left")),
                 int(np.searchsorted(time, interval.end_time, side="right")))


def extract_friction_segments(recording: Recording, intervals: Iterable[StageInterval],
                              tolerance: float = DEFAULT_PLATEAU_TOLERANCE, offset: float = 0.0,
                              file_label: str = "") -> tuple[list[FrictionSegment], list[str]]:
    """The constant-velocity portion of every friction stroke of ``intervals`` in ``recording``.

    Parameters
    ----------
    recording : Recording
        With q, qd and tau; the intervals' times are on its clock [s].
    intervals : iterable of StageInterval
        Stage intervals (markers or detected); friction strokes (joint and direction set) are used.
    tolerance : float
        As :func:`plateau`.
    offset : float
        The recording's start on the test clock [s] (:func:`test_time_offsets`).
    file_label : str
        Prefix of the cycle labels (``"file 2 "``).

    Returns
    -------
    segments : list of FrictionSegment
        ``friction`` is the measured torque here (no removal yet).
    notes : list of str
        Strokes without a plateau, joints the recording lacks.
    """
    if recording.qd is None or recording.tau is None:
        raise DataError(f"{recording.source}: friction analysis needs joint velocities and torques")
    segments, notes = [], []
    for interval in friction_intervals(intervals):
        if interval.joint not in recording.joint_names:
            notes.append(f"friction stage of joint {interval.joint}: not in {recording.source}")
            continue
        j, = index_in(recording.joint_names, [interval.joint], "friction stage", recording.source)
        rows = _in_interval(recording.time, interval)
        found = plateau(recording.qd[rows, j], interval.direction, tolerance)
        cycle_label = f"{file_label}cycle {interval.cycle}" if interval.cycle != NO_CYCLE else f"{file_label}-"
        if found is None:
            at = interval.start_time - recording.time[0]
            notes.append(f"{cycle_label}: friction stroke of joint {interval.joint} at {at:.2f} s has no "
                         "constant-velocity portion; left out")
            continue
        first, stop = rows.start + found.start, rows.start + found.stop
        time = recording.time[first:stop]
        segments.append(FrictionSegment(
            interval.joint, interval.cycle, cycle_label, float(interval.speed_fraction), int(interval.direction),
            float(time[0]), float(time[-1]),
            float((offset + 0.5 * (time[0] + time[-1]) - recording.time[0]) / 60.0),
            float(np.mean(recording.qd[first:stop, j])), float(np.mean(recording.tau[first:stop, j])),
            float(np.mean(recording.tau[first:stop, j])), stop - first))
    return segments, notes


def friction_analysis(recordings: Sequence[Recording], intervals: Sequence[Sequence[StageInterval]],
                      robot: RobotDescription, gravity: str = "auto",
                      tolerance: float = DEFAULT_PLATEAU_TOLERANCE, rest_threshold: float = REST_THRESHOLD,
                      offsets=None) -> FrictionAnalysis:
    """Friction segments of every recording, with inertia and gravity removed per joint and cycle.

    For every joint and cycle, :func:`fit_joint_friction` is fitted to the samples of its friction
    strokes faster than ``rest_threshold`` [rad/s]; with ``gravity`` ``"auto"`` the gravity terms are
    included for joints whose axis is not vertical at the stage's pose (:func:`horizontal_joints`),
    ``"always"`` for all, ``"never"`` for none. Each segment's ``friction`` is then its measured
    torque less the fit's inertia and gravity torque, averaged over the plateau.

    Parameters
    ----------
    recordings : sequence of Recording
        Joints in ``robot``'s order or matched by name.
    intervals : sequence of sequences of StageInterval
        The stages of each recording (e.g. ``read_stage_table(...).stages``).
    """
    validators.text(gravity, "gravity", DynIdError, list(GRAVITY_MODES))
    offsets = test_time_offsets(recordings) if offsets is None else offsets
    several = len(recordings) > 1
    all_segments, fits, notes = [], [], []
    for index, (recording, stages, offset) in enumerate(zip(recordings, intervals, offsets)):
        recording = recording.reorder(robot.joint_names)
        file_label = f"file {index + 1} " if several else ""
        segments, found_notes = extract_friction_segments(recording, stages, tolerance, offset, file_label)
        notes += found_notes
        strokes = friction_intervals(stages)
        for joint, label in dict.fromkeys((s.joint, s.label) for s in segments):
            j, = index_in(robot.joint_names, [joint], "friction segments", f"robot {robot.name!r}")
            mine = [i for i in strokes if i.joint == joint and
                    (f"{file_label}cycle {i.cycle}" if i.cycle != NO_CYCLE else f"{file_label}-") == label]
            rows = np.concatenate([np.arange(s.start, s.stop) for s in (_in_interval(recording.time, i) for i in mine)])
            rows = rows[np.abs(recording.qd[rows, j]) >= rest_threshold]
            pose = recording.q[rows[len(rows) // 2]]
            horizontal = bool(horizontal_joints(robot, pose)[j])
            with_gravity = gravity == "always" or (gravity == "auto" and not horizontal)
            try:
                fit = fit_joint_friction(recording.q[rows, j], recording.qd[rows, j], recording.qdd[rows, j],
                                         recording.tau[rows, j], joint, label, with_gravity, horizontal)
            except DataError as error:
                notes.append(f"{error}; its friction is the measured torque")
                continue
            fits.append(fit)
            for k, segment in enumerate(segments):
                if (segment.joint, segment.label) != (joint, label):
                    continue
                window = (recording.time >= segment.start_time) & (recording.time <= segment.end_time)
                removed = fit.removed(recording.q[window, j], recording.qdd[window, j])
                segments[k] = dataclasses.replace(segment, friction=float(np.mean(recording.tau[window, j] - removed)))
        all_segments += segments
    return FrictionAnalysis(tuple(all_segments), tuple(fits), tuple(notes))


@dataclasses.dataclass(frozen=True)
class FrictionDrift:
    """One joint's friction at one speed level against elapsed time, and its double-exponential fit.

    ``level`` [1 of the velocity limit]; ``elapsed_minutes`` (M,) [min]; ``friction`` (M,) [N m]: per
    cycle, half the difference of the mean friction in the two directions (the magnitude of one
    direction where only one was measured); ``fit`` None when it could not be made (``note`` says why).
    """

    joint: str
    level: float
    labels: tuple[str, ...]
    elapsed_minutes: np.ndarray
    friction: np.ndarray
    fit: DoubleExponentialFit | None
    note: str = ""

    def to_dict(self) -> dict:
        return {"joint": self.joint, "speed_fraction": self.level, "cycles": list(self.labels),
                "elapsed_min": self.elapsed_minutes.tolist(), "friction": self.friction.tolist(),
                "fit": None if self.fit is None else self.fit.to_dict(), "note": self.note or None}


def friction_drift(analysis: FrictionAnalysis, level: float = DEFAULT_FRICTION_SPEED) -> list[FrictionDrift]:
    """Per joint, the friction at the speed level nearest ``level`` in each cycle, fitted over time.

    A joint measured in fewer than 6 cycles gets no fit (a note says so), as does one whose fit
    does not converge.
    """
    drifts = []
    for joint in analysis.joints():
        mine = [s for s in analysis.segments if s.joint == joint]
        levels = sorted({s.level for s in mine})
        chosen = min(levels, key=lambda value: (abs(value - level), -value))
        by_cycle: dict[str, list[FrictionSegment]] = {}
        for segment in mine:
            if segment.level == chosen:
                by_cycle.setdefault(segment.label, []).append(segment)
        labels, times, values = [], [], []
        for label, group in by_cycle.items():
            up = [s.friction for s in group if s.direction > 0]
            down = [s.friction for s in group if s.direction < 0]
            value = 0.5 * (np.mean(up) - np.mean(down)) if up and down else abs(float(np.mean(up or down)))
            labels.append(label)
            times.append(np.mean([s.elapsed_minutes for s in group]))
            values.append(value)
        order = np.argsort(times)
        times, values = np.array(times)[order], np.array(values)[order]
        labels = tuple(np.array(labels)[order].tolist())
        fit, note = None, ""
        try:
            fit = fit_double_exponential(times, values)
        except (DataError, IdentificationError) as error:
            note = f"joint {joint}: no double-exponential fit ({error})"
        drifts.append(FrictionDrift(joint, chosen, labels, times, values, fit, note))
    return drifts
