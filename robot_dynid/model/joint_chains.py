"""Joint chains of URDF and MJCF text, read with pinocchio (and ``xml.etree`` for what pinocchio does not keep).

Below :mod:`~robot_dynid.model.robot_description`, whose kinematics of a URDF or MJCF robot come from here, and
the URDF and MJCF loaders (:mod:`~robot_dynid.model.urdf`, :mod:`~robot_dynid.model.mjcf`), which build a
:class:`~robot_dynid.model.robot_description.RobotDescription` from the same text:

- :func:`parse_urdf`: every URDF joint as written (type, parent and child link, origin, axis, ``<limit>``);
- :func:`urdf_chain`, :func:`mjcf_chain`: each selected joint's placement in its parent's frame and its axis
  (and, for MJCF, the inertia of its body), the other joints locked at 0 (:func:`model_chain`);
- :func:`mjcf_continuous`, :func:`mjcf_joint_kind`: an MJCF joint's kind and whether it turns without end.
"""
from __future__ import annotations

import functools
import logging
import os
import tempfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pinocchio as pin

from robot_dynid.errors import RobotDescriptionError, message_line

__all__ = ["MAX_LENGTH", "UrdfJoint", "urdf_root", "parse_urdf", "urdf_vector", "urdf_chain", "model_chain",
           "mjcf_model", "mjcf_joint_kind", "mjcf_chain", "mjcf_continuous", "joint_motion_subspace"]

logger = logging.getLogger(__name__)

MAX_LENGTH = 50.0
"""[m] the longest length (DH ``a``, ``d``, a joint origin, a centre of mass) a description may give: beyond it,
a value looks like millimetres."""


@dataclass(frozen=True)
class UrdfJoint:
    """A URDF joint as written: ``placement`` of its origin in the parent link frame, ``axis`` (3,), ``limit`` the
    numeric attributes of its ``<limit>``."""

    name: str
    type: str
    parent: str
    child: str
    placement: pin.SE3
    axis: np.ndarray
    limit: dict


def urdf_root(urdf_text: str) -> ElementTree.Element:
    try:
        root = ElementTree.fromstring(urdf_text)
    except ElementTree.ParseError as error:
        raise RobotDescriptionError(f"invalid URDF XML: {error}") from None
    if root.tag != "robot":
        raise RobotDescriptionError(f"URDF root element is <{root.tag}>, expected <robot>")
    return root


def parse_urdf(urdf_text: str) -> tuple[str, dict[str, UrdfJoint]]:
    root = urdf_root(urdf_text)
    joints = {}
    for element in root.findall("joint"):
        name = element.get("name")
        parent, child = element.find("parent"), element.find("child")
        if not name or parent is None or child is None:
            raise RobotDescriptionError(
                f"URDF joint {name!r} needs a name, <parent link> and <child link>")
        origin = element.find("origin")
        xyz = urdf_vector(origin, "xyz", name) if origin is not None else np.zeros(3)
        rpy = urdf_vector(origin, "rpy", name) if origin is not None else np.zeros(3)
        for value in xyz:
            if abs(value) > MAX_LENGTH:
                raise RobotDescriptionError(
                    f"URDF joint {name!r} origin xyz = {xyz.tolist()} m looks like millimetres "
                    f"(expected |x| <= {MAX_LENGTH} m)")
        axis_element = element.find("axis")
        axis = (urdf_vector(axis_element, "xyz", name) if axis_element is not None
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
        joints[name] = UrdfJoint(name=name, type=element.get("type", ""),
                                 parent=parent.get("link", ""), child=child.get("link", ""),
                                 placement=pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz),
                                 axis=axis, limit=limit)
    return root.get("name", ""), joints


def urdf_vector(element: ElementTree.Element, attribute: str, joint: str,
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
    root = urdf_root(urdf_text)
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
                                    f"pinocchio cannot read the URDF: {message_line(error)}") from None
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


@functools.lru_cache(maxsize=8)
def mjcf_model(mjcf_text: str) -> pin.Model:
    """Pinocchio's model of MJCF text (its parser reads files: through a temporary one)."""
    if not hasattr(pin, "buildModelFromMJCF"):
        raise RobotDescriptionError(f"reading MJCF needs pinocchio >= 3 (this is {pin.__version__}): "
                                    "pip install -U pin")
    with tempfile.TemporaryDirectory(prefix="robot_dynid_mjcf_") as directory:
        path = os.path.join(directory, "robot.xml")
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(mjcf_text)
        try:
            return pin.buildModelFromMJCF(path)
        except (RuntimeError, ValueError) as error:
            raise RobotDescriptionError(f"pinocchio cannot read the MJCF: {message_line(error)}") from None


def mjcf_joint_kind(model: pin.Model, index: int) -> str:
    name = model.joints[index].shortname()
    revolute = ("JointModelRX", "JointModelRY", "JointModelRZ")
    if name.startswith(("JointModelRevolute", "JointModelRUB")) or name in revolute:
        return "revolute"
    if name.startswith("JointModelPrismatic") or name in ("JointModelPX", "JointModelPY", "JointModelPZ"):
        return "prismatic"
    raise RobotDescriptionError(f"MJCF joint {model.names[index]!r} is a pinocchio {name}; only hinge and slide "
                                "joints are supported (select the arm's joints with joints: [...])")


def mjcf_chain(mjcf_text: str, joint_names: Sequence[str]):
    """``(placement, axis, inertia)`` of each of ``joint_names`` (see :func:`model_chain`)."""
    return model_chain(mjcf_model(mjcf_text), joint_names, "MJCF")


def mjcf_continuous(mjcf_text: str, joint_names: Sequence[str]) -> tuple[bool, ...]:
    """Per joint, True for a hinge without a ``range`` (it turns without end)."""
    model = mjcf_model(mjcf_text)
    return tuple(mjcf_joint_kind(model, model.getJointId(name)) == "revolute"
                 and not np.isfinite(model.upperPositionLimit[model.joints[model.getJointId(name)].idx_q])
                 for name in joint_names)


def joint_motion_subspace(model: pin.Model, joint_id: int) -> np.ndarray:
    """Motion subspace ``S = [v; w]`` (6,) of the one-degree-of-freedom joint ``joint_id`` at the
    neutral configuration, in the joint's frame: the joint's own velocity at unit speed, every
    other joint at rest (pinocchio 2 has neither ``JointModel.createData`` nor ``extract`` in
    Python, so it is read from the kinematics)."""
    data = model.createData()
    velocity = np.zeros(model.nv)
    velocity[model.joints[joint_id].idx_v] = 1.0
    pin.forwardKinematics(model, data, pin.neutral(model), velocity)
    motion = data.v[joint_id]
    return np.concatenate([np.array(motion.linear, dtype=float), np.array(motion.angular, dtype=float)])
