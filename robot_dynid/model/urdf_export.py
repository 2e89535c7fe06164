"""URDF files of identified models (``robot-dynid export-urdf``).

:func:`export_urdf` writes a model's rigid-body part, its standard inertial parameters, as URDF
``<inertial>`` elements: for each joint, on the link that moves with it, ``<origin>`` at the
centre of mass [m] with ``rpy = 0``, ``<mass>`` [kg] and ``<inertia>`` about the centre of mass
in the link frame's axes [kg m^2].

- URDF robots: the robot's URDF (the model's own, or another with the same joints and joint
  frames, e.g. one with meshes) with the ``<inertial>`` of each joint's child link replaced. The
  identified parameters of a link include every link fixed to it (fixed joints, and movable
  joints that are not among the model's joints, taken at 0: see
  :func:`robot_dynid.model.link_inertials.link_bodies`), so the merged total goes on the child link
  and the ``<inertial>`` of each such fixed link is removed, a comment naming the link it was
  merged into. Links before the first joint keep theirs.
- DH robots: a URDF built from the DH table (standard or modified; the ``base`` row as a fixed
  joint ``dh_base`` to link ``dh_base_link``), root link ``world``, one revolute joint per DH joint
  with the model's joint name, position, velocity and effort limits (effort 0 where unknown), and
  its child link ``<joint>_link``. A URDF link frame is its joint's frame, turning about its z
  axis: for modified DH that is DH frame ``i``; for standard DH it is DH frame ``i-1`` turned by
  ``q_i``, so the parameters, given about DH frame ``i``, are moved into it.

A model's payload (:mod:`robot_dynid.model.payload`) becomes a link of its own, :data:`PAYLOAD_LINK`,
fixed to the payload's frame by the joint :data:`PAYLOAD_JOINT` (for a DH robot, placed at the DH
link frame the payload refers to), its ``<inertial>`` the payload's mass, centre of mass and inertia.

A URDF carries no gravity (the robot's is stated in a comment; the world frame is the URDF root
link, or ``world``), and no friction, rotor inertia or torque offsets: RNEA on the exported URDF
gives the model's rigid-body torques (payload included) only. A model of base parameters only (an ordinary
least-squares fit) has no standard parameters and cannot be exported. :func:`identifiability_warnings`
says which of the inertials written the data did not decide (a rotor inertia inseparable from a
link's, links not excited).
"""
from __future__ import annotations

import dataclasses
import logging
from xml.dom import minidom
from xml.parsers.expat import ExpatError
from xml.sax.saxutils import quoteattr

import numpy as np
import pinocchio as pin

from robot_dynid.errors import DynIdError, RobotDescriptionError
from robot_dynid.joint_names import index_in
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.link_inertials import inertial_from_parameters
from robot_dynid.model.regressor import N_INERTIAL, inertia_parameter_map
from robot_dynid.model.joint_chains import joint_motion_subspace
from robot_dynid.model.robot_description import (LinkInertial, RobotDescription, build_pinocchio_model,
                                                 link_frame_placements)
from robot_dynid.model.link_inertials import link_bodies
from robot_dynid.model.urdf import robot_from_urdf

__all__ = ["KINEMATICS_TOLERANCE", "PAYLOAD_LINK", "PAYLOAD_JOINT", "export_urdf", "identifiability_warnings"]

logger = logging.getLogger(__name__)

#: Joint placements of two URDFs agreeing within this [m, 1] have the same kinematics.
KINEMATICS_TOLERANCE = 1e-9
#: Origin coordinates below this [m, rad] are rounding residue (cos(pi/2) = 6e-17) and written as 0.
_ROUNDING_RESIDUE = 1e-14
_INDENT = "  "
#: Names of the payload's link and of the fixed joint that holds it.
PAYLOAD_LINK = "payload"
PAYLOAD_JOINT = "payload_joint"


def export_urdf(model: DynamicModel, urdf_text: str | None = None) -> str:
    """URDF text with the model's identified link inertials (module docstring).

    Parameters
    ----------
    model : DynamicModel
        A model with standard parameters (``model.standard``).
    urdf_text : str, optional
        URDF robots only: the URDF to edit instead of the model's own; it must hold the model's
        joints with the same joint frames and axes.

    Raises
    ------
    DynIdError
        The model has no standard parameters, or ``urdf_text`` is given for a DH robot;
        RobotDescriptionError (a DynIdError) when ``urdf_text`` is not URDF or its kinematics
        differ from the model's.
    """
    if model.standard is None:
        raise DynIdError(f"the model has base parameters only (method {model.method}), and a URDF needs the standard "
                         "parameters: identify with --consistent, which estimates them (guided by the robot's "
                         "inertial prior where it has one)")
    if model.robot.mjcf is not None:
        raise DynIdError(f"robot {model.robot.name!r} is described by MJCF: export-urdf writes URDF robots and DH "
                         "tables only")
    inertials = _joint_frame_inertials(model)
    if model.robot.urdf is None:
        if urdf_text is not None:
            raise DynIdError(f"robot {model.robot.name!r} is a DH table, not a URDF: its URDF is built from the "
                             "table, there is no URDF to edit")
        return _urdf_from_dh(model, inertials)
    robot = model.robot if urdf_text is None else _same_kinematics(model.robot, urdf_text)
    return _urdf_with_inertials(model, robot, inertials)


def identifiability_warnings(model: DynamicModel) -> list[str]:
    """What in a model's exported inertials the data did not decide, naming the joints: one line each.

    - rotor inertia (armature) that acts on the torques only together with link inertial parameters
      or another rotor's (:meth:`~robot_dynid.model.base_parameters.BaseParameters.companions`): the
      split between them is the prior's (or the regulariser's), and the URDF, which carries no rotor
      inertia, holds only the links' share;
    - links whose inertial parameters enter base parameters the identification flagged as poorly
      excited (``metrics["poorly_excited"]``): their values there come from the prior, not the data.
    """
    base, regressor = model.base, model.regressor
    names, n_inertial = base.standard_names, N_INERTIAL * model.robot.n_joints
    expressions = base.expressions()
    warnings = []
    armature = range(regressor.slices["armature"].start, regressor.slices["armature"].stop)
    for index, row in zip(armature, regressor.armature_rows):
        companions = base.companions(index)
        inertial = [i for i in companions if i < n_inertial]
        # the link parameters known only through this combination carry the split; else every one in it
        alone = [i for i in inertial if base.rows_of(i) == base.rows_of(index)]
        links = sorted({i // N_INERTIAL for i in alone or inertial})
        rotors = [names[i] for i in companions if i in armature]
        if not (links or rotors):
            continue
        value = "" if model.standard is None else f" (the model's {names[index]} = {model.standard[index]:.4g})"
        parts = ([f"the inertia of the link(s) of joint(s) {', '.join(model.joint_names[k] for k in links)}"]
                 if links else []) + ([f"rotor inertia {', '.join(rotors)}"] if rotors else [])
        warnings.append(
            f"rotor inertia {names[index]} of {row.kind} {row.name}{value} acts on the torques only together with "
            f"{' and '.join(parts)} ({'; '.join(expressions[r] for r in base.rows_of(index))}): the data cannot "
            "split them, so the URDF's inertials there hold the share the prior (or the regulariser) gave them, and "
            "no rotor inertia; a simulator needs the armature as well, or these joints' torques are off")
    poor = {}
    for entry in model.metrics.get("poorly_excited", []):
        if entry.get("name") in base.names:
            row, = index_in(base.names, [entry["name"]], "poorly_excited", "the base parameters",
                            kind="base parameter")
            for link in sorted({int(i) // N_INERTIAL for i in np.flatnonzero(base.projection[row, :n_inertial])}):
                poor.setdefault(link, []).append(entry["name"])
    if poor:
        listing = "; ".join(f"{model.joint_names[link]} ({', '.join(rows)})" for link, rows in sorted(poor.items()))
        warnings.append(f"links the data did not excite enough, by joint (poorly excited base parameters): {listing}: "
                        "the URDF's inertials of these links come from the prior there, not from the data")
    return warnings


def _joint_frame_inertials(model: DynamicModel) -> list[LinkInertial]:
    """Per joint, the link's mass properties in its URDF link frame (= pinocchio's joint frame);
    a warning for each that no body can have."""
    placements = link_frame_placements(build_pinocchio_model(model.robot))
    inertials = []
    for index, (joint, placement) in enumerate(zip(model.joint_names, placements)):
        parameters = model.standard[N_INERTIAL * index:N_INERTIAL * (index + 1)]
        inertial = inertial_from_parameters(inertia_parameter_map(placement.rotation, placement.translation)
                                            @ parameters, f"link {index + 1} (joint {joint})")
        principal = np.linalg.eigvalsh(_inertia_matrix(inertial.inertia))
        if inertial.mass <= 0.0 or 2.0 * principal.max() - principal.sum() > 1e-12 * max(principal.sum(), 1e-300):
            logger.warning("link of joint %s: mass %.6g kg, principal moments %s kg m^2 about the centre of mass: "
                           "not physically consistent (mass > 0, moments >= 0 obeying the triangle inequality); "
                           "simulators may refuse it", joint, inertial.mass, np.array2string(principal, precision=4))
        inertials.append(inertial)
    return inertials


def _inertia_matrix(inertia) -> np.ndarray:
    xx, xy, xz, yy, yz, zz = inertia
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def _same_kinematics(robot: RobotDescription, urdf_text: str) -> RobotDescription:
    """The robot of ``urdf_text`` with ``robot``'s joints, refused unless its joint frames and axes
    are ``robot``'s (the inertials refer to them)."""
    other = robot_from_urdf(urdf_text, joints=robot.joint_names)
    mine, theirs = build_pinocchio_model(robot), build_pinocchio_model(other)
    for joint_id, name in enumerate(robot.joint_names, start=1):
        axes = [_joint_axis(model, joint_id) for model in (mine, theirs)]
        if not (mine.jointPlacements[joint_id].isApprox(theirs.jointPlacements[joint_id], KINEMATICS_TOLERANCE)
                and np.allclose(*axes, rtol=0.0, atol=KINEMATICS_TOLERANCE)):
            raise RobotDescriptionError(f"URDF: joint {name!r} has another placement or axis than in the model's "
                                        "robot; the identified inertials refer to the model's joint frames")
    return other


def _joint_axis(model: pin.Model, joint_id: int) -> np.ndarray:
    return joint_motion_subspace(model, joint_id)[3:]


def _numbers(values, clean: bool = False) -> str:
    """Space-separated numbers at full precision; with ``clean``, rounding residue written as 0."""
    values = np.asarray(values, dtype=float)
    if clean:
        values = np.where(np.abs(values) < _ROUNDING_RESIDUE, 0.0, values)
    return " ".join(repr(float(value)) for value in values)


def _origin(placement: pin.SE3) -> str:
    return (f'<origin xyz="{_numbers(placement.translation, clean=True)}" '
            f'rpy="{_numbers(pin.rpy.matrixToRpy(placement.rotation), clean=True)}"/>')


def _inertial_xml(inertial: LinkInertial, indent: str) -> str:
    """An ``<inertial>`` element whose lines after the first are indented by ``indent``."""
    attributes = " ".join(f'{key}="{_numbers([value])}"'
                          for key, value in zip(("ixx", "ixy", "ixz", "iyy", "iyz", "izz"), inertial.inertia))
    inner = indent + _INDENT
    return (f'<inertial>\n{inner}<origin xyz="{_numbers(inertial.com)}" rpy="0.0 0.0 0.0"/>\n'
            f'{inner}<mass value="{_numbers([inertial.mass])}"/>\n{inner}<inertia {attributes}/>\n{indent}</inertial>')


def _comment_text(text: str) -> str:
    """``text`` made valid inside an XML comment (no ``--``)."""
    while "--" in text:
        text = text.replace("--", "- -")
    return f" {text} "


def _about(model: DynamicModel) -> str:
    gravity = ", ".join(f"{value:g}" for value in model.robot.gravity)
    return (f"from a model of robot {model.robot.name!r} (method {model.method}); gravity [{gravity}] m/s^2 in the "
            "root link (a URDF carries none); friction, rotor inertia and torque offsets are not part of it")


def _urdf_from_dh(model: DynamicModel, inertials: list[LinkInertial]) -> str:
    robot = model.robot
    names = ["world", "dh_base_link", *(f"{name}_link" for name in robot.joint_names)]
    if len(set(names)) != len(names) or "dh_base" in robot.joint_names:
        raise DynIdError(f"joint names {list(robot.joint_names)} clash with the URDF's link or joint names {names}")
    placements = list(build_pinocchio_model(robot).jointPlacements)[1:]
    header = (f"Generated by robot-dynid export-urdf {_about(model)}. {robot.dh_convention.capitalize()} DH table: "
              "link <joint>_link is the frame of joint <joint>, which turns about its z axis ("
              + ("DH frame i-1 turned by q_i" if robot.dh_convention == "standard" else "DH frame i")
              + "); its inertial is the identified mass, centre of mass and inertia about it in that frame.")
    lines = ['<?xml version="1.0"?>', f"<!--{_comment_text(header)}-->", f"<robot name={quoteattr(robot.name)}>",
             f'{_INDENT}<link name="world"/>']
    parent = "world"
    if robot.base is not None:
        first_without_base = build_pinocchio_model(dataclasses.replace(robot, base=None)).jointPlacements[1]
        base = placements[0] * first_without_base.inverse()
        placements[0] = first_without_base
        lines += _joint_lines("dh_base", "fixed", parent, "dh_base_link", base)
        lines.append(f'{_INDENT}<link name="dh_base_link"/>')
        parent = "dh_base_link"
    for name, limits, placement, inertial in zip(robot.joint_names, robot.limits, placements, inertials):
        child = f"{name}_link"
        limit = (f'<limit lower="{_numbers([limits.position[0]])}" upper="{_numbers([limits.position[1]])}" '
                 f'effort="{_numbers([limits.effort or 0.0])}" velocity="{_numbers([limits.velocity])}"/>')
        lines += _joint_lines(name, "revolute", parent, child, placement, ['<axis xyz="0 0 1"/>', limit])
        lines += [f"{_INDENT}<link name={quoteattr(child)}>", 2 * _INDENT + _inertial_xml(inertial, 2 * _INDENT),
                  f"{_INDENT}</link>"]
        parent = child
    if model.payload is not None:
        if {PAYLOAD_LINK, PAYLOAD_JOINT} & set(names + list(robot.joint_names)):
            raise DynIdError(f"joint names {list(robot.joint_names)} clash with the payload's link {PAYLOAD_LINK!r} or "
                             f"joint {PAYLOAD_JOINT!r}")
        # the payload's frame is DH link frame n, placed in the URDF link (joint) frame of the last joint
        lines += _payload_lines(model, parent, link_frame_placements(build_pinocchio_model(robot))[-1])
    return "\n".join(lines + ["</robot>", ""])


def _payload_lines(model: DynamicModel, parent: str, placement: pin.SE3) -> list[str]:
    """The fixed joint and the link of ``model``'s payload, its frame at ``placement`` in ``parent``."""
    text = _comment_text(f"payload of {model.payload.mass!r} kg at frame {model.payload.frame!r}, attached by "
                         "robot-dynid payload attach")
    comment = f"{_INDENT}<!--{text}-->"
    return ([comment] + _joint_lines(PAYLOAD_JOINT, "fixed", parent, PAYLOAD_LINK, placement)
            + [f"{_INDENT}<link name={quoteattr(PAYLOAD_LINK)}>",
               2 * _INDENT + _inertial_xml(model.payload.inertial, 2 * _INDENT), f"{_INDENT}</link>"])


def _joint_lines(name: str, kind: str, parent: str, child: str, placement: pin.SE3, extra=()) -> list[str]:
    inner = 2 * _INDENT
    return ([f"{_INDENT}<joint name={quoteattr(name)} type={quoteattr(kind)}>",
             f"{inner}<parent link={quoteattr(parent)}/>", f"{inner}<child link={quoteattr(child)}/>",
             inner + _origin(placement)] + [inner + line for line in extra] + [f"{_INDENT}</joint>"])


def _urdf_with_inertials(model: DynamicModel, robot: RobotDescription, inertials: list[LinkInertial]) -> str:
    try:
        document = minidom.parseString(robot.urdf)
    except ExpatError as error:
        raise RobotDescriptionError(f"URDF: invalid URDF XML: {error}") from None
    root = document.documentElement
    links = {node.getAttribute("name"): node for node in root.childNodes
             if node.nodeType == node.ELEMENT_NODE and node.tagName == "link"}
    replaced = []
    for joint, group, inertial in zip(model.joint_names, link_bodies(robot, inertials=False), inertials):
        owner, fixed = group[0].name, [body.name for body in group[1:]]
        missing = [name for name in (owner, *fixed) if name not in links]
        if missing:
            raise RobotDescriptionError(f"URDF: link {missing[0]!r}, moving with joint {joint!r}, has no <link> "
                                        "element")
        for name in fixed:
            _set_inertial(document, links[name], None, f"inertial merged into link {owner!r} (joint {joint!r}) by "
                                                       "robot-dynid export-urdf")
        merged = f", including the link(s) {', '.join(map(repr, fixed))} merged into it" if fixed else ""
        _set_inertial(document, links[owner], inertial,
                      f"identified by robot-dynid export-urdf for joint {joint!r}{merged}: centre of mass, "
                      "inertia about it in the link frame")
        replaced.append(owner)
    if model.payload is not None:
        taken = set(links) | {node.getAttribute("name") for node in root.getElementsByTagName("joint")}
        if {PAYLOAD_LINK, PAYLOAD_JOINT} & taken:
            raise RobotDescriptionError(f"URDF: it has a link or joint named {PAYLOAD_LINK!r} or {PAYLOAD_JOINT!r} "
                                        "already: the payload's link and joint would clash")
        xml = "\n".join(_payload_lines(model, model.payload.frame, pin.SE3.Identity()))
        fragment = minidom.parseString(f"<robot>\n{xml}\n</robot>").documentElement
        for node in list(fragment.childNodes):
            root.appendChild(document.importNode(node, True))
        root.appendChild(document.createTextNode("\n"))
    header = document.createComment(_comment_text(f"Inertials of the links {', '.join(map(repr, replaced))} "
                                                  f"replaced by robot-dynid export-urdf {_about(model)}."))
    document.insertBefore(header, root)
    return '<?xml version="1.0"?>\n' + "\n".join(node.toxml() for node in document.childNodes) + "\n"


def _set_inertial(document: minidom.Document, link: minidom.Element, inertial: LinkInertial | None,
                  comment: str) -> None:
    """Replace the ``<inertial>`` elements of ``link`` by ``comment`` and, unless None, ``inertial``,
    indented as the link's children are."""
    children = [node for node in link.childNodes if node.nodeType == node.ELEMENT_NODE]
    old = [node for node in children if node.tagName == "inertial"]
    link_indent = _indentation(link)
    indent = _indentation(children[0]) if children and _indentation(children[0]) else link_indent + _INDENT
    nodes = [document.createComment(_comment_text(comment))]
    if inertial is not None:
        element = minidom.parseString(_inertial_xml(inertial, indent)).documentElement
        nodes += [document.createTextNode("\n" + indent), document.importNode(element, True)]
    if old:
        for node in nodes:
            link.insertBefore(node, old[0])
        for node in old:
            link.removeChild(node)
        return
    tail = link.firstChild if link.firstChild is not None else document.createTextNode("\n" + link_indent)
    if link.firstChild is None:
        link.appendChild(tail)
    for node in [document.createTextNode("\n" + indent)] + nodes:
        link.insertBefore(node, tail)


def _indentation(node) -> str:
    """The spaces before ``node`` on its line ('' when it does not start a line)."""
    before = node.previousSibling
    if before is None or before.nodeType != before.TEXT_NODE or "\n" not in before.data:
        return ""
    last = before.data.rsplit("\n", 1)[1]
    return last if not last.strip() else ""
