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
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np
import pinocchio as pin

from robot_dynid.errors import RobotDescriptionError
from robot_dynid.input_files import read_text
from robot_dynid.model.robot_description import (_URDF_DRIVE_MAPS, _URDF_JOINT_TYPES, _URDF_LIMIT_MAPS,
                                                 _URDF_OPTIONAL,
                                                 CONTINUOUS_POSITION_LIMITS,
                                                 DEFAULT_ACCELERATION_PER_VELOCITY,
                                                 DEFAULT_GRAVITY, MAX_LENGTH, JointDrive,
                                                 JointLimits, LinkBody, LinkInertial,
                                                 RobotDescription, _check_inertial, _check_keys,
                                                 _number, _numbers, joint_motion_subspace,
                                                 simulation_from_dict)
from robot_dynid.model.transmission import transmission_from_dict

logger = logging.getLogger(__name__)


def robot_from_urdf_dict(data: Mapping, base_dir: str | os.PathLike | None) -> RobotDescription:
    """A robot of a description that names a URDF (``urdf:`` a file, relative to ``base_dir``, or XML)."""
    _check_keys(data, "robot description", ("urdf",), _URDF_OPTIONAL)
    urdf = data["urdf"]
    if not isinstance(urdf, str) or not urdf.strip():
        raise RobotDescriptionError(f"urdf must be a file path or URDF XML text, got {urdf!r}")
    if not urdf.lstrip().startswith("<"):
        path = urdf if os.path.isabs(urdf) else os.path.join(base_dir or os.getcwd(), urdf)
        try:
            urdf = read_text(path, "URDF", RobotDescriptionError)
        except RobotDescriptionError as error:
            raise RobotDescriptionError(f"urdf: {error}") from None
    joints = data.get("joints")
    if joints is not None and (not isinstance(joints, list)
                               or not all(isinstance(name, str) for name in joints)):
        raise RobotDescriptionError(f"joints must be a list of URDF joint names, got {joints!r}")
    overrides = {}
    for key in _URDF_LIMIT_MAPS + _URDF_DRIVE_MAPS:
        value = data.get(key) or {}
        if not isinstance(value, Mapping):
            raise RobotDescriptionError(
                f"{key} must be a mapping joint name -> value, got {value!r}")
        overrides[key] = dict(value)
    name = data.get("name")
    gravity = _numbers(data.get("gravity", list(DEFAULT_GRAVITY)), 3, "gravity", "m/s^2")
    robot = _build_urdf_robot(urdf, joints, name, gravity, overrides)
    if "transmission" in data:
        robot = dataclasses.replace(robot, transmission=transmission_from_dict(data["transmission"],
                                                                               robot.joint_names))
    if "rated_payload" in data:
        robot = dataclasses.replace(robot, rated_payload=_number(data["rated_payload"], "rated_payload"))
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
        gravity = _numbers(list(gravity), 3, "gravity", "m/s^2")
        overrides = {key: {} for key in _URDF_LIMIT_MAPS}
        overrides["acceleration_limits"] = dict(acceleration_limits or {})
        return _build_urdf_robot(urdf_text, None if joints is None else list(joints), name,
                                 gravity, overrides)
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"URDF: {error}") from None


@dataclass(frozen=True)
class _UrdfJoint:
    name: str
    type: str
    parent: str
    child: str
    placement: pin.SE3
    axis: np.ndarray
    limit: dict


def _urdf_root(urdf_text: str) -> ElementTree.Element:
    try:
        root = ElementTree.fromstring(urdf_text)
    except ElementTree.ParseError as error:
        raise RobotDescriptionError(f"invalid URDF XML: {error}") from None
    if root.tag != "robot":
        raise RobotDescriptionError(f"URDF root element is <{root.tag}>, expected <robot>")
    return root


def parse_urdf(urdf_text: str) -> tuple[str, dict[str, _UrdfJoint]]:
    root = _urdf_root(urdf_text)
    joints = {}
    for element in root.findall("joint"):
        name = element.get("name")
        parent, child = element.find("parent"), element.find("child")
        if not name or parent is None or child is None:
            raise RobotDescriptionError(
                f"URDF joint {name!r} needs a name, <parent link> and <child link>")
        origin = element.find("origin")
        xyz = _urdf_vector(origin, "xyz", name) if origin is not None else np.zeros(3)
        rpy = _urdf_vector(origin, "rpy", name) if origin is not None else np.zeros(3)
        for value in xyz:
            if abs(value) > MAX_LENGTH:
                raise RobotDescriptionError(
                    f"URDF joint {name!r} origin xyz = {xyz.tolist()} m looks like millimetres "
                    f"(expected |x| <= {MAX_LENGTH} m)")
        axis_element = element.find("axis")
        axis = (_urdf_vector(axis_element, "xyz", name) if axis_element is not None
                else np.array([1.0, 0.0, 0.0]))
        limit_element = element.find("limit")
        limit = {}
        for key, value in ({} if limit_element is None else limit_element.attrib).items():
            if key in ("lower", "upper", "velocity", "effort"):
                try:
                    limit[key] = float(value)
                except ValueError:
                    raise RobotDescriptionError(
                        f"URDF joint {name!r}: <limit {key}={value!r}> is not a number") from None
        joints[name] = _UrdfJoint(name=name, type=element.get("type", ""),
                                  parent=parent.get("link", ""), child=child.get("link", ""),
                                  placement=pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz),
                                  axis=axis, limit=limit)
    return root.get("name", ""), joints


def _urdf_vector(element: ElementTree.Element, attribute: str, joint: str,
                 kind: str = "joint") -> np.ndarray:
    text = element.get(attribute, "0 0 0")
    try:
        values = np.array([float(item) for item in text.split()])
    except ValueError:
        values = np.zeros(0)
    if values.shape != (3,) or not np.isfinite(values).all():
        raise RobotDescriptionError(
            f"URDF {kind} {joint!r}: {attribute}={text!r}, expected 3 finite numbers")
    return values


_URDF_INERTIA_ATTRIBUTES = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def parse_urdf_inertials(urdf_text: str) -> dict[str, LinkInertial]:
    """The ``<inertial>`` of every URDF link that has one, as a :class:`LinkInertial` in the
    link frame (the inertial frame's rpy turned into the link's axes)."""
    inertials = {}
    for link in _urdf_root(urdf_text).findall("link"):
        name, element = link.get("name", ""), link.find("inertial")
        if element is None:
            continue
        label = f"URDF link {name!r}: <inertial>"
        origin = element.find("origin")
        xyz, rpy = ((np.zeros(3), np.zeros(3)) if origin is None else
                    (_urdf_vector(origin, key, name, "link") for key in ("xyz", "rpy")))
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
            return _number(value, f"{label} <{tag.tag} {key}>")

        values = [attribute(inertia, key) for key in _URDF_INERTIA_ATTRIBUTES]
        xx, xy, xz, yy, yz, zz = values
        rotation = pin.rpy.rpyToMatrix(*rpy)
        turned = rotation @ np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]) @ rotation.T
        inertial = LinkInertial(mass=attribute(mass, "value"), com=tuple(xyz),
                                inertia=tuple(turned[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]))
        _check_inertial(inertial, label)
        inertials[name] = inertial
    return inertials


def _select_urdf_chain(joints: dict[str, _UrdfJoint], selection: list[str] | None) -> list[str]:
    if selection is None:
        movable = [name for name, joint in joints.items() if joint.type != "fixed"]
        unsupported = [name for name in movable if joints[name].type not in _URDF_JOINT_TYPES]
        if unsupported:
            raise RobotDescriptionError(
                f"URDF joint {unsupported[0]!r} is {joints[unsupported[0]].type!r}; only revolute, continuous "
                "and prismatic joints are supported: select the arm's joints with joints: [...]")
        selection = _chain_order(joints, movable)
    for name in selection:
        if name not in joints:
            raise RobotDescriptionError(
                f"joint {name!r} is not in the URDF; URDF joints: {', '.join(joints)}")
        if joints[name].type not in _URDF_JOINT_TYPES:
            raise RobotDescriptionError(
                f"joint {name!r} is a URDF {joints[name].type!r} joint; only revolute, continuous and "
                "prismatic joints are supported")
    if not selection:
        raise RobotDescriptionError("the URDF has no revolute or prismatic joints")
    if len(set(selection)) != len(selection):
        raise RobotDescriptionError(f"joints {selection} contains duplicate names")
    return list(selection)


def _chain_order(joints: dict[str, _UrdfJoint], movable: list[str]) -> list[str]:
    """Movable joints ordered base to tip by their depth in the tree."""
    parent_of = {joint.child: joint for joint in joints.values()}

    def depth(name: str) -> int:
        count, link = 0, joints[name].parent
        while link in parent_of:
            count, link = count + 1, parent_of[link].parent
        return count

    return sorted(movable, key=depth)


_AXES = {"X": np.array([1.0, 0.0, 0.0]), "Y": np.array([0.0, 1.0, 0.0]), "Z": np.array([0.0, 0.0, 1.0])}


def _joint_axis(model: pin.Model, index: int, name: str) -> np.ndarray:
    """Unit axis of joint ``index`` of ``model``, a pinocchio revolute joint (bounded or
    continuous; its rotation axis) or prismatic joint (its direction), in its frame."""
    joint = model.joints[index]
    kind = joint.shortname()
    for prefix in ("JointModelR", "JointModelRUB", "JointModelP"):
        if kind.startswith(prefix) and kind[len(prefix):] in _AXES:
            return _AXES[kind[len(prefix):]]
    if kind in ("JointModelRevoluteUnaligned", "JointModelRevoluteUnboundedUnaligned"):
        axis = joint_motion_subspace(model, index)[3:]   # S = [0; axis]
        return axis / np.linalg.norm(axis)
    if kind == "JointModelPrismaticUnaligned":
        axis = joint_motion_subspace(model, index)[:3]   # S = [axis; 0]
        return axis / np.linalg.norm(axis)
    raise RobotDescriptionError(f"joint {name!r} is a pinocchio {kind}, not a revolute or prismatic joint")


def _why_unreadable(urdf_text: str) -> str | None:
    """What makes a URDF that pinocchio refuses invalid, where it is a link a joint names but no
    ``<link>`` element defines (pinocchio only says the model is not valid)."""
    root = _urdf_root(urdf_text)
    links = {link.get("name") for link in root.findall("link")}
    for joint in root.findall("joint"):
        for role in ("parent", "child"):
            element = joint.find(role)
            name = None if element is None else element.get("link")
            if name not in links:
                return f"link {name!r}, the {role} of joint {joint.get('name')!r}, has no <link> element"
    return None


def urdf_chain(urdf_text: str, joint_names: Sequence[str]) -> list[tuple[pin.SE3, np.ndarray]]:
    """Placement in its parent's frame (the root link for the first) and unit axis of each of
    ``joint_names``, from pinocchio's URDF parser with every other movable joint locked at 0.

    Raises
    ------
    RobotDescriptionError
        pinocchio cannot read the URDF, or the joints are not one chain, base to tip.
    """
    try:
        full = pin.buildModelFromXML(urdf_text)
    except (RuntimeError, ValueError) as error:
        raise RobotDescriptionError(_why_unreadable(urdf_text) or
                                    f"pinocchio cannot read the URDF: {' '.join(str(error).split())}") from None
    return [(placement, axis) for placement, axis, _ in model_chain(full, joint_names, "URDF")]


def model_chain(full: pin.Model, joint_names: Sequence[str], kind: str):
    """``(placement, axis, inertia)`` of each of ``joint_names`` in the pinocchio model ``full`` (of a URDF or an
    MJCF file, named ``kind`` in messages) with every other joint locked at 0: the joint's placement in its
    parent's frame, its unit axis in its frame and the inertia of its body (what moves rigidly with it, about
    and in its frame)."""
    locked = [index for index in range(1, full.njoints) if full.names[index] not in joint_names]
    if locked:
        logger.info("%s joints %s are not selected: held at 0", kind, [full.names[index] for index in locked])
    reduced = pin.buildReducedModel(full, locked, pin.neutral(full)) if locked else full
    chain, previous = [], 0
    for name in joint_names:
        index = reduced.getJointId(name)
        if index >= reduced.njoints:
            raise RobotDescriptionError(f"joint {name!r} is not in the {kind}")
        if reduced.parents[index] != previous:
            below = "the root" if previous == 0 else f"joint {reduced.names[previous]!r}"
            raise RobotDescriptionError(
                f"joint {name!r}: {kind} joint is not the next joint below {below}; the joints must be "
                f"listed base to tip along one chain (select them with joints: [...] when the {kind} branches)")
        chain.append((reduced.jointPlacements[index], _joint_axis(reduced, index, name), reduced.inertias[index]))
        previous = index
    return chain


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
                                else _number(overrides[mapping][joint_name],
                                             f"{mapping}[{joint_name}]")
                                for mapping in _URDF_DRIVE_MAPS))
                   for joint_name in chain)
    return RobotDescription(name=name or robot_name or "robot", joint_names=tuple(chain),
                            limits=limits, gravity=gravity, urdf=urdf_text,
                            drives=drives if any(drive != JointDrive() for drive in drives)
                            else None,
                            joint_types=tuple("prismatic" if joints[joint_name].type == "prismatic" else "revolute"
                                              for joint_name in chain))


def _urdf_limits(joint: _UrdfJoint, overrides: dict[str, dict]) -> JointLimits:
    label = f"joint {joint.name!r}"

    def override(key: str):
        if joint.name not in overrides[key]:
            return None
        value, where = overrides[key][joint.name], f"{key}[{joint.name}]"
        if key == "position_limits":
            return _numbers(value, 2, where, "rad")
        return _number(value, where)

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


def link_bodies(robot: RobotDescription, inertials: bool = True) -> tuple[tuple[LinkBody, ...], ...]:
    """Per joint, the bodies that move rigidly with its link frame, the link itself first.

    DH robots: one body ``"<joint>_link"`` at the link frame, with the joint's ``inertial:``
    entry (or None). URDF robots: the joint's child link, then every link below it reached
    through fixed joints or movable joints that are not selected (held at 0) before the next
    selected joint, each with its ``<inertial>`` (None without one). Links before the first
    selected joint (and branches hanging there) belong to no joint and are left out.
    With ``inertials=False`` the URDF's ``<inertial>`` elements are not read (all None). MJCF robots:
    one body ``"<joint>_link"`` per joint, its body and the bodies fixed below it merged by pinocchio.
    """
    if robot.mjcf is not None:
        from robot_dynid.model.mjcf import mjcf_inertials
        merged = mjcf_inertials(robot) if inertials else (None,) * robot.n_joints
        return tuple((LinkBody(f"{name}_link", pin.SE3.Identity(), inertial),)
                     for name, inertial in zip(robot.joint_names, merged))
    if robot.urdf is None:
        inertials = robot.inertials or (None,) * robot.n_joints
        return tuple((LinkBody(f"{name}_link", pin.SE3.Identity(), inertial),)
                     for name, inertial in zip(robot.joint_names, inertials))
    _, joints = parse_urdf(robot.urdf)
    by_link = parse_urdf_inertials(robot.urdf) if inertials else {}
    selected = set(robot.joint_names)
    below: dict[str, list[_UrdfJoint]] = {}
    for joint in joints.values():
        below.setdefault(joint.parent, []).append(joint)
    groups = []
    for name in robot.joint_names:
        child = joints[name].child
        group, stack = [], [(child, pin.SE3.Identity())]
        while stack:
            link, placement = stack.pop(0)
            group.append(LinkBody(link, placement, by_link.get(link)))
            stack += [(joint.child, placement * joint.placement) for joint in below.get(link, ())
                      if joint.name not in selected]
        groups.append(tuple(group))
    return tuple(groups)
