"""Read a recording from a file, whichever format it is in: a rosbag2 directory or a CSV file."""
from __future__ import annotations

import dataclasses
import logging
import pathlib

from robot_dynid.bag_io import read_bag
from robot_dynid.csv_io import read_csv
from robot_dynid.errors import DataError
from robot_dynid.recording import Recording
from robot_dynid.signal_processing import differentiate

logger = logging.getLogger(__name__)

BAG_SUFFIXES = (".mcap", ".db3")
DERIVATIVE_WINDOW = 0.05  # s, Savitzky-Golay window for derivatives that were not recorded


def read_recording(path, joint_names=None, derivative_window=DERIVATIVE_WINDOW, **bag_topics) -> Recording:
    """Read ``path``: a rosbag2 directory (or its .mcap / .db3 file) or a ``.csv`` file.

    Velocities [rad/s] and accelerations [rad/s^2] that were not recorded (JointState has no
    accelerations) are derived from the positions by Savitzky-Golay differentiation over
    ``derivative_window`` [s] (cubic, zero phase). ``bag_topics`` (joint_states_topic,
    effort_topic, stage_topic, ...) apply to bags only.
    """
    return complete_derivatives(_read(path, joint_names, bag_topics), derivative_window)


def complete_derivatives(recording: Recording, window: float = DERIVATIVE_WINDOW) -> Recording:
    """Fill missing qd / qdd of a uniformly sampled recording by Savitzky-Golay differentiation."""
    if recording.qd is not None and recording.qdd is not None:
        return recording
    derived = differentiate(recording.q, recording.time, window_seconds=window)
    missing = [name for name in ("qd", "qdd") if getattr(recording, name) is None]
    logger.info("%s: %s derived from positions (Savitzky-Golay, %d samples, cubic)",
                recording.source, " and ".join(missing), derived.window)
    return dataclasses.replace(recording, **{name: getattr(derived, name) for name in missing})


def _read(path, joint_names, bag_topics) -> Recording:
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if path.is_dir() or path.suffix in BAG_SUFFIXES:
        return read_bag(path if path.is_dir() else path.parent, joint_names=joint_names, **bag_topics)
    if path.suffix.lower() == ".csv":
        return read_csv(path, joint_names=joint_names)
    raise DataError(f"{path}: not a rosbag2 directory, .mcap, .db3 or .csv file")
