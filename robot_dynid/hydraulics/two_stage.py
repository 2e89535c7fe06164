"""Two-stage identification of a hydraulic arm (hydraulic paper; METHODS.md sections 4 and 8).

Stage 1 identifies each cylinder's stiffness and friction (:mod:`robot_dynid.hydraulics.cylinder`).
Stage 2 takes joint torques that the cylinders' pressures produce, ``tau_h = sum_c r_c(q) (p_a A_a - p_b A_b)``
[N m] (the ``tau`` of an arm recording), subtracts each cylinder's own force model mapped to the joints,

    tau_rb = tau_h - sum_c r_c(q) (m_c x_c'' + c_c x_c' + K_c x_c + F_d,c(x_c'))

(``r_c(q)`` the moment arms of :mod:`robot_dynid.hydraulics.attachment`, ``x_c`` from the kinematics),
and identifies the arm's rigid-body base parameters from ``tau_rb`` by least squares
(:func:`robot_dynid.estimation.identification.identify`), with joint friction left to the cylinders.

A model identified so records the subtraction in its provenance (:func:`cylinder_provenance`): validating
it on torques that still hold the cylinders' friction would report that friction as model error, and
:func:`cylinder_subtraction_warning` says so.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.hydraulics.attachment import CylinderGeometry
from robot_dynid.hydraulics.cylinder import cylinder_regressor

__all__ = ["CYLINDERS_KEY", "SUBTRACTED_KEY", "cylinder_geometry", "cylinder_internal_torques",
           "subtract_cylinder_torques", "cylinder_provenance", "cylinder_subtraction_warning"]

logger = logging.getLogger(__name__)

CYLINDERS_KEY = "cylinders"
"""Provenance key of a model identified on torques with cylinder torques subtracted: the results file."""
SUBTRACTED_KEY = "cylinder_torques_subtracted"
"""Provenance key of the names of the cylinders whose internal torques were subtracted."""


def cylinder_geometry(robot, results) -> CylinderGeometry:
    """:class:`CylinderGeometry` of identified cylinders
    (:class:`~robot_dynid.hydraulics.cylinder_results.CylinderResult` or :class:`CylinderConfig`), each of which
    must have an attachment."""
    configs = [getattr(result, "config", result) for result in results]
    missing = [config.name for config in configs if config.attachment is None]
    if missing:
        raise DataError(f"cylinder {missing[0]!r} has no attachment: its force cannot be mapped to joint torques "
                        "(give attachment: in the cylinder configuration)")
    return CylinderGeometry(robot, [config.attachment for config in configs], [config.name for config in configs])


def cylinder_internal_torques(robot, results, q, qd, qdd, geometry: CylinderGeometry | None = None) -> np.ndarray:
    """``sum_c r_c(q) (m x'' + c x' + K x + F_d(x'))`` [N m], (N, n): the torque the cylinders' own
    inertia, damping, stiffness and friction take from the hydraulic torque.

    Parameters
    ----------
    robot : RobotDescription
    results : sequence of CylinderResult
        Identified cylinders with attachments.
    q, qd, qdd : array_like, shape (N, n)
        Joint motion [rad, rad/s, rad/s^2] in ``robot.joint_names`` order.
    """
    geometry = geometry or cylinder_geometry(robot, results)
    motion = geometry.motion(q, qd, qdd)
    torque = np.zeros(np.shape(motion.moment_arms)[::2])
    for index, result in enumerate(results):
        cylinder = result.config.cylinder
        x, xd, xdd = motion.x[:, index], motion.xd[:, index], motion.xdd[:, index]
        force = cylinder.piston_mass * xdd + cylinder.damping * xd \
            + cylinder_regressor(x, xd) @ result.parameters.as_array()
        torque += motion.moment_arms[:, index, :] * force[:, None]
    return torque


def subtract_cylinder_torques(recording, robot, results):
    """``recording`` (q, qd, qdd and hydraulic torques ``tau`` [N m]) with the cylinders' internal torques
    (:func:`cylinder_internal_torques`) subtracted: the rigid-body torques stage 2 identifies from."""
    if recording.tau is None or recording.qd is None or recording.qdd is None:
        raise DataError(f"{recording.source}: the two-stage identification needs q, qd, qdd and tau")
    ordered = recording.reorder(robot.joint_names)
    internal = cylinder_internal_torques(robot, results, ordered.q, ordered.qd, ordered.qdd)
    logger.info("%s: cylinder internal torques RMS %s N m", recording.source,
                np.array2string(np.sqrt(np.mean(internal**2, axis=0)), precision=3))
    return dataclasses.replace(ordered, tau=ordered.tau - internal)


def cylinder_provenance(path, results) -> dict:
    """Provenance entries of a model identified on torques with ``results``' internal torques subtracted:
    ``{"cylinders": <results file>, "cylinder_torques_subtracted": [names]}``."""
    return {CYLINDERS_KEY: str(path), SUBTRACTED_KEY: [result.name for result in results]}


def cylinder_subtraction_warning(provenance, source: str, path=None, results=None) -> str:
    """'' when the cylinder torques subtracted from validation data (``results`` from the file ``path``, or
    None: nothing subtracted) match what the model (``provenance``, its file ``source``) was identified
    with, else a one-line warning naming the ``--cylinders`` option."""
    used = provenance.get(CYLINDERS_KEY)
    if results is None:
        if used is None:
            return ""
        return (f"{source} was identified with the cylinder torques of {used} subtracted (--cylinders): without "
                "--cylinders the validation torques still hold the cylinders' friction, stiffness and inertia, and "
                "the RMS counts them as model error; give --cylinders")
    if used is None:
        return (f"{source} was identified without --cylinders: its torques held the cylinders' friction, which "
                f"--cylinders {path} subtracts here; the RMS compares unlike torques")
    names = [result.name for result in results]
    expected = provenance.get(SUBTRACTED_KEY)
    if expected is not None and list(expected) != names:
        return (f"--cylinders {path} has cylinders {names}, but {source} was identified with those of {used} "
                f"subtracted ({list(expected)})")
    return ""
