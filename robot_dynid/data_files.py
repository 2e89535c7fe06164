"""Read a recording from a file, whichever format it is in: a rosbag2 directory or a CSV file."""
from __future__ import annotations

import pathlib

from robot_dynid.bag_io import read_bag
from robot_dynid.csv_io import read_csv
from robot_dynid.errors import DataError
from robot_dynid.recording import Recording

BAG_SUFFIXES = (".mcap", ".db3")


def read_recording(path, joint_names=None, **bag_topics) -> Recording:
    """Read ``path``: a rosbag2 directory (or its .mcap / .db3 file) or a ``.csv`` file.

    ``bag_topics`` (joint_states_topic, effort_topic, stage_topic, ...) apply to bags only.
    """
    path = pathlib.Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file or directory")
    if path.is_dir() or path.suffix in BAG_SUFFIXES:
        return read_bag(path if path.is_dir() else path.parent, joint_names=joint_names, **bag_topics)
    if path.suffix.lower() == ".csv":
        return read_csv(path, joint_names=joint_names)
    raise DataError(f"{path}: not a rosbag2 directory, .mcap, .db3 or .csv file")
