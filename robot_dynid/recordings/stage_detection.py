"""Stages detected from the motion of a recording that has no stage markers or stage column.

:func:`detect_stages` finds, from the joint velocities alone:

- ``"rest"``: every joint slower than its rest threshold for at least ``min_rest_duration``;
- ``"friction"``: exactly one joint moving, at a speed constant within ``plateau_tolerance``
  (relative) for at least ``min_plateau_duration``, the others at rest; reported with the
  joint, the speed as a fraction of its velocity limit and the direction (+1 / -1);
- ``"excitation"``: two or more joints moving, for at least ``min_motion_duration``. What lies
  between two such motions is bridged unless it is a detected rest or friction plateau (or a
  time gap): short stops, and one joint moving alone at a varying speed (as when the other
  joints of a cycloidal move have already arrived). At its ends the motion extends over one
  joint moving alone (not on a plateau), as when one joint of a rest-to-rest move starts
  before the others or arrives after them, so it meets the rest before and after it. Warm-up
  and validation motions, and transitions that move two or more joints (into a friction pose,
  say), are detected as excitation too: the motion alone does not tell them apart.

Accelerations between friction plateaus and motions too short for the minimum durations
belong to no detected stage. Cycles cannot be detected: detected stages have cycle -1.

:func:`label_from_motion` labels a :class:`~robot_dynid.recordings.recording.Recording` without stage
labels from the detected stages, and :func:`select_stages` selects stages and cycles of a
recording, detecting the stages first when it has no labels; the ``robot-dynid identify`` and
``robot-dynid stages`` commands go through these.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.signal_processing import (STAGE_GAP_STEPS, check_strictly_increasing, gap_steps,
                                                      median_step)
from robot_dynid.recordings.stages import (STAGE_KINDS, StageInterval, check_stage_label,
                                           label_samples)
from robot_dynid.stored_columns import RowsWriter, column_pieces, is_stored, piece_ranges

__all__ = ["REST_THRESHOLD", "REST_THRESHOLD_FRACTION", "DEFAULT_PLATEAU_TOLERANCE", "DETECTED_KINDS", "detect_stages",
           "default_rest_threshold", "describe_detection", "label_from_motion", "StageSelection", "select_stages"]

logger = logging.getLogger(__name__)

REST_THRESHOLD = 0.02
"""Default rest threshold [rad/s] of stage detection: above the noise of measured joint
velocities (a few mrad/s after the 0.1 s smoothing) and below the protocol's slowest friction
level (5 % of the velocity limit: 0.1 rad/s at a 2 rad/s limit)."""

REST_THRESHOLD_FRACTION = 0.02
"""Cap of the default rest threshold as a fraction of a joint's velocity limit [1], so that
slow joints (the curtain-wall arm's 0.2 rad/s) keep their 5 % friction level above it."""

DEFAULT_PLATEAU_TOLERANCE = 0.05
"""[1] the relative speed variation allowed on a constant-speed plateau: of a detected friction stage
(:func:`detect_stages`) and of the part of a friction stroke its friction is measured on
(:func:`robot_dynid.estimation.friction_stages.plateau`)."""
DETECTED_KINDS = ("rest", "friction", "excitation")
"""The stage kinds :func:`detect_stages` reports."""


def _runs(mask: np.ndarray, breaks: np.ndarray) -> list[tuple[int, int]]:
    """(first, stop) index pairs of the runs of True in ``mask`` (N,), split where
    ``breaks[k]`` (N - 1,) marks a time gap between samples k and k + 1."""
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    runs = []
    for first, stop in zip(starts, stops):
        cuts = np.flatnonzero(breaks[first:stop - 1]) + first + 1
        bounds = np.concatenate(([first], cuts, [stop]))
        runs.extend((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))
    return runs


def _odd_window(duration: float, dt: float) -> int:
    return 2 * int(round(duration / (2.0 * dt))) + 1


def detect_stages(time, qd, velocity_limits, rest_threshold=REST_THRESHOLD, *, joint_names=None,
                  smoothing_window: float = 0.1, flatness_window: float = 0.2,
                  plateau_tolerance: float = DEFAULT_PLATEAU_TOLERANCE, min_rest_duration: float = 0.5,
                  min_plateau_duration: float = 0.25,
                  min_motion_duration: float = 1.0) -> list[StageInterval]:
    """Detect rest, friction plateaus and multi-joint motion from joint velocities.

    Velocities are first smoothed by a centred moving average over ``smoothing_window``. A
    joint moves where ``|qd_smooth| > rest_threshold``. A sample of a single moving joint lies
    on a plateau when, over the centred ``flatness_window`` around it, the smoothed velocity
    varies by at most ``max(plateau_tolerance |qd_smooth|, rest_threshold)``; plateau runs are
    then widened by half the flatness window on each side (within the single-joint motion),
    which puts their ends within about ``tolerance / acceleration`` of the true ones. See the
    module docstring for the stage rules. Window lengths are converted to samples with the
    median sampling interval; time gaps (steps over
    :data:`~robot_dynid.recordings.signal_processing.STAGE_GAP_STEPS` median intervals) split every stage.

    Parameters
    ----------
    time : array_like, shape (N,)
        Sample times [s], strictly increasing.
    qd : array_like, shape (N, n)
        Joint velocities [rad/s], finite.
    velocity_limits : array_like, shape (n,)
        Velocity limit per joint [rad/s], > 0; friction speeds are reported as fractions of it.
    rest_threshold : float or array_like, shape (n,)
        Speed below which a joint is at rest [rad/s], > 0. Must lie above the velocity noise
        and below the slowest friction plateau (see :func:`default_rest_threshold`).
    joint_names : sequence of str, optional
        Names reported for friction plateaus; default ``"joint1"``, ``"joint2"``, ...
    smoothing_window, flatness_window : float
        [s], > 0. The defaults fit the protocol's shortest cruise (``friction_min_plateau``,
        0.3 s): the moving average blurs 0.05 s of each end, which leaves a whole 0.2 s
        flatness window on it.
    plateau_tolerance : float
        Relative speed variation allowed on a plateau [1], > 0.
    min_rest_duration, min_plateau_duration, min_motion_duration : float
        Shortest rest, friction plateau and multi-joint motion reported [s], > 0. The default
        0.25 s plateau keeps the protocol's 0.3 s cruises (detected about as long: the widening
        and the ends of the ramps within the tolerance make up for the blur).

    Returns
    -------
    list of StageInterval
        Sorted by start time, with ``start_time`` / ``end_time`` the times of the first and
        last sample of each stage and ``cycle`` -1.
    """
    windows = {"smoothing_window": smoothing_window, "flatness_window": flatness_window,
               "plateau_tolerance": plateau_tolerance, "min_rest_duration": min_rest_duration,
               "min_plateau_duration": min_plateau_duration,
               "min_motion_duration": min_motion_duration}
    time, qd, limits, threshold, names = _checked_inputs(time, qd, velocity_limits, rest_threshold, joint_names,
                                                         windows)
    dt = median_step(time)
    breaks = gap_steps(time, STAGE_GAP_STEPS)
    speed = _smoothed_speed(qd, _odd_window(smoothing_window, dt))
    moving = np.zeros(qd.shape, dtype=bool)
    for start, stop, piece in column_pieces(speed):
        moving[start:stop] = np.abs(piece) > threshold
    n_moving = moving.sum(axis=1)

    claimed = np.zeros(time.size, dtype=bool)
    stages = _rest_stages(time, n_moving, breaks, min_rest_duration, claimed)
    stages += _friction_stages(time, speed, moving, n_moving, breaks, limits, threshold, names,
                               _odd_window(flatness_window, dt), plateau_tolerance, min_plateau_duration, claimed)
    stages += _excitation_stages(time, n_moving, breaks, claimed, min_motion_duration)
    stages.sort(key=lambda s: s.start_time)
    logger.info("detected %d stages (%s) in %.1f s of data", len(stages),
                {kind: sum(s.kind == kind for s in stages) for kind in STAGE_KINDS
                 if any(s.kind == kind for s in stages)}, time[-1] - time[0])
    return stages


def _smoothed_speed(qd, window: int):
    """``qd`` (N, n) [rad/s] averaged over ``window`` samples (odd; the ends' windows padded with the first and
    last sample), a piece of rows at a time with the window's half on either side (a running sum's rounding stays
    within its piece): an array, or a StoredColumn for a stored ``qd`` (:mod:`robot_dynid.stored_columns`)."""
    from scipy.ndimage import uniform_filter1d      # here: a command starts faster
    n, half = len(qd), window // 2
    speed = RowsWriter(qd.shape, is_stored(qd))
    for start, stop in piece_ranges(n):
        first, last = max(0, start - half), min(n, stop + half)
        smooth = uniform_filter1d(np.asarray(qd[first:last]), window, axis=0, mode="nearest")
        speed.put(start, stop, smooth[start - first:stop - first])
    return speed.result()


def _checked_inputs(time, qd, velocity_limits, rest_threshold, joint_names, windows: dict):
    """``(time (N,), qd (N, n), velocity limits (n,), rest thresholds (n,), joint names)`` of
    :func:`detect_stages`, checked (``windows``: its durations [s] and plateau tolerance [1] by name, each > 0);
    DataError naming the argument otherwise."""
    time = validators.array(time, "time", shape=(None,), axes=("samples",), min_length=3, unit="s")
    if not is_stored(qd) or not qd.all_finite or qd.shape[0] != time.size:    # checked, or read for the message
        qd = validators.array(qd, "qd", shape=(time.size, None), axes=("samples", "joints"), columns=joint_names,
                              unit="rad/s")
    check_strictly_increasing(time)
    n_joints = qd.shape[1]
    limits = validators.per_joint(velocity_limits, n_joints, "velocity_limits", DataError, "rad/s",
                                  joint_names=joint_names)
    threshold = validators.per_joint(rest_threshold, n_joints, "rest_threshold", DataError, "rad/s",
                                     joint_names=joint_names)
    for name, value in windows.items():
        validators.positive(value, name, DataError, "1" if name == "plateau_tolerance" else "s")
    names = tuple(joint_names) if joint_names is not None else \
        tuple(f"joint{j + 1}" for j in range(n_joints))
    if len(names) != n_joints:
        raise DataError(f"joint_names has {len(names)} names, expected {n_joints} (columns of qd)")
    return time, qd, limits, threshold, names


def _span(time: np.ndarray, first: int, stop: int) -> tuple[float, float]:
    """The times [s] of the first and last sample of the run [first, stop)."""
    return float(time[first]), float(time[stop - 1])


def _rest_stages(time: np.ndarray, n_moving: np.ndarray, breaks: np.ndarray, min_rest_duration: float,
                 claimed: np.ndarray) -> list[StageInterval]:
    """The rest stages: runs of no joint moving (``n_moving`` (N,) zero) of at least ``min_rest_duration`` [s];
    their samples are marked in ``claimed`` (N,)."""
    stages = []
    for first, stop in _runs(n_moving == 0, breaks):
        start_time, end_time = _span(time, first, stop)
        if end_time - start_time >= min_rest_duration:
            stages.append(StageInterval("rest", start_time, end_time))
            claimed[first:stop] = True
    return stages


def _friction_stages(time: np.ndarray, speed: np.ndarray, moving: np.ndarray, n_moving: np.ndarray,
                     breaks: np.ndarray, limits: np.ndarray, threshold: np.ndarray, names: tuple, flatness: int,
                     plateau_tolerance: float, min_plateau_duration: float,
                     claimed: np.ndarray) -> list[StageInterval]:
    """The friction stages, joint by joint: plateaus of one joint moving alone whose smoothed ``speed`` (N, n)
    [rad/s] varies within the tolerance over ``flatness`` samples, widened by half of them, of at least
    ``min_plateau_duration`` [s]; their samples are marked in ``claimed`` (N,)."""
    from scipy.ndimage import maximum_filter1d, minimum_filter1d   # here: a command starts faster
    stages = []
    half = flatness // 2
    for j in range(speed.shape[1]):
        alone = moving[:, j] & (n_moving == 1)
        variation = maximum_filter1d(speed[:, j], flatness, mode="nearest") - \
            minimum_filter1d(speed[:, j], flatness, mode="nearest")
        tolerance = np.maximum(plateau_tolerance * np.abs(speed[:, j]), threshold[j])
        for core_first, core_stop in _runs(alone & (variation <= tolerance), breaks):
            first, stop = _widen(core_first, core_stop, half, alone, breaks)
            start_time, end_time = _span(time, first, stop)
            if end_time - start_time < min_plateau_duration:
                continue
            velocity = float(np.median(speed[core_first:core_stop, j]))
            stages.append(StageInterval("friction", start_time, end_time, joint=names[j],
                                        speed_fraction=abs(velocity) / limits[j],
                                        direction=1 if velocity > 0.0 else -1))
            claimed[first:stop] = True
    return stages


def _excitation_stages(time: np.ndarray, n_moving: np.ndarray, breaks: np.ndarray, claimed: np.ndarray,
                       min_motion_duration: float) -> list[StageInterval]:
    """The excitation stages: runs of two or more joints moving, bridged over what no rest or friction stage
    ``claimed`` (N,) and no time gap breaks, extended at their ends over one unclaimed joint moving alone, of at
    least ``min_motion_duration`` [s]."""
    merged: list[list[int]] = []
    for first, stop in _runs(n_moving >= 2, breaks):
        if merged:
            previous_stop = merged[-1][1]
            bridgeable = (not claimed[previous_stop:first].any()
                          and not breaks[previous_stop - 1:first].any())
            if bridgeable:
                merged[-1][1] = stop
                continue
        merged.append([first, stop])
    unclaimed_alone = (n_moving == 1) & ~claimed
    stages = []
    for first, stop in merged:
        # one joint starting before the others or arriving after them: still the same motion
        first, stop = _widen(first, stop, time.size, unclaimed_alone, breaks)
        start_time, end_time = _span(time, first, stop)
        if end_time - start_time >= min_motion_duration:
            stages.append(StageInterval("excitation", start_time, end_time))
    return stages


def _widen(first: int, stop: int, by: int, allowed: np.ndarray,
           breaks: np.ndarray) -> tuple[int, int]:
    """Extend the run [first, stop) by up to ``by`` samples each side over ``allowed`` samples
    without crossing a time gap."""
    for _ in range(by):
        if first == 0 or not allowed[first - 1] or breaks[first - 1]:
            break
        first -= 1
    for _ in range(by):
        if stop == allowed.size or not allowed[stop] or breaks[stop - 1]:
            break
        stop += 1
    return first, stop


def default_rest_threshold(velocity_limits) -> np.ndarray:
    """Default rest threshold per joint [rad/s]: :data:`REST_THRESHOLD`, capped at
    :data:`REST_THRESHOLD_FRACTION` of the joint's velocity limit.

    Parameters
    ----------
    velocity_limits : array_like, shape (n,)
        [rad/s], > 0.

    Returns
    -------
    ndarray, shape (n,)
        [rad/s].
    """
    limits = np.asarray(velocity_limits, dtype=np.float64)
    return np.minimum(REST_THRESHOLD, REST_THRESHOLD_FRACTION * limits)


def describe_detection(source: str, stages: Sequence[StageInterval], rest_threshold) -> str:
    """One line saying that the stages of ``source`` were detected from the motion, with the
    rest threshold [rad/s] and the count per kind."""
    threshold = np.unique(np.round(np.atleast_1d(np.asarray(rest_threshold, float)), 12))
    threshold_text = (f"{threshold[0]:g}" if threshold.size == 1
                      else f"{threshold.min():g}-{threshold.max():g}")
    counts = ", ".join(f"{sum(s.kind == kind for s in stages)} {kind}" for kind in DETECTED_KINDS)
    return (f"no stage markers or stage column in {source}: stages detected from the motion "
            f"(rest below {threshold_text} rad/s; {counts}; warm-up and validation motion counts "
            "as excitation; no cycles)")


def label_from_motion(recording: Recording, velocity_limits, rest_threshold=None,
                      **options) -> tuple[Recording, list[StageInterval]]:
    """Label the samples of a recording with the stages :func:`detect_stages` finds.

    Parameters
    ----------
    recording : Recording
        With joint velocities ``qd`` (N, n) [rad/s].
    velocity_limits : array_like, shape (n,)
        [rad/s], in the order of ``recording.joint_names``.
    rest_threshold : float or array_like, shape (n,), optional
        [rad/s]; default :func:`default_rest_threshold` of the limits.
    **options
        Other keyword arguments of :func:`detect_stages` (windows, durations, tolerance).

    Returns
    -------
    recording : Recording
        The same samples with stage labels (``"rest"``, ``"friction"``, ``"excitation"``,
        ``""`` between stages) and no cycle labels: cycles cannot be detected.
    stages : list of StageInterval
        The detected stages (cycle -1), in time order.

    Raises
    ------
    DataError
        The recording has no velocities, or as :func:`detect_stages`.
    """
    if recording.qd is None:
        raise DataError(f"{recording.source} has no joint velocities (qd): stages cannot be "
                        "detected from the motion")
    if rest_threshold is None:
        rest_threshold = default_rest_threshold(velocity_limits)
    stages = detect_stages(recording.time, recording.qd, velocity_limits, rest_threshold,
                           joint_names=recording.joint_names, **options)
    stage, _ = label_samples(recording.time, stages)
    return recording.with_labels(stage, None), stages


@dataclass(frozen=True, eq=False)
class StageSelection:
    """What :func:`select_stages` returns.

    Attributes
    ----------
    recording : Recording
        The selected samples.
    detected : tuple of StageInterval or None
        The stages detected from the motion when the recording had no stage labels; None when
        its own labels were used.
    note : str
        ``""``, or a line saying the stages were detected (:func:`describe_detection`), for
        the user to see.
    """

    recording: Recording
    detected: tuple[StageInterval, ...] | None = None
    note: str = ""


def select_stages(recording: Recording, stage=None, cycles=None, *, velocity_limits,
                  rest_threshold=None, **options) -> StageSelection:
    """Samples of the given stages and cycles, detecting the stages when there are no labels.

    A recording with stage labels (markers in a bag, a stage column in a CSV file) is selected
    by them (:meth:`Recording.select`). Without labels, selecting by stage first labels the
    samples from the motion (:func:`label_from_motion`): ``"rest"``, ``"friction"`` (single-joint
    constant-speed plateaus) and ``"excitation"`` (motion of two or more joints, warm-up and
    validation included) can then be selected. Cycles cannot be detected.

    Parameters
    ----------
    recording : Recording
    stage : str or iterable of str, optional
        Stage kinds or labels to keep; None keeps all.
    cycles : int or iterable of int, optional
        Cycle indices to keep; None keeps all.
    velocity_limits : array_like, shape (n,)
        [rad/s], in the order of ``recording.joint_names`` (used only for detection).
    rest_threshold : float or array_like, shape (n,), optional
        [rad/s]; default :func:`default_rest_threshold`.
    **options
        Other keyword arguments of :func:`detect_stages`.

    Raises
    ------
    DataError
        Cycles requested from a recording without cycle labels; a stage that detection cannot
        give (warmup, validation, custom) requested from a recording without labels; or as
        :meth:`Recording.select` and :func:`detect_stages`.
    """
    if cycles is not None and recording.cycle is None:
        raise DataError(f"cannot select cycles {cycles!r}: {recording.source} has no cycle labels "
                        "(no stage markers or cycle column), and cycles cannot be detected from "
                        "the motion")
    if stage is None or recording.stage is not None:
        return StageSelection(recording.select(stage=stage, cycles=cycles))
    wanted = [stage] if isinstance(stage, str) else list(stage)
    for label in wanted:
        check_stage_label(label, allow_empty=False)
    undetectable = [label for label in wanted if label not in DETECTED_KINDS]
    if undetectable:
        raise DataError(f"cannot select stage(s) {undetectable} from {recording.source}: it has no "
                        f"stage markers or stage column, and detection from the motion gives only "
                        f"{list(DETECTED_KINDS)} (warm-up and validation motion is detected as "
                        "excitation)")
    if rest_threshold is None:
        rest_threshold = default_rest_threshold(velocity_limits)
    labelled, stages = label_from_motion(recording, velocity_limits, rest_threshold, **options)
    note = describe_detection(recording.source, stages, rest_threshold)
    logger.info(note)
    return StageSelection(labelled.select(stage=wanted), tuple(stages), note)
