"""A test's data cycle by cycle (METHODS.md sections 5 and 7): its clock, torque fits, per-cycle fits.

- :func:`test_time_offsets`: the samples of several recordings placed on one clock.
- :func:`torque_fit`: measured against predicted torque on a data segment, with the per-joint RMS
  [N m], RSD and relative RMSD over samples faster than a threshold [rad/s].
- :func:`cycle_segments` and :func:`identify_cycles`: the base parameters identified once per
  cycle (thesis per-cycle re-identification) with :func:`~robot_dynid.estimation.metrics.parameter_statistics`
  over all cycles and without the first ``k`` (the cold ones).
- :func:`cross_verification`: parameters of each cycle (or pooled over chosen cycles,
  :func:`pooled_fit`) predicting every cycle; the diagonal is the self-verification.

Numbers only: :mod:`robot_dynid.reports` draws and writes them.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np

from robot_dynid.errors import DataError, IdentificationError
from robot_dynid.estimation.analysis_defaults import DEFAULT_WARM_CYCLES
from robot_dynid.estimation.estimators import ESTIMATORS
from robot_dynid.estimation.identification import IdentificationSettings, identify
from robot_dynid.estimation.normal_equations import iter_regressor_chunks
from robot_dynid.estimation.metrics import ParameterStatistics, ValidationReport, parameter_statistics, \
    validation_report
from robot_dynid.estimation.progress import Progress, no_progress
from robot_dynid.estimation.validation import ModelValidation, validate_model
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.recordings.conditioning import conditioning_from_provenance
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.stages import NO_CYCLE
from robot_dynid.stored_columns import stacked

__all__ = ["test_time_offsets", "TorqueFit", "torque_fit", "CycleSegment", "cycle_segments", "CycleIdentification",
           "settings_of", "identify_cycles", "pooled_fit", "CrossVerification", "cross_verification"]


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
    measured, predicted : ndarray or StoredColumn, shape (N, n)
        [N m] (stored columns for a long recording's: :mod:`robot_dynid.stored_columns`).
    validation : ModelValidation
        Per-joint RMS [N m], RSD, relative RMSD over ``|qd| >= speed_threshold`` [rad/s], NRMS.
    """

    segment: str
    time: np.ndarray
    measured: np.ndarray
    predicted: np.ndarray
    validation: ModelValidation

    def residual(self, rows) -> np.ndarray:
        """``predicted - measured`` [N m] at ``rows`` (an index or slice of the samples)."""
        return np.asarray(self.predicted[rows]) - np.asarray(self.measured[rows])

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
    predicted = stacked([model.torque(r.q, r.qd, r.qdd, temperature=r.temperature, elapsed=r.elapsed)
                         for r in recordings])
    time = np.concatenate([offset + r.time - r.time[0] for offset, r in zip(offsets, recordings)])
    return TorqueFit(segment, time, stacked([r.tau for r in recordings]), predicted, validation)


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
    """Identification settings that give ``model``'s structure (friction, its side, armature, offset; the
    registry's ``batch_method``: OLS for an RLS model), without poorly-excited warnings (the report shows
    every cycle's std)."""
    return IdentificationSettings(friction=model.friction, armature=model.armature, offset=model.offset,
                                  method=ESTIMATORS[model.method].batch_method,
                                  poorly_excited_torque_fraction=math.inf, friction_side=model.friction_side)


def identify_cycles(segments: Sequence[CycleSegment], model: DynamicModel, skip: int = DEFAULT_WARM_CYCLES,
                    progress: Progress = no_progress) -> CycleIdentification:
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
                       speed_threshold: float, progress: Progress = no_progress) -> CrossVerification:
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
