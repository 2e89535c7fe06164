"""The analyses of a test (METHODS.md sections 5 and 7) behind ``robot-dynid report`` and ``compare``.

Numbers only (no plotting, no printing); :mod:`robot_dynid.reports.figures` draws them and
:mod:`robot_dynid.reports.html` writes them out.

- :func:`torque_fit`: measured against predicted torque on a data segment, with the per-joint RMS
  [N m], RSD and relative RMSD over samples faster than a threshold [rad/s].
- :func:`cycle_segments` and :func:`identify_cycles`: the base parameters identified once per
  cycle (thesis per-cycle re-identification) with :func:`~robot_dynid.estimation.metrics.parameter_statistics`
  over all cycles and without the first ``k`` (the cold ones).
- :func:`cross_verification`: parameters of each cycle (or pooled over chosen cycles,
  :func:`pooled_fit`) predicting every cycle; the diagonal is the self-verification.
- :func:`extract_friction_segments`: the constant-velocity portion of every friction sub-stage
  (joint, speed level, direction); :func:`fit_joint_friction` the thesis's per-joint least squares
  ``tau = Im q'' - mPx sin q - mPy cos q + f1 sgn q' + f2 q' + f3 q'|q'| + f4 q'^3`` of one joint's
  friction stage, which removes gravity (and inertia) from joints whose motion is not horizontal;
  :func:`friction_analysis` both over a whole test and :func:`friction_drift` the friction at one
  speed level against elapsed time with the double-exponential fit
  (:func:`~robot_dynid.model.friction_drift.fit_double_exponential`, t in minutes).
- :func:`compare_models`: several models side by side, each base parameter's difference to the first
  model in units of the combined standard deviation ``z = (b - a) / sqrt(s_a^2 + s_b^2)``, significant
  when ``|z|`` exceeds the two-sided normal quantile of the level.

Test time: the samples of several recordings are placed on one clock, :func:`test_time_offsets`.
"""
from __future__ import annotations

import dataclasses
import logging
import math
from typing import Callable, Iterable, Sequence

import numpy as np
from scipy.stats import norm

from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation.estimators import column_scales
from robot_dynid.estimation.identification import IdentificationSettings, identify, iter_regressor_chunks
from robot_dynid.estimation.metrics import ParameterStatistics, ValidationReport, parameter_statistics, \
    validation_report
from robot_dynid.estimation.validation import ModelValidation, validate_model
from robot_dynid.recordings.conditioning import conditioning_from_provenance
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import friction_model
from robot_dynid.model.friction_drift import DoubleExponentialFit, fit_double_exponential
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stages import NO_CYCLE, StageInterval

logger = logging.getLogger(__name__)

DEFAULT_PLATEAU_TOLERANCE = 0.05
"""[1] a friction sample is on the constant-velocity plateau when its speed is within this fraction
of the plateau speed."""
MIN_PLATEAU_SAMPLES = 5
DEFAULT_WARM_CYCLES = 5
"""The first cycles left out of the 'warm' statistics (thesis: friction settles after 5-10 cycles)."""
DEFAULT_FRICTION_SPEED = 0.6
"""[1] speed level (fraction of the velocity limit) whose friction is followed over time (thesis Table 5.6)."""
DEFAULT_SIGNIFICANCE = 0.05
VERTICAL_AXIS_COSINE = math.cos(math.radians(1.0))
"""A joint axis within 1 deg of gravity moves horizontally: gravity exerts no torque about it."""
GRAVITY_MODES = ("auto", "always", "never")
_POLYNOMIAL = friction_model("polynomial")
FRICTION_COEFFICIENTS = _POLYNOMIAL.coefficient_names


def _identity(iterable, description="", total=None):
    return iterable


Progress = Callable[..., Iterable]
"""``progress(iterable, description, total)`` wraps a loop (e.g. in a progress bar); default: no bar."""


# --------------------------------------------------------------------------- test time
def test_time_offsets(recordings: Sequence[Recording]) -> np.ndarray:
    """Where each recording starts on the test clock [s] (0 = the first sample of the first).

    A recording whose first sample follows the previous one's last on its own clock (bags with ROS
    time) keeps its distance; one that starts over (CSV files from 0) continues right after the
    previous one's end.

    Returns
    -------
    ndarray, shape (len(recordings),)
        ``offset_k``: a sample at time ``t`` of recording k is at ``offset_k + t - recording.time[0]``.
    """
    offsets, end = [], None
    for recording in recordings:
        first, last = float(recording.time[0]), float(recording.time[-1])
        if end is None:
            offsets.append(0.0)
            origin = first
        elif first > end[1]:
            offsets.append(first - origin)
        else:
            offsets.append(end[0])
        end = (offsets[-1] + last - first, last)
    return np.array(offsets)


# --------------------------------------------------------------------------- torque fits
@dataclasses.dataclass(frozen=True)
class TorqueFit:
    """Measured against predicted torque on one data segment.

    Attributes
    ----------
    segment : str
        What the data are (``"identification"``, ``"held-out"``).
    time : ndarray, shape (N,)
        [s] on the test clock of the segment's recordings (:func:`test_time_offsets`).
    measured, predicted : ndarray, shape (N, n)
        [N m].
    validation : ModelValidation
        Per-joint RMS [N m], RSD, relative RMSD over ``|qd| >= speed_threshold`` [rad/s], NRMS.
    """

    segment: str
    time: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    validation: ModelValidation

    @property
    def residual(self) -> np.ndarray:
        """``predicted - measured`` (N, n) [N m]."""
        return self.predicted - self.measured

    def to_dict(self) -> dict:
        return {"segment": self.segment, **self.validation.to_dict()}


def torque_fit(model: DynamicModel, recordings: Sequence[Recording], segment: str,
               speed_threshold: float, offsets=None) -> TorqueFit:
    """The model's torques on ``recordings`` against the measured ones (``offsets`` [s]: their
    starts on the test clock, default :func:`test_time_offsets`); its metrics filter measured and
    predicted torques alike with the low-pass the model was identified with (its provenance)."""
    conditioning = conditioning_from_provenance(model.provenance)
    validation = validate_model(model, recordings, speed_threshold,
                                None if conditioning is None else conditioning.lowpass,
                                "" if conditioning is None else conditioning.describe())
    recordings = [recording.reorder(model.joint_names) for recording in recordings]
    offsets = test_time_offsets(recordings) if offsets is None else offsets
    predicted = np.vstack([model.torque(r.q, r.qd, r.qdd, temperature=r.temperature, elapsed=r.elapsed)
                           for r in recordings])
    time = np.concatenate([offset + r.time - r.time[0] for offset, r in zip(offsets, recordings)])
    return TorqueFit(segment, time, np.vstack([r.tau for r in recordings]), predicted, validation)


# --------------------------------------------------------------------------- per-cycle identification
@dataclasses.dataclass(frozen=True)
class CycleSegment:
    """The samples of one stage kind in one cycle of one recording.

    ``label`` names it (``"cycle 3"``, ``"file 2 cycle 3"`` with several recordings); ``elapsed``
    (N,) [s] is test time (:func:`test_time_offsets`).
    """

    label: str
    file_index: int
    cycle: int
    recording: Recording
    elapsed: np.ndarray

    @property
    def elapsed_minutes(self) -> float:
        """Mid time of the segment on the test clock [min]."""
        return float(0.5 * (self.elapsed[0] + self.elapsed[-1]) / 60.0)


def cycle_segments(recordings: Sequence[Recording], stage: str | Sequence[str] = "excitation",
                   offsets=None) -> list[CycleSegment]:
    """One segment per (recording, cycle) holding samples of ``stage``, in test-time order.

    Raises
    ------
    DataError
        A recording has no stage or cycle labels (naming it).
    """
    offsets = test_time_offsets(recordings) if offsets is None else offsets
    several = len(recordings) > 1
    segments = []
    for index, (recording, offset) in enumerate(zip(recordings, offsets)):
        if recording.stage is None or recording.cycle is None:
            raise DataError(f"{recording.source} has no stage markers or stage and cycle columns: per-cycle "
                            "analyses need them (cycles cannot be detected from the motion)")
        wanted = [stage] if isinstance(stage, str) else list(stage)
        in_stage = np.isin(recording.stage, wanted)
        for cycle in np.unique(recording.cycle[in_stage & (recording.cycle != NO_CYCLE)]):
            rows = in_stage & (recording.cycle == cycle)
            selected = recording.take(rows)
            label = f"file {index + 1} cycle {cycle}" if several else f"cycle {cycle}"
            segments.append(CycleSegment(label, index, int(cycle), selected,
                                         offset + selected.time - recording.time[0]))
    return segments


@dataclasses.dataclass(frozen=True)
class CycleIdentification:
    """Base parameters identified per cycle, with the thesis's statistics.

    Attributes
    ----------
    labels : tuple of str
        One per cycle (segment labels).
    elapsed_minutes : ndarray, shape (C,)
        Mid time of each cycle's segment on the test clock [min].
    models : tuple of DynamicModel
    names : tuple of str
        Base parameter names (r,).
    values, std : ndarray, shape (C, r)
        Estimates and their standard deviations.
    statistics : ParameterStatistics
        Over all cycles.
    warm_statistics : ParameterStatistics or None
        Without the first ``skipped`` cycles; None when fewer than 2 would remain.
    skipped : int
    """

    labels: tuple[str, ...]
    elapsed_minutes: np.ndarray
    models: tuple[DynamicModel, ...]
    names: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    statistics: ParameterStatistics
    warm_statistics: ParameterStatistics | None
    skipped: int
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"cycles": list(self.labels), "notes": list(self.notes), "elapsed_min": self.elapsed_minutes.tolist(),
                "names": list(self.names), "values": self.values.tolist(), "std": self.std.tolist(),
                "statistics": self.statistics.to_dict(), "skipped": self.skipped,
                "warm_statistics": None if self.warm_statistics is None else self.warm_statistics.to_dict()}


def settings_of(model: DynamicModel) -> IdentificationSettings:
    """Identification settings that give ``model``'s structure (friction, its side, armature, offset; OLS
    for an RLS model), without poorly-excited warnings (the report shows every cycle's std)."""
    return IdentificationSettings(friction=model.friction, armature=model.armature, offset=model.offset,
                                  method=model.method if model.method != "rls" else "ols",
                                  poorly_excited_torque_fraction=math.inf, friction_side=model.friction_side)


def identify_cycles(segments: Sequence[CycleSegment], model: DynamicModel, skip: int = DEFAULT_WARM_CYCLES,
                    progress: Progress = _identity) -> CycleIdentification:
    """Identify ``model``'s base parameters on every segment alone (same structure and base).

    Parameters
    ----------
    segments : sequence of CycleSegment
        At least one.
    model : DynamicModel
        Gives robot, friction model, columns and base parameters.
    skip : int
        Cycles left out at the start for ``warm_statistics`` (capped so that 2 remain).
    progress : callable
        Wraps the loop over segments (:data:`Progress`).

    A cycle whose data cannot identify the parameters (too few samples, a base parameter unidentifiable)
    is left out with a note.

    Raises
    ------
    DataError
        No cycle could be identified.
    """
    settings = settings_of(model)
    models, used, notes = [], [], []
    for segment in progress(segments, "identifying per cycle", len(segments)):
        try:
            models.append(identify(segment.recording, model.robot, settings, base=model.base,
                                   provenance={"segments": segment.label}))
            used.append(segment)
        except (IdentificationError, DataError) as error:
            notes.append(f"{segment.label} left out of the per-cycle fits: {error}")
    if not models:
        raise DataError("no cycle to identify: " + ("; ".join(notes) or "the data hold no cycle of the selected stage"))
    segments = used
    values = np.array([m.values for m in models])
    std = np.array([m.std for m in models])
    names = tuple(model.base.names)
    skipped = max(0, min(int(skip), len(models) - 2))
    warm = parameter_statistics(values[skipped:], names) if skipped > 0 else None
    return CycleIdentification(tuple(s.label for s in segments),
                               np.array([s.elapsed_minutes for s in segments]), tuple(models), names, values, std,
                               parameter_statistics(values, names), warm, skipped, tuple(notes))


def pooled_fit(segments: Sequence[CycleSegment], cycles: Sequence[int], model: DynamicModel) -> DynamicModel:
    """``model``'s structure identified on the segments of ``cycles`` pooled.

    Raises
    ------
    DataError
        A requested cycle has no segment (naming it and the available ones).
    """
    chosen = [segment for segment in segments if segment.cycle in set(cycles)]
    missing = sorted(set(cycles) - {segment.cycle for segment in chosen})
    if missing:
        raise DataError(f"pooled fit: no cycle {missing} in the data; available cycles: "
                        f"{sorted({segment.cycle for segment in segments})}")
    return identify([segment.recording for segment in chosen], model.robot, settings_of(model), base=model.base,
                    provenance={"segments": f"cycles {list(cycles)} pooled"})


@dataclasses.dataclass(frozen=True)
class CrossVerification:
    """Parameters fitted on one data set (rows) predicting each cycle (columns).

    ``reports[i][k]`` holds the per-joint metrics of fit i on segment k; a row whose label is a
    column's is that cycle's self-verification.
    """

    fitted: tuple[str, ...]
    tested: tuple[str, ...]
    reports: tuple[tuple[ValidationReport, ...], ...]

    def matrix(self, metric: str = "relative_rmsd") -> np.ndarray:
        """(rows, columns): the metric's mean over the joints (nan-aware)."""
        return np.array([[float(np.nanmean(getattr(report, metric))) for report in row] for row in self.reports])

    def to_dict(self) -> dict:
        return {"fitted": list(self.fitted), "tested": list(self.tested),
                "speed_threshold": self.reports[0][0].speed_threshold,
                "mean_relative_rmsd": self.matrix("relative_rmsd").tolist(),
                "mean_rms": self.matrix("rms").tolist(),
                "relative_rmsd": [[report.relative_rmsd.tolist() for report in row] for row in self.reports]}


def cross_verification(fits: Sequence[tuple[str, DynamicModel]], segments: Sequence[CycleSegment],
                       speed_threshold: float, progress: Progress = _identity) -> CrossVerification:
    """Every fit's prediction of every segment (thesis self- and cross-verification).

    The fits share one base-parameter structure, so each segment's base regressor is computed
    once and every fit's prediction is ``Y_base @ values``.
    """
    if not fits or not segments:
        raise DataError("cross-verification needs at least one fit and one segment")
    first = fits[0][1]
    regressor = first.regressor
    values = np.array([model.values for _, model in fits])
    columns = []
    for segment in progress(segments, "cross-verification", len(segments)):
        recording = segment.recording.reorder(first.joint_names)
        Y = np.concatenate([chunk for chunk, _ in iter_regressor_chunks(regressor, first.base, recording, 5000)])
        predictions = np.einsum("kjr,mr->mkj", Y, values)
        columns.append([validation_report(prediction, recording.tau, recording.qd, speed_threshold,
                                          joint_names=first.joint_names) for prediction in predictions])
    reports = tuple(tuple(columns[k][i] for k in range(len(segments))) for i in range(len(fits)))
    return CrossVerification(tuple(label for label, _ in fits), tuple(s.label for s in segments), reports)


# --------------------------------------------------------------------------- friction stages
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
        Fewer samples than unknowns, or the columns are rank deficient (naming the joint).
    """
    q, qd, qdd, tau = (np.asarray(a, dtype=float) for a in (q, qd, qdd, tau))
    columns = [qdd[:, None]] + ([-np.sin(q)[:, None], -np.cos(q)[:, None]] if with_gravity else []) \
        + [friction_columns(qd)]
    A = np.hstack(columns)
    if A.shape[0] <= A.shape[1]:
        raise DataError(f"joint {joint} ({label}): {A.shape[0]} friction samples for {A.shape[1]} unknowns")
    scale = column_scales(np.sum(A**2, axis=0))
    solution, _, rank, _ = np.linalg.lstsq(A / scale, tau, rcond=None)
    if rank < A.shape[1]:
        raise DataError(f"joint {joint} ({label}): its friction stage does not determine the "
                        f"{A.shape[1]} parameters of the friction fit (rank {rank})")
    solution = solution / scale
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
        j = recording.joint_names.index(interval.joint)
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
                      tolerance: float = DEFAULT_PLATEAU_TOLERANCE, rest_threshold: float = 0.02,
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
    if gravity not in GRAVITY_MODES:
        raise DynIdError(f"gravity must be one of {list(GRAVITY_MODES)}, got {gravity!r}")
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
            j = robot.joint_names.index(joint)
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


def model_friction_torque(model: DynamicModel, joint: str, speed) -> np.ndarray | None:
    """The model's friction torque of ``joint`` at ``speed`` (M,) [rad/s] (the friction columns of
    its regressor times their base values; warm, for a time drift), [N m]; None without friction or
    when it drifts with temperature."""
    regressor = model.regressor
    friction = regressor.slices["friction"]
    if friction.stop == friction.start or model.friction.needs_temperature:
        return None
    j = model.joint_names.index(joint)
    speed = np.asarray(speed, dtype=float)
    standard = np.zeros(regressor.n_parameters)
    standard[list(model.base.independent)] = model.values
    keep = np.zeros(regressor.n_parameters, dtype=bool)
    keep[friction] = True
    standard[~keep] = 0.0
    qd = np.zeros((speed.size, model.robot.n_joints))
    qd[:, j] = speed
    zeros = np.zeros_like(qd)
    elapsed = np.full(speed.size, 1e9) if model.friction.needs_elapsed else None
    return regressor.torque(standard, zeros, qd, zeros, elapsed=elapsed)[:, j]


# --------------------------------------------------------------------------- model comparison
@dataclasses.dataclass(frozen=True)
class ModelComparison:
    """Several models' base parameters against the first one's.

    Attributes
    ----------
    labels : tuple of str
        One per model (m,), the first the reference.
    names : tuple of str
        Base parameter names (r,).
    values, std : ndarray, shape (m, r)
    z : ndarray, shape (m - 1, r)
        ``(value_i - value_0) / sqrt(std_i^2 + std_0^2)``; +-inf where both std are 0 and the
        values differ, 0 where they agree.
    significant : ndarray of bool, shape (m - 1, r)
        ``|z| > critical``.
    level : float
        Two-sided significance level per parameter [1].
    critical : float
        ``Phi^-1(1 - level / 2)``.
    """

    labels: tuple[str, ...]
    names: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    z: np.ndarray
    significant: np.ndarray
    level: float
    critical: float

    def to_dict(self) -> dict:
        return {
            "models": list(self.labels), "reference": self.labels[0], "level": self.level,
            "critical_z": self.critical,
            "expected_false_positives": self.level * len(self.names),
            "parameters": [
                {"name": name, "values": self.values[:, k].tolist(), "std": self.std[:, k].tolist(),
                 "differences": [{"model": self.labels[i + 1],
                                  "difference": float(self.values[i + 1, k] - self.values[0, k]),
                                  "combined_std": float(math.hypot(self.std[i + 1, k], self.std[0, k])),
                                  "z": float(self.z[i, k]), "significant": bool(self.significant[i, k])}
                                 for i in range(len(self.labels) - 1)],
                 "significant": bool(self.significant[:, k].any())}
                for k, name in enumerate(self.names)],
        }


def compare_models(models: Sequence[DynamicModel], labels: Sequence[str],
                   level: float = DEFAULT_SIGNIFICANCE) -> ModelComparison:
    """Compare base parameters of models of one structure (module docstring).

    Raises
    ------
    DynIdError
        Fewer than two models, a level outside (0, 1), or models whose base parameters differ
        (naming the model and the first difference).
    """
    if len(models) < 2:
        raise DynIdError(f"compare needs at least two models, got {len(models)}")
    if not 0.0 < level < 1.0:
        raise DynIdError(f"significance level must be in (0, 1), got {level!r}")
    reference = models[0]
    for label, model in zip(labels[1:], models[1:]):
        if tuple(model.joint_names) != tuple(reference.joint_names):
            raise DynIdError(f"{label}: joints {list(model.joint_names)} differ from {labels[0]}'s "
                             f"{list(reference.joint_names)}")
        if tuple(model.base.names) != tuple(reference.base.names):
            extra = [n for n in model.base.names if n not in reference.base.names]
            lacking = [n for n in reference.base.names if n not in model.base.names]
            raise DynIdError(f"{label}: base parameters differ from {labels[0]}'s (friction {model.friction.name} "
                             f"vs {reference.friction.name}; only in {label}: {extra[:5]}, only in {labels[0]}: "
                             f"{lacking[:5]}); compare models of one structure")
    values = np.array([m.values for m in models])
    std = np.array([m.std for m in models])
    difference = values[1:] - values[0]
    combined = np.hypot(std[1:], std[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(combined > 0.0, difference / np.where(combined > 0.0, combined, 1.0),
                     np.where(difference == 0.0, 0.0, np.sign(difference) * np.inf))
    critical = float(norm.ppf(1.0 - level / 2.0))
    return ModelComparison(tuple(labels), tuple(reference.base.names), values, std, z, np.abs(z) > critical,
                           float(level), critical)
