"""Recording files, whichever format: a rosbag2 directory or a CSV file.

:func:`read_file` gives a file's samples as written (step 1 of the reading pipeline,
:mod:`robot_dynid.recordings.pipeline`, which checks, resamples, differentiates and conditions them);
:func:`stage_table` lists the stages of a recording: from its stage markers (bags), its stage column (CSV
files), or, without either, detected from the motion
(:func:`robot_dynid.recordings.stage_detection.label_from_motion`).
"""
from __future__ import annotations

import dataclasses
import logging
import pathlib

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.recordings.bag_layout import DEFAULT_STAGE_TOPIC
from robot_dynid.recordings.csv_io import read_csv
from robot_dynid.recordings.recording import Recording, intervals_from_labels
from robot_dynid.recordings.stage_detection import default_rest_threshold, describe_detection, label_from_motion
from robot_dynid.recordings.stages import StageInterval, stage_intervals

__all__ = ["BAG_SUFFIXES", "StageTable", "stage_table", "read_file"]

logger = logging.getLogger(__name__)

BAG_SUFFIXES = (".mcap", ".db3")


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


def stage_table(recording, path, velocity_limits, rest_threshold=None, **bag_topics) -> StageTable:
    """Stages of ``recording`` read from ``path`` (its markers are read from the file; the pipeline's
    :func:`~robot_dynid.recordings.pipeline.read_stage_table` reads the recording too)."""
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
        from robot_dynid.recordings.bag_io import read_stage_markers     # here: rosbags costs a CSV's start 0.1 s
        markers = read_stage_markers(_bag_directory(pathlib.Path(path)),
                                     bag_topics.get("stage_topic", DEFAULT_STAGE_TOPIC),
                                     bag_topics.get("distro"))
        return StageTable("markers", tuple(stage_intervals(markers)), time_origin)
    return StageTable("stage column", tuple(intervals_from_labels(recording)), time_origin)


def _is_bag(path: pathlib.Path) -> bool:
    return path.is_dir() or path.suffix in BAG_SUFFIXES


def _bag_directory(path: pathlib.Path) -> pathlib.Path:
    return path if path.is_dir() else path.parent


def read_file(path, joint_names=None, transmission=None, **bag_topics) -> Recording:
    """The samples of the file at ``path`` as written: a rosbag2 directory (or its .mcap / .db3 file,
    :func:`~robot_dynid.recordings.bag_io.read_bag` with ``bag_topics``) or a ``.csv`` file
    (:func:`~robot_dynid.recordings.csv_io.read_csv`); ``joint_names`` to read (default all), ``transmission``
    to turn motor-side columns into joint values."""
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if _is_bag(path):
        from robot_dynid.recordings.bag_io import read_bag
        return read_bag(_bag_directory(path), joint_names=joint_names, transmission=transmission, **bag_topics)
    if path.suffix.lower() == ".csv":
        return read_csv(path, joint_names=joint_names, transmission=transmission)
    raise DataError(f"{path}: not a rosbag2 directory, .mcap, .db3 or .csv file")
