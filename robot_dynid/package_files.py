"""Files robot_dynid ships besides code: interface definitions (msg/, srv/) and configs (config/).

They are found wherever the package was installed from: a pip install copies them into
``robot_dynid/package_data/``; a ROS install has them in ``<prefix>/share/robot_dynid/``; a
source checkout has them at the repository root.
"""
from __future__ import annotations

import os
import pathlib
import sys

from robot_dynid.errors import DataError

__all__ = ["package_file_candidates", "find_package_file"]


def package_file_candidates(*relative: str) -> list[pathlib.Path]:
    here = pathlib.Path(__file__).resolve().parent
    prefixes = [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p] + [sys.prefix]
    return [
        here.joinpath("package_data", *relative),
        here.parent.joinpath(*relative),
        *(pathlib.Path(prefix).joinpath("share", "robot_dynid", *relative) for prefix in prefixes),
    ]


def find_package_file(*relative: str) -> pathlib.Path:
    """Path of a shipped file, given by the parts of its path.

    ``find_package_file("config", "robots", "ur5.yaml")`` is the UR5's robot description.
    """
    candidates = package_file_candidates(*relative)
    for candidate in candidates:
        if candidate.exists():
            return candidate
    raise DataError(f"{'/'.join(relative)} not found; looked in: {', '.join(map(str, candidates))}")
