"""The one loader of robot descriptions: a YAML file (:func:`load_robot`) or a dict of the same form
(:func:`robot_from_dict`) with a DH table (:func:`~robot_dynid.model.robot_description.robot_from_dh_dict`), a
URDF (:func:`~robot_dynid.model.urdf.robot_from_urdf_dict`) or an MJCF file
(:func:`~robot_dynid.model.mjcf.robot_from_mjcf_dict`). The YAML contract is documented in
``docs/robot_description.md``; above the three forms, which build a
:class:`~robot_dynid.model.robot_description.RobotDescription`.
"""
from __future__ import annotations

import logging
import os
from typing import Mapping

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.model.mjcf import robot_from_mjcf_dict
from robot_dynid.model.robot_description import RobotDescription, robot_from_dh_dict
from robot_dynid.model.transmission import ratio_warnings
from robot_dynid.model.urdf import robot_from_urdf_dict
from robot_dynid.yaml_files import read_yaml

__all__ = ["load_robot", "robot_from_dict"]

logger = logging.getLogger(__name__)


def load_robot(path: str | os.PathLike) -> RobotDescription:
    """Load a robot description YAML file.

    Parameters
    ----------
    path : str or path-like
        YAML file with a DH table, or ``urdf:`` (a path relative to the YAML file) and ``joints:``.

    Raises
    ------
    RobotDescriptionError
        Unreadable file, invalid YAML, or any rule of the contract broken; the message starts
        with the file name and names the key and joint.
    """
    path = os.fspath(path)
    data = read_yaml(path, RobotDescriptionError, "robot description")
    return robot_from_dict(data, base_dir=os.path.dirname(os.path.abspath(path)), source=path)


def robot_from_dict(data: Mapping, base_dir: str | os.PathLike | None = None,
                    source: str = "<dict>") -> RobotDescription:
    """Build a robot from a dict of the YAML contract form.

    Parameters
    ----------
    data : mapping
        The parsed YAML document.
    base_dir : str or path-like, optional
        Directory a relative ``urdf:`` path is resolved against (default: the working directory).
    source : str
        Name of the origin, put in front of every error message.
    """
    try:
        if not isinstance(data, Mapping):
            raise RobotDescriptionError(
                f"a robot description must be a mapping, got {type(data).__name__}")
        if "urdf" in data:
            return _warned(robot_from_urdf_dict(data, base_dir), source)
        if "mjcf" in data:
            return _warned(robot_from_mjcf_dict(data, base_dir), source)
        if not {"dh_convention", "joints"} & set(data):
            raise RobotDescriptionError(
                f"robot description: none of its three forms (keys {sorted(map(str, data))[:8]}): give 'urdf' (a URDF "
                "file), 'mjcf' (a MuJoCo XML file) or 'dh_convention' with 'joints' (DH parameters); each with "
                "joint limits and effort limits (docs/robot_description.md)")
        return _warned(robot_from_dh_dict(data), source)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{source}: {error}") from None


def _warned(robot: RobotDescription, source: str) -> RobotDescription:
    """``robot``, its implausible gear ratios logged as warnings
    (:func:`~robot_dynid.model.transmission.ratio_warnings`)."""
    if robot.transmission is not None:
        for warning in ratio_warnings(robot.transmission, robot.joint_names, robot.prismatic):
            logger.warning("%s: %s", source, warning)
    return robot
