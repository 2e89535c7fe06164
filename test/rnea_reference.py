"""Independent torques for tests: pinocchio's RNEA with inertias set from link parameters.

The link parameters ``[m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]`` refer to each link frame;
pinocchio moves them to its joint frames (``SE3.act``), a route separate from the regressor's.
"""
import numpy as np
import pinocchio as pin

from robot_dynid.model.robot_description import build_pinocchio_model, link_frame_placements


def rnea_torques(robot, inertial, q, qd, qdd):
    """Rigid-body joint torques [N m], shape (N, n) or (n,) like ``q``, from ``inertial`` (10 n,)."""
    model = build_pinocchio_model(robot)
    for joint_id, link_frame in enumerate(link_frame_placements(model), start=1):
        model.inertias[joint_id] = link_frame.act(
            pin.Inertia.FromDynamicParameters(np.asarray(inertial[10 * joint_id - 10:10 * joint_id], float)))
    data = model.createData()
    single = np.ndim(q) == 1
    states = zip(*(np.atleast_2d(np.asarray(x, float)) for x in (q, qd, qdd)))
    tau = np.array([pin.rnea(model, data, *state) for state in states])
    return tau[0] if single else tau


def rnea_urdf_with_payload(urdf_text, inertial, payload, q, qd, qdd, gravity=(0.0, 0.0, -9.81)):
    """Rigid-body torques [N m] (N, n) of a URDF arm whose every joint is moved (the link frames are
    pinocchio's joint frames), links ``inertial`` (10 n,), plus a payload: ``(frame, mass [kg], com (3,) [m],
    inertia about the com [kg m^2] (3, 3))`` fixed to the URDF link ``frame``, or None.

    The model comes from pinocchio's own URDF parser, so the payload frame's placement is pinocchio's
    (``Model.frames``), not robot_dynid's, and the body is added with ``appendBodyToJoint``.
    """
    model = pin.buildModelFromXML(urdf_text)
    model.gravity = pin.Motion(np.asarray(gravity, float), np.zeros(3))
    for joint_id in range(1, model.njoints):
        model.inertias[joint_id] = pin.Inertia.FromDynamicParameters(
            np.asarray(inertial[10 * joint_id - 10:10 * joint_id], float))
    if payload is not None:
        frame, mass, com, inertia = payload
        placement = model.frames[model.getFrameId(frame)]
        joint = placement.parentJoint if hasattr(placement, "parentJoint") else placement.parent
        model.appendBodyToJoint(joint, pin.Inertia(mass, np.asarray(com, float), np.asarray(inertia, float)),
                                placement.placement)
    data = model.createData()
    return np.array([pin.rnea(model, data, *state) for state in zip(*(np.atleast_2d(x) for x in (q, qd, qdd)))])
