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
