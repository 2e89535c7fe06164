"""Motor-side recordings turned into joint-side ones through the robot's transmission ``qm = T q``.

A drive reports its motor's angle, speed and torque (or current) before the gear. With the robot
description's transmission (:class:`robot_dynid.model.transmission.Transmission`; T is n x n, one row
per motor, one column per joint) they become joint quantities:

=========  =========================  ===================================================
motor      unit                       joint side
=========  =========================  ===================================================
qm         rad at the motor           q = T^-1 qm [rad; m for a prismatic joint]
qdm        rad/s at the motor         qd = T^-1 qdm
qddm       rad/s^2 at the motor       qdd = T^-1 qddm
taum       N m at the motor           tau = T^T taum [N m; N]
current    A                          tau = T^T (k_t current), k_t the torque_constants [N m/A]
=========  =========================  ===================================================

Each quantity (position, velocity, acceleration, torque) comes from one side: a file or bag may
mix sides across quantities (joint encoders with motor torques), never within one.
"""
from __future__ import annotations

import numpy as np

from robot_dynid.errors import DataError

__all__ = ["MOTOR_FIELDS", "require_transmission", "require_torque_constants", "check_joint_count",
           "joint_values"]

MOTOR_FIELDS = {"qm": "q", "qdm": "qd", "qddm": "qdd", "taum": "tau", "current": "tau"}
"""Motor-side field -> the joint-side field (:data:`robot_dynid.recordings.recording.JOINT_FIELDS`) it becomes."""

_ADD_TRANSMISSION = ("add a transmission: section (motors, motor_from_joint [rad/rad]; docs/robot_description.md, "
                     "Drive trains) to the robot description")


def require_transmission(transmission, source: str, what: str, joint_side: str):
    """``transmission``, or DataError saying that ``what`` (motor-side data of ``source``) need one, or
    ``joint_side`` data instead."""
    if transmission is None:
        raise DataError(f"{source}: {what} are motor-side, and the robot description has no transmission to turn "
                        f"them into joint values: {_ADD_TRANSMISSION}, or give {joint_side}")
    return transmission


def require_torque_constants(transmission, source: str, what: str, instead: str) -> None:
    """DataError unless ``transmission`` has torque constants to read the motor currents ``what`` of ``source``."""
    if transmission.torque_constants is None:
        raise DataError(f"{source}: {what} are motor currents [A], and the robot description's transmission has no "
                        "torque_constants [N m/A] to turn them into motor torques: add transmission.torque_constants "
                        f"(one per motor: {list(transmission.motor_names)}), or give {instead}")


def check_joint_count(transmission, joint_names, source: str) -> None:
    """DataError unless ``joint_names`` are as many as the transmission's motors (its columns, robot order)."""
    if joint_names is None or len(joint_names) != transmission.n_motors:
        raise DataError(f"{source}: motor-side data need all {transmission.n_motors} joints of the transmission, in "
                        f"the robot's order; got joint names {None if joint_names is None else list(joint_names)}")


def joint_values(field: str, values, transmission) -> np.ndarray:
    """Motor-side ``values`` (N, n) of ``field`` (a key of :data:`MOTOR_FIELDS`, motor order) as joint-side
    values (N, n) in the transmission's joint order; a row holding NaN or inf becomes a NaN row."""
    values = np.asarray(values, dtype=float)
    result = np.full(values.shape, np.nan)
    finite = np.isfinite(values).all(axis=1)
    if not finite.any():
        return result
    rows = values[finite]
    if field == "current":
        rows = transmission.motor_torques_from_current(rows)
    if MOTOR_FIELDS[field] == "tau":
        result[finite] = transmission.joint_torques(rows)
    else:
        result[finite] = transmission.joint_from_motor_values(rows)
    return result
