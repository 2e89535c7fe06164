"""Robots described by an MJCF file (MuJoCo's XML): the selected joints, their limits, kinematics and inertials.

A robot description ``{mjcf: FILE or XML, joints: [...], velocity_limits: {...}, ...}`` takes the keys of the
URDF form (docs/robot_description.md). Pinocchio's MJCF parser (``buildModelFromMJCF``, pinocchio >= 3) reads
the file; the joints that are not selected are locked at 0, as for URDF robots. From the MJCF:

- **kinematics**: each selected joint's frame (its body's frame moved to the joint's ``pos``) in its parent's,
  its axis; a joint's link frame is its joint frame;
- **position limits**: a joint's ``range`` (in the file's ``<compiler angle>`` unit, read by pinocchio); a hinge
  without one is continuous (``[-pi, pi]`` for excitation design unless overridden);
- **inertials** (a prior for identification, and the MuJoCo engine's bodies): each joint's body with every
  body fixed below it.

MJCF carries no velocity limits: ``velocity_limits`` must name every joint. Acceleration limits default to 5
times the velocity limit, effort limits to none, as for URDF robots. The file must be self-contained (no
``<include>``; meshes are not needed, and not read by pinocchio's model parser). Where the mujoco package is
installed the file must also compile in MuJoCo (:func:`check_with_mujoco`): what MuJoCo refuses is refused with its
reason.
"""
from __future__ import annotations

import logging
import os
from typing import Mapping

import numpy as np
import pinocchio as pin

from robot_dynid.errors import RobotDescriptionError, message_line
from robot_dynid.model.joint_chains import mjcf_chain, mjcf_joint_kind, mjcf_model
from robot_dynid.model.robot_description import (CONTINUOUS_POSITION_LIMITS, DEFAULT_ACCELERATION_PER_VELOCITY,
                                                 DEFAULT_GRAVITY, URDF_DRIVE_MAPS, URDF_LIMIT_MAPS, URDF_OPTIONAL_KEYS,
                                                 JointDrive, JointLimits, LinkInertial, RobotDescription, check_keys,
                                                 number, numbers, simulation_from_dict, xml_or_file)
from robot_dynid.model.transmission import transmission_from_dict

__all__ = ["mjcf_inertials", "check_with_mujoco", "robot_from_mjcf_dict"]

logger = logging.getLogger(__name__)


def mjcf_inertials(robot: RobotDescription) -> tuple[LinkInertial, ...]:
    """Per joint, what moves rigidly with its link frame (its body and the bodies fixed below it), in it."""
    inertials = []
    for name, (_, _, inertia) in zip(robot.joint_names, mjcf_chain(robot.mjcf, robot.joint_names)):
        about_com = np.array(inertia.inertia)
        inertials.append(LinkInertial(mass=float(inertia.mass), com=tuple(np.array(inertia.lever)),
                                      inertia=tuple(about_com[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]])))
    return tuple(inertials)


def check_with_mujoco(text: str, path: str | None = None) -> None:
    """Where the mujoco package is installed, the MJCF must compile in MuJoCo too (pinocchio's parser accepts files
    MuJoCo refuses: unknown attributes, bad values); RobotDescriptionError with MuJoCo's message. ``path``: the file,
    so that its meshes and includes resolve beside it."""
    try:
        import mujoco
    except ImportError:
        return
    try:
        if path is not None:
            mujoco.MjModel.from_xml_path(path)
        else:
            mujoco.MjModel.from_xml_string(text)
    except ValueError as error:
        reason = message_line(error)
        if "Error opening file" in reason or "resource not found" in reason.lower():
            # a mesh or texture the file names is missing: the dynamics do not need it (the MuJoCo engine does)
            logger.warning("MuJoCo cannot open a file the MJCF names (%s); identification does not need it, the "
                           "MuJoCo engine will", reason)
            return
        raise RobotDescriptionError(f"MuJoCo refuses the MJCF: {reason}") from None


def robot_from_mjcf_dict(data: Mapping, base_dir: str | os.PathLike | None) -> RobotDescription:
    """A robot of a description that names an MJCF file (``mjcf:`` a path, relative to ``base_dir``, or XML)."""
    check_keys(data, "robot description", ("mjcf",), URDF_OPTIONAL_KEYS)
    text, path = xml_or_file(data, "mjcf", "MJCF", base_dir)
    model = mjcf_model(text)
    check_with_mujoco(text, path)
    movable = [model.names[index] for index in range(1, model.njoints)]
    selection = data.get("joints", movable)
    if not isinstance(selection, list) or not selection or not all(isinstance(name, str) for name in selection):
        raise RobotDescriptionError(f"joints must be a non-empty list of MJCF joint names, got {selection!r}")
    for name in selection:
        if name not in movable:
            raise RobotDescriptionError(f"joint {name!r} is not in the MJCF; MJCF joints: {', '.join(movable)}")
    overrides = {}
    for key in URDF_LIMIT_MAPS + URDF_DRIVE_MAPS:
        value = data.get(key) or {}
        if not isinstance(value, Mapping):
            raise RobotDescriptionError(f"{key} must be a mapping joint name -> value, got {value!r}")
        unknown = [joint for joint in value if joint not in selection]
        if unknown:
            raise RobotDescriptionError(f"{key}: joint {unknown[0]!r} is not one of the selected joints {selection}")
        overrides[key] = dict(value)
    kinds = [mjcf_joint_kind(model, model.getJointId(name)) for name in selection]
    mjcf_chain(text, selection)       # one chain, base to tip
    limits = tuple(_limits(model, name, overrides) for name in selection)
    drives = tuple(JointDrive(*(None if name not in overrides[mapping] else
                                number(overrides[mapping][name], f"{mapping}[{name}]")
                                for mapping in URDF_DRIVE_MAPS)) for name in selection)
    gravity = numbers(data.get("gravity", list(DEFAULT_GRAVITY)), 3, "gravity", "m/s^2")
    robot = RobotDescription(name=data.get("name") or model.name or "robot", joint_names=tuple(selection),
                             limits=limits, gravity=gravity, mjcf=text,
                             drives=drives if any(drive != JointDrive() for drive in drives) else None,
                             joint_types=tuple(kinds))
    extras = {}
    if "transmission" in data:
        extras["transmission"] = transmission_from_dict(data["transmission"], robot.joint_names)
    if "simulation" in data:
        extras["simulation"] = simulation_from_dict(data["simulation"], robot.joint_names)
    return RobotDescription(**{**robot.__dict__, **extras}) if extras else robot


def _limits(model: pin.Model, name: str, overrides: dict[str, dict]) -> JointLimits:
    index = model.joints[model.getJointId(name)].idx_q

    def override(key: str):
        if name not in overrides[key]:
            return None
        value, where = overrides[key][name], f"{key}[{name}]"
        return numbers(value, 2, where, "rad") if key == "position_limits" else number(value, where)

    position = override("position_limits")
    if position is None:
        lower, upper = float(model.lowerPositionLimit[index]), float(model.upperPositionLimit[index])
        position = (lower, upper) if np.isfinite(lower) and np.isfinite(upper) else CONTINUOUS_POSITION_LIMITS
    velocity = override("velocity_limits")
    if velocity is None:
        raise RobotDescriptionError(f"joint {name!r}: MJCF has no velocity limits; give velocity_limits: "
                                    "{joint: rad/s} for every joint")
    acceleration = override("acceleration_limits")
    if acceleration is None:
        acceleration = DEFAULT_ACCELERATION_PER_VELOCITY * velocity
    effort = override("effort_limits")
    if effort is None and np.isfinite(model.effortLimit[index]) and model.effortLimit[index] > 0.0:
        effort = float(model.effortLimit[index])
    return JointLimits(position=position, velocity=velocity, acceleration=acceleration, effort=effort)
