"""Link inertials: a link's 10 inertial parameters and its mass, centre of mass and inertia, and
the prior parameters a robot description carries.

The regressor's parameters of link ``i`` are ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]``
([kg, kg m x 3, kg m^2 x 6]): mass, first moment ``h = m c`` and inertia about the origin of the
link frame, in its axes (:mod:`robot_dynid.model.regressor`). A :class:`LinkInertial` holds the same
body as URDF does: mass [kg], centre of mass ``c`` [m] and inertia about ``c`` [kg m^2] in the
link frame's axes, in URDF's order ``(ixx, ixy, ixz, iyy, iyz, izz)``. They are related by the
parallel-axis theorem ``I_O = I_c + m (|c|^2 1 - c c^T)``.

:func:`prior_parameters` gives a robot's prior standard inertial parameters from its description:
the ``inertial:`` entries of a DH table, or a URDF's ``<inertial>`` elements, each link's own
merged with those of the links fixed to it (:func:`link_bodies`).

:func:`pseudo_inertia` is the 4x4 matrix whose positive semidefiniteness is physical consistency
(:mod:`robot_dynid.estimation.physical_consistency` builds its checks and programs on it; a payload's
check, :mod:`robot_dynid.model.payload`, too).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.model.regressor import N_INERTIAL, inertia_matrix, inertia_parameter_map
from robot_dynid.model.joint_chains import UrdfJoint, parse_urdf
from robot_dynid.model.mjcf import mjcf_inertials
from robot_dynid.model.robot_description import LinkBody, LinkInertial, RobotDescription
from robot_dynid.model.urdf import parse_urdf_inertials

__all__ = ["URDF_INERTIA_ORDER", "parameters_from_inertial", "inertial_from_parameters", "link_inertials", "link_names",
           "prior_parameters", "pseudo_inertia", "link_bodies"]

#: Indices turning the regressor's inertia order ``(Ixx, Ixy, Iyy, Ixz, Iyz, Izz)`` into URDF's
#: ``(ixx, ixy, ixz, iyy, iyz, izz)``, and back (the permutation is its own inverse).
URDF_INERTIA_ORDER = (0, 1, 3, 2, 4, 5)


def parameters_from_inertial(inertial: LinkInertial, placement: pin.SE3 | None = None) -> np.ndarray:
    """The 10 parameters (regressor order) of a body about the origin of a frame F, in F's axes.

    Parameters
    ----------
    inertial : LinkInertial
        Mass, centre of mass and inertia about it, in the body's own frame B.
    placement : pinocchio.SE3, optional
        B in F (default: B is F).
    """
    about_com = np.concatenate([[inertial.mass], np.zeros(3),
                                np.asarray(inertial.inertia)[list(URDF_INERTIA_ORDER)]])
    placement = pin.SE3.Identity() if placement is None else placement
    com = placement.rotation @ np.asarray(inertial.com) + placement.translation
    return inertia_parameter_map(placement.rotation, com) @ about_com


def inertial_from_parameters(parameters, label: str = "link") -> LinkInertial:
    """Mass [kg], centre of mass [m] and inertia about it [kg m^2] of 10 parameters (regressor
    order, about the frame origin), in the same frame.

    Raises
    ------
    DynIdError
        A negative mass, or a zero mass with a non-zero first moment (no centre of mass), naming
        ``label``.
    """
    parameters = np.asarray(parameters, dtype=float)
    mass, first_moment = float(parameters[0]), parameters[1:4]
    if mass < 0.0 or (mass == 0.0 and first_moment.any()):
        raise DynIdError(f"{label} has mass {mass!r} kg and first moment {first_moment.tolist()} kg m: no body "
                         "has that (a mass must be >= 0, and 0 only with a zero first moment)")
    com = first_moment / mass if mass > 0.0 else np.zeros(3)
    if not np.isfinite(com).all():
        raise DynIdError(f"{label} has mass {mass!r} kg, too small for its first moment {first_moment.tolist()} kg m")
    about_com = inertia_parameter_map(np.eye(3), -com) @ parameters
    return LinkInertial(mass=mass, com=tuple(com), inertia=tuple(about_com[4:][list(URDF_INERTIA_ORDER)]))


def link_inertials(robot: RobotDescription, parameters) -> tuple[LinkInertial, ...]:
    """Per link, :func:`inertial_from_parameters` of the inertial parameters (10 n,) (or the
    first 10 n entries of a full parameter vector) in its link frame."""
    parameters = np.asarray(parameters, dtype=float)
    return tuple(inertial_from_parameters(parameters[N_INERTIAL * index:N_INERTIAL * (index + 1)],
                                          f"link {index + 1} ({name})")
                 for index, name in enumerate(link_names(robot)))


def link_names(robot: RobotDescription) -> tuple[str, ...]:
    """Per joint, the name of its link: the URDF child link, ``"<joint>_link"`` for DH robots."""
    return tuple(group[0].name for group in link_bodies(robot, inertials=False))


def prior_parameters(robot: RobotDescription) -> np.ndarray | None:
    """Prior standard inertial parameters (10 n,) in the regressor's convention, or None when
    the description has no inertial data.

    DH robots: the ``inertial:`` entry of each joint (mass, centre of mass in DH link frame
    ``i``, inertia about it). URDF robots: each selected joint's child link's ``<inertial>`` plus
    those of the links fixed below it (fixed joints, and movable joints that are not selected,
    at 0), moved into the child link frame; a link without ``<inertial>`` weighs nothing, links
    before the first selected joint are ignored. None when no link of the chain has one.
    """
    groups = link_bodies(robot)
    if all(body.inertial is None for group in groups for body in group):
        return None
    return np.concatenate([
        sum((parameters_from_inertial(body.inertial, body.placement) for body in group
             if body.inertial is not None), np.zeros(N_INERTIAL))
        for group in groups])


def pseudo_inertia(link_parameters) -> np.ndarray:
    """The 4x4 pseudo-inertia ``J = [[Sigma, h], [h^T, m]]``, ``Sigma = 0.5 tr(I) 1 - I``.

    Parameters
    ----------
    link_parameters : array_like, shape (10,)
        ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` about the link frame origin
        [kg, kg m, kg m^2].

    Returns
    -------
    ndarray, shape (4, 4)
        [kg m^2] in the 3x3 block, [kg m] in the last column and row, [kg] in the corner.
    """
    values = validators.array(link_parameters, "link parameters", DynIdError, shape=(N_INERTIAL,),
                              axes=("inertial parameters",), finite=False)
    inertia = inertia_matrix(values[4:])
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = values[1:4]
    J[3, 3] = values[0]
    return J


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
    below: dict[str, list[UrdfJoint]] = {}
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
