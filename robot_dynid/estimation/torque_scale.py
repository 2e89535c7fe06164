"""Recorded torques against the gravity torque the robot description's inertial data predicts.

A recording whose "torques" are motor currents [A], or torques with a gear ratio applied twice, or
in N mm, identifies a model off by that factor, silently: every column scales alike. Where the
description carries inertial data (a prior: URDF ``<inertial>``, DH ``inertial:``), its gravity
torque ``g(q) = Y(q, 0, 0) pi_prior`` [N m] at the recording's slow samples (every joint below
:data:`SLOW_FRACTION` of its velocity limit and acceleration limit: at rest or nearly, where inertial
and viscous terms vanish) is compared with the recorded torque joint by joint, by the least-squares
scale ``s_j = (tau_j . g_j) / (g_j . g_j)``. A joint whose ``s_j`` is beyond :data:`MAX_SCALE_ERROR`
either way (or of the opposite sign) is an error naming the joint, the factor and its likely cause
(identification and validation make it unless ``--no-torque-check``).
Joints the prior leaves nearly unloaded (gravity RMS below :data:`MIN_GRAVITY_FRACTION` of their
effort limit, or 1 N m without one) are not judged: their torque is mostly friction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.recording import Recording

MAX_SCALE_ERROR = 3.0
"""Recorded over predicted gravity torque beyond this factor (or below its inverse) is a unit mistake."""
SLOW_FRACTION = 0.1
"""Samples count as slow when every joint is below this fraction of its velocity and acceleration limits."""
MIN_SLOW_SAMPLES = 20
MIN_GRAVITY_FRACTION = 0.02
"""Joints whose prior gravity torque RMS is below this fraction of their effort limit are not judged."""
MIN_GRAVITY_TORQUE = 1.0
"""[N m] the same bound for joints without an effort limit."""


@dataclass(frozen=True)
class TorqueScale:
    """Per joint, recorded over predicted gravity torque on the slow samples.

    Attributes
    ----------
    joint_names : tuple of str
    scale : ndarray, shape (n,)
        ``s_j`` [1]; NaN for joints not judged (gravity too small).
    n_samples : int
        Slow samples compared.
    """

    joint_names: tuple[str, ...]
    scale: np.ndarray
    n_samples: int


def torque_scale(recording: Recording, robot: RobotDescription) -> TorqueScale | None:
    """:class:`TorqueScale` of ``recording`` (joints in ``robot``'s order, torques in ``tau``), or None
    when the description has no inertial data or the recording has fewer than
    :data:`MIN_SLOW_SAMPLES` slow samples."""
    prior = prior_parameters(robot)
    if prior is None or recording.tau is None or recording.qd is None:
        return None
    _, _, velocity, acceleration, effort = robot.limit_arrays()
    slow = np.all(np.abs(recording.qd) <= SLOW_FRACTION * velocity, axis=1)
    if recording.qdd is not None:
        slow &= np.all(np.abs(recording.qdd) <= SLOW_FRACTION * acceleration, axis=1)
    if np.count_nonzero(slow) < MIN_SLOW_SAMPLES:
        return None
    q = recording.q[slow]
    zeros = np.zeros_like(q)
    gravity = Regressor(robot).torque(prior, q, zeros, zeros)
    tau = recording.tau[slow]
    rms = np.sqrt(np.mean(gravity**2, axis=0))
    floor = np.where(np.isfinite(effort), MIN_GRAVITY_FRACTION * effort, MIN_GRAVITY_TORQUE)
    with np.errstate(invalid="ignore", divide="ignore"):
        scale = np.where(rms >= floor, np.sum(tau * gravity, axis=0) / np.sum(gravity**2, axis=0), np.nan)
    return TorqueScale(tuple(robot.joint_names), scale, int(np.count_nonzero(slow)))


def check_torque_scale(recording: Recording, robot: RobotDescription) -> TorqueScale | None:
    """:func:`torque_scale`, raising for the first joint whose scale is off.

    Raises
    ------
    DataError
        Naming the recording, the joint, the factor and its likely cause: recorded torques many times
        smaller than predicted (motor currents [A] passed as joint torques [N m]; torques on the motor
        side), many times larger (a gear ratio applied twice; N mm), or of the opposite sign (a joint
        direction or torque sign convention that differs from the description).
    """
    result = torque_scale(recording, robot)
    if result is None:
        return None
    for joint, scale in zip(result.joint_names, result.scale):
        if not np.isfinite(scale) or 1.0 / MAX_SCALE_ERROR <= scale <= MAX_SCALE_ERROR:
            continue
        where = (f"{recording.source}: joint {joint}: the recorded torques are {scale:.3g} times the gravity torque "
                 f"the robot description's inertial data predicts at the {result.n_samples} slow samples")
        if scale < 0.0:
            cause = ("of the opposite sign: does the joint's direction or the drive's torque sign convention differ "
                     "from the description?")
        elif scale < 1.0:
            cause = (f"({1.0 / scale:.3g} times smaller): are these motor currents [A] passed as torques [N m] (give "
                     "them as current.<motor> columns or --current-topic, with the transmission's torque_constants "
                     "[N m/A]), or torques at the motor side of the gear (taum.<motor> columns, --motor-states-topic)?")
        else:
            cause = "(too large): is a gear ratio applied twice, or are the torques in N mm?"
        raise DataError(f"{where}, {cause} If the description's inertial data is what is wrong, fix or remove it, "
                        "or pass --no-torque-check.")
    return result
