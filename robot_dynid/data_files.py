"""Read a recording from a file, whichever format it is in: a rosbag2 directory or a CSV file.

:func:`read_recording` gives the samples; :func:`read_stage_table` lists the stages of a
recording: from its stage markers (bags), its stage column (CSV files), or, without either,
detected from the motion (:func:`robot_dynid.segmentation.label_from_motion`).
"""
from __future__ import annotations

import dataclasses
import logging
import pathlib

import numpy as np

from robot_dynid.bag_io import DEFAULT_STAGE_TOPIC, read_bag, read_stage_markers
from robot_dynid.csv_io import read_csv
from robot_dynid.errors import DataError
from robot_dynid.recording import Recording
from robot_dynid.segmentation import (StageInterval, default_rest_threshold, describe_detection,
                                      intervals_from_labels, label_from_motion, stage_intervals)
from robot_dynid.signal_processing import differentiate

logger = logging.getLogger(__name__)

BAG_SUFFIXES = (".mcap", ".db3")
DERIVATIVE_WINDOW = 0.05  # s, Savitzky-Golay window for derivatives that were not recorded
#: ... but never fewer samples than this (a cubic fit needs 5; 7 keeps the noise down): 50 Hz
#: recordings, as of hydraulic arms, get 0.14 s.
MIN_DERIVATIVE_WINDOW_SAMPLES = 7
GAP_FACTOR = 1.5  # a stamp step longer than this times the median step is a gap (lost messages)


def read_recording(path, joint_names=None, derivative_window=DERIVATIVE_WINDOW, **bag_topics) -> Recording:
    """Read ``path``: a rosbag2 directory (or its .mcap / .db3 file) or a ``.csv`` file.

    Velocities [rad/s] and accelerations [rad/s^2] that were not recorded (JointState has no
    accelerations) are derived from the positions by Savitzky-Golay differentiation over
    ``derivative_window`` [s], at least ``MIN_DERIVATIVE_WINDOW_SAMPLES`` samples (cubic, zero
    phase). ``bag_topics`` (joint_states_topic,
    effort_topic, stage_topic, ...) apply to bags only.
    """
    return complete_derivatives(_read(path, joint_names, bag_topics), derivative_window)


def complete_derivatives(recording: Recording, window: float = DERIVATIVE_WINDOW) -> Recording:
    """Fill missing qd / qdd of a uniformly sampled recording by Savitzky-Golay differentiation.

    A stamp step longer than ``GAP_FACTOR`` times the median step (lost messages, a paused
    recording) splits the recording into runs, each differentiated on its own (its edges by the
    filter's polynomial fit, as the identifier node does); runs shorter than the window are
    dropped and counted in ``n_dropped``.
    """
    if recording.qd is not None and recording.qdd is not None:
        return recording
    missing = [name for name in ("qd", "qdd") if getattr(recording, name) is None]
    steps = np.diff(recording.time)
    runs = np.split(np.arange(recording.n_samples),
                    np.flatnonzero(steps > GAP_FACTOR * np.median(steps)) + 1 if steps.size else [])
    longest = max(runs, key=len)
    window_option = {"window_seconds": window}
    if steps.size and window < MIN_DERIVATIVE_WINDOW_SAMPLES * np.median(steps):
        window_option = {"window_samples": MIN_DERIVATIVE_WINDOW_SAMPLES}
        logger.info("%s: at %.3g Hz a %g s derivative window holds too few samples; using %d samples",
                    recording.source, 1.0 / np.median(steps), window, MIN_DERIVATIVE_WINDOW_SAMPLES)
    derived = differentiate(recording.q[longest], recording.time[longest], **window_option)
    kept = [run for run in runs if len(run) >= derived.window]
    if len(runs) > 1:
        logger.warning("%s: %d gap(s) in the stamps (first after %.6f s); derivatives restart after each, "
                       "%d sample(s) in runs shorter than the %d-sample window dropped", recording.source,
                       len(runs) - 1, recording.time[runs[0][-1]], recording.n_samples - sum(map(len, kept)),
                       derived.window)
    values = {name: np.zeros_like(recording.q) for name in missing}   # rows of dropped runs stay 0
    for run in kept:
        run_derived = differentiate(recording.q[run], recording.time[run], window_samples=derived.window)
        for name in missing:
            values[name][run] = getattr(run_derived, name)
    logger.info("%s: %s derived from positions (Savitzky-Golay, %d samples, cubic)",
                recording.source, " and ".join(missing), derived.window)
    completed = dataclasses.replace(recording, **values)
    if len(kept) == len(runs):
        return completed
    rows = np.concatenate(kept)
    return dataclasses.replace(completed.take(rows), n_dropped=recording.n_dropped + recording.n_samples - rows.size)


STAGE_ORIGINS = ("markers", "stage column", "motion")
"""Where the stages of a :class:`StageTable` come from."""


@dataclasses.dataclass(frozen=True)
class StageTable:
    """The stages of a recording and where they come from.

    Attributes
    ----------
    origin : str
        ``"markers"`` (ExperimentStage markers of a bag, friction details included),
        ``"stage column"`` (a CSV file's stage and cycle columns) or ``"motion"`` (detected:
        rest, friction plateaus, excitation; no cycles).
    stages : tuple of StageInterval
        In time order (marker intervals: nested sub-stages after their enclosing stage).
    time_origin : float
        Time of the recording's first sample [s] (absolute ROS time for bags).
    rest_threshold : tuple of float or None
        Rest threshold per joint used for detection [rad/s]; None unless ``origin`` is
        ``"motion"``.
    note : str
        For ``"motion"``: the line saying the stages were detected; ``""`` otherwise.
    """

    origin: str
    stages: tuple[StageInterval, ...]
    time_origin: float
    rest_threshold: tuple[float, ...] | None = None
    note: str = ""


def read_stage_table(path, joint_names, velocity_limits, rest_threshold=None,
                     derivative_window=DERIVATIVE_WINDOW, **bag_topics) -> StageTable:
    """Stages of the recording at ``path``: from its markers, its stage column, or detected.

    Parameters
    ----------
    path : str or Path
        As :func:`read_recording`.
    joint_names : sequence of str
        Joints to read (detection uses their velocities).
    velocity_limits : array_like, shape (n,)
        [rad/s] of ``joint_names``, in that order (for detection; friction speeds are
        reported as fractions of them).
    rest_threshold : float or array_like, shape (n,), optional
        [rad/s]; default :func:`robot_dynid.segmentation.default_rest_threshold`.
    derivative_window, **bag_topics
        As :func:`read_recording` (``stage_topic`` names the markers' topic).
    """
    recording = read_recording(path, joint_names, derivative_window, **bag_topics)
    time_origin = float(recording.time[0])
    if recording.stage is None:
        threshold = default_rest_threshold(velocity_limits) if rest_threshold is None \
            else rest_threshold
        _, stages = label_from_motion(recording, velocity_limits, threshold)   # validates it
        threshold = np.broadcast_to(np.asarray(threshold, float), (recording.n_joints,))
        return StageTable("motion", tuple(stages), time_origin,
                          tuple(float(value) for value in threshold),
                          describe_detection(recording.source, stages, threshold))
    if _is_bag(pathlib.Path(path)):
        markers = read_stage_markers(_bag_directory(pathlib.Path(path)),
                                     bag_topics.get("stage_topic", DEFAULT_STAGE_TOPIC),
                                     bag_topics.get("distro"))
        return StageTable("markers", tuple(stage_intervals(markers)), time_origin)
    return StageTable("stage column", tuple(intervals_from_labels(recording)), time_origin)


def _is_bag(path: pathlib.Path) -> bool:
    return path.is_dir() or path.suffix in BAG_SUFFIXES


def _bag_directory(path: pathlib.Path) -> pathlib.Path:
    return path if path.is_dir() else path.parent


def _read(path, joint_names, bag_topics) -> Recording:
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if _is_bag(path):
        return read_bag(_bag_directory(path), joint_names=joint_names, **bag_topics)
    if path.suffix.lower() == ".csv":
        return read_csv(path, joint_names=joint_names)
    raise DataError(f"{path}: not a rosbag2 directory, .mcap, .db3 or .csv file")
