"""Robots described by a URDF: the selected joints, their limits, kinematics and link inertials.

A robot description ``{urdf: FILE or XML, joints: [...], ...}`` (or :func:`robot_from_urdf` on URDF
text, e.g. a ROS ``robot_description``) selects a chain of revolute, continuous or prismatic
joints, base to tip; the other movable joints are held at 0.

Where each piece comes from:

- **Kinematics** (:func:`urdf_chain`): pinocchio's own URDF parser (``buildModelFromXML``), with
  the joints that are not selected locked at 0 (``buildReducedModel``), gives each selected
  joint's placement in its parent's frame and its axis; the selected joints must be parent and
  child in the reduced model (one chain).
- **Hand parsing** (``xml.etree``) is kept for what pinocchio cannot give: whether a ``<limit>``
  attribute is there at all (pinocchio fills in defaults, so a missing ``lower``/``upper`` or
  ``velocity`` would pass silently), the joint types for the default selection and its base-to-tip
  order, unit checks (an origin in millimetres), one-line errors naming the joint and attribute,
  and every link's own ``<inertial>`` with the links that move with each joint
  (:func:`link_bodies`: pinocchio merges them into one body, the URDF export needs them link by link).
"""
from __future__ import annotations

import dataclasses
import logging
import os
import xml.etree.ElementTree as ElementTree
from typing import Mapping, Sequence

import numpy as np
import pinocchio as pin

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.model.joint_chains import UrdfJoint, parse_urdf, urdf_chain, urdf_root, urdf_vector
from robot_dynid.model.robot_description import (CONTINUOUS_POSITION_LIMITS, DEFAULT_ACCELERATION_PER_VELOCITY,
                                                 DEFAULT_GRAVITY, URDF_DRIVE_MAPS, URDF_JOINT_TYPES, URDF_LIMIT_MAPS,
                                                 URDF_OPTIONAL_KEYS, JointDrive, JointLimits, LinkInertial,
                                                 RobotDescription, check_inertial, check_keys, number, numbers,
                                                 simulation_from_dict, xml_or_file)
from robot_dynid.model.transmission import transmission_from_dict

__all__ = ["robot_from_urdf_dict", "robot_from_urdf", "parse_urdf_inertials"]

logger = logging.getLogger(__name__)


def robot_from_urdf_dict(data: Mapping, base_dir: str | os.PathLike | None) -> RobotDescription:
    """A robot of a description that names a URDF (``urdf:`` a file, relative to ``base_dir``, or XML)."""
    check_keys(data, "robot description", ("urdf",), URDF_OPTIONAL_KEYS)
    urdf, _ = xml_or_file(data, "urdf", "URDF", base_dir)
    joints = data.get("joints")
    if joints is not None and (not isinstance(joints, list)
                               or not all(isinstance(name, str) for name in joints)):
        raise RobotDescriptionError(f"joints must be a list of URDF joint names, got {joints!r}")
    overrides = {}
    for key in URDF_LIMIT_MAPS + URDF_DRIVE_MAPS:
        value = data.get(key) or {}
        if not isinstance(value, Mapping):
            raise RobotDescriptionError(
                f"{key} must be a mapping joint name -> value, got {value!r}")
        overrides[key] = dict(value)
    name = data.get("name")
    gravity = numbers(data.get("gravity", list(DEFAULT_GRAVITY)), 3, "gravity", "m/s^2")
    robot = _build_urdf_robot(urdf, joints, name, gravity, overrides)
    if "transmission" in data:
        robot = dataclasses.replace(robot, transmission=transmission_from_dict(data["transmission"],
                                                                               robot.joint_names))
    if "rated_payload" in data:
        robot = dataclasses.replace(robot, rated_payload=number(data["rated_payload"], "rated_payload"))
    if "simulation" in data:
        robot = dataclasses.replace(robot, simulation=simulation_from_dict(data["simulation"], robot.joint_names))
    return robot


def robot_from_urdf(urdf_text: str, joints: Sequence[str] | None = None, name: str | None = None,
                    gravity: Sequence[float] = DEFAULT_GRAVITY,
                    acceleration_limits: Mapping[str, float] | None = None) -> RobotDescription:
    """Build a robot from URDF text (e.g. a ROS ``robot_description`` parameter).

    Parameters
    ----------
    urdf_text : str
        URDF XML.
    joints : sequence of str, optional
        Joints of the chain, base to tip. Default: every revolute, continuous and prismatic
        joint, which must then form a single chain.
    name : str, optional
        Robot name; default the URDF ``<robot name>``.
    gravity : sequence of 3 float
        Gravity [m/s^2] in the URDF root link frame.
    acceleration_limits : mapping joint name -> float, optional
        [rad/s^2]; joints without one get ``DEFAULT_ACCELERATION_PER_VELOCITY`` times their
        velocity limit.
    """
    try:
        gravity = numbers(list(gravity), 3, "gravity", "m/s^2")
        overrides = {key: {} for key in URDF_LIMIT_MAPS}
        overrides["acceleration_limits"] = dict(acceleration_limits or {})
        return _build_urdf_robot(urdf_text, None if joints is None else list(joints), name,
                                 gravity, overrides)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"URDF: {error}") from None


_URDF_INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def parse_urdf_inertials(urdf_text: str) -> dict[str, LinkInertial]:
    """The ``<inertial>`` of every URDF link that has one, as a :class:`LinkInertial` in the
    link frame (the inertial frame's rpy turned into the link's axes)."""
    inertials = {}
    for link in urdf_root(urdf_text).findall("link"):
        name, element = link.get("name", ""), link.find("inertial")
        if element is None:
            continue
        label = f"URDF link {name!r}: <inertial>"
        origin = element.find("origin")
        xyz, rpy = ((np.zeros(3), np.zeros(3)) if origin is None else
                    (urdf_vector(origin, key, name, "link") for key in ("xyz", "rpy")))
        mass, inertia = element.find("mass"), element.find("inertia")
        if mass is None or inertia is None:
            raise RobotDescriptionError(f"{label} needs <mass value> and <inertia ixx ... izz>")

        def attribute(tag: ElementTree.Element, key: str) -> float:
            if key not in tag.attrib:
                raise RobotDescriptionError(f"{label} <{tag.tag}> has no {key}")
            try:
                value = float(tag.get(key))
            except ValueError:
                raise RobotDescriptionError(f"{label} <{tag.tag} {key}={tag.get(key)!r}> is not a "
                                            "number") from None
            return number(value, f"{label} <{tag.tag} {key}>")

        values = [attribute(inertia, key) for key in _URDF_INERTIA_ATTRIBUTES]
        xx, xy, xz, yy, yz, zz = values
        rotation = pin.rpy.rpyToMatrix(*rpy)
        turned = rotation @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ rotation.T
        inertial = LinkInertial(mass=attribute(mass, "value"), com=tuple(xyz),
                                inertia=tuple(turned[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))
        check_inertial(inertial, label)
        inertials[name] = inertial
    return inertials


def _select_urdf_chain(joints: dict[str, UrdfJoint], selection: list[str] | None) -> list[str]:
    if selection is None:
        movable = [name for name, joint in joints.items() if joint.type != "fixed"]
        unsupported = [name for name in movable if joints[name].type not in URDF_JOINT_TYPES]
        if unsupported:
            raise RobotDescriptionError(
                f"URDF joint {unsupported[0]!r} is {joints[unsupported[0]].type!r}; only revolute, continuous "
                "and prismatic joints are supported: select the arm's joints with joints: [...]")
        selection = _chain_order(joints, movable)
    for name in selection:
        if name not in joints:
            raise RobotDescriptionError(
                f"joint {name!r} is not in the URDF; URDF joints: {', '.join(joints)}")
        if joints[name].type not in URDF_JOINT_TYPES:
            raise RobotDescriptionError(
                f"joint {name!r} is a URDF {joints[name].type!r} joint; only revolute, continuous and "
                "prismatic joints are supported")
    if not selection:
        raise RobotDescriptionError("the URDF has no revolute or prismatic joints")
    if len(set(selection)) != len(selection):
        raise RobotDescriptionError(f"joints {selection} contains duplicate names")
    return list(selection)


def _chain_order(joints: dict[str, UrdfJoint], movable: list[str]) -> list[str]:
    """Movable joints ordered base to tip by their depth in the tree."""
    parent_of = {joint.child: joint for joint in joints.values()}

    def depth(name: str) -> int:
        count, link = 0, joints[name].parent
        while link in parent_of:
            count, link = count + 1, parent_of[link].parent
        return count

    return sorted(movable, key=depth)


def _build_urdf_robot(urdf_text: str, selection: list[str] | None, name: str | None,
                      gravity: tuple[float, ...], overrides: dict[str, dict]) -> RobotDescription:
    robot_name, joints = parse_urdf(urdf_text)
    chain = _select_urdf_chain(joints, selection)
    for key, values in overrides.items():
        unknown = [joint for joint in values if joint not in chain]
        if unknown:
            raise RobotDescriptionError(
                f"{key}: joint {unknown[0]!r} is not one of the selected joints {chain}")
    limits = tuple(_urdf_limits(joints[joint_name], overrides) for joint_name in chain)
    for joint_name, (_, axis) in zip(chain, urdf_chain(urdf_text, chain)):   # one chain, base to tip
        if not np.all(np.isfinite(axis)):
            raise RobotDescriptionError(f"URDF joint {joint_name!r} has a zero <axis>")
    drives = tuple(JointDrive(*(None if joint_name not in overrides.get(mapping, {})
                                else number(overrides[mapping][joint_name], f"{mapping}[{joint_name}]")
                                for mapping in URDF_DRIVE_MAPS))
                   for joint_name in chain)
    return RobotDescription(name=name or robot_name or "robot", joint_names=tuple(chain),
                            limits=limits, gravity=gravity, urdf=urdf_text,
                            drives=drives if any(drive != JointDrive() for drive in drives)
                            else None,
                            joint_types=tuple("prismatic" if joints[joint_name].type == "prismatic" else "revolute"
                                              for joint_name in chain))


def _urdf_limits(joint: UrdfJoint, overrides: dict[str, dict]) -> JointLimits:
    label = f"joint {joint.name!r}"

    def override(key: str):
        if joint.name not in overrides[key]:
            return None
        value, where = overrides[key][joint.name], f"{key}[{joint.name}]"
        if key == "position_limits":
            return numbers(value, 2, where, "rad")
        return number(value, where)

    position = override("position_limits")
    if position is None:
        if joint.type == "continuous":
            position = CONTINUOUS_POSITION_LIMITS
        elif "lower" in joint.limit and "upper" in joint.limit:
            position = (joint.limit["lower"], joint.limit["upper"])
        else:
            raise RobotDescriptionError(
                f"{label} has no <limit lower upper> in the URDF and no position_limits override")
    velocity = override("velocity_limits")
    if velocity is None:
        velocity = joint.limit.get("velocity", 0.0)
        if not velocity > 0.0:
            raise RobotDescriptionError(f"{label} has no <limit velocity> > 0 in the URDF and "
                                        "no velocity_limits override")
    acceleration = override("acceleration_limits")
    if acceleration is None:
        acceleration = DEFAULT_ACCELERATION_PER_VELOCITY * velocity
        logger.info("%s: no acceleration limit given, using %.3g rad/s^2 (%g x velocity limit)",
                    label, acceleration, DEFAULT_ACCELERATION_PER_VELOCITY)
    effort = override("effort_limits")
    if effort is None:
        effort = joint.limit.get("effort") or None
    return JointLimits(position=position, velocity=velocity, acceleration=acceleration,
                       effort=effort)
