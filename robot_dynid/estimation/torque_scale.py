"""Recorded torques against the gravity torque the robot description's inertial data predict: one check for
every reader of torques.

A recording whose "torques" are motor currents [A], or torques with a gear ratio applied twice, or in N mm,
identifies a model off by that factor, silently: every column scales alike. Where the description carries
inertial data (a prior: URDF ``<inertial>``, DH ``inertial:``), its gravity torque ``g(q) = Y(q, 0, 0) pi``
[N m] is compared with the recorded torque, joint by joint, on the samples the command uses (after its stage,
cycle and trim selection: ``identify``, ``validate``, ``report``, ``payload identify``, ``fleet`` and the
identifier node call :func:`check_torque_scale` on the same samples their fit or evaluation uses).

Which samples judge a joint ``j``:

- slow samples: every joint below :data:`SLOW_FRACTION` of its velocity and acceleration limits (at rest or
  nearly, where inertial and viscous terms vanish);
- of those, the samples where the predicted gravity torque is large: ``|g_j(q)|`` at least
  :data:`GRAVITY_FRACTION` of the joint's largest gravity torque over its range of motion (``G_j``, over
  :data:`RANGE_POSES` poses within the limits) and at least :data:`MIN_GRAVITY_FRACTION` of its effort limit
  (:data:`MIN_GRAVITY_TORQUE` without one). Near a pose where gravity crosses zero (an arm upright at its home
  pose) the ratio of two small torques says nothing: a centre of mass a centimetre off in the description, or
  the friction that holds a joint at rest, changes it by any factor;
- at least :data:`MIN_SLOW_SAMPLES` of them, else the joint is not judged (``notes`` says why).

The joint's scale is the median of the per-sample ratios ``tau_j / g_j`` over those samples (robust to a
minority of samples with a brake engaged, a spike, a stale value). A scale beyond :data:`MAX_SCALE_ERROR`
either way (or of the opposite sign) is a :class:`~robot_dynid.errors.DataError` naming the joint, the factor
and its likely cause.

Payloads: a known payload (a model's, :meth:`DynamicModel.payload`) adds its gravity torque to the
prediction. A payload being identified (:class:`UnknownPayload`) is accounted for by what it cannot be: a body
of mass ``0 <= m <= max_mass`` (:data:`~robot_dynid.model.payload_defaults.IMPLAUSIBLE_MASS_FACTOR` times the robot's
``rated_payload``; unbounded when that is unknown) whose centre of mass lies within ``com_distance`` [m] of its
frame adds to ``g_j(q_k)`` a torque ``p_k`` in a known interval ``m [t_k - e_k, t_k + e_k]`` (``t_k`` the
gravity torque of a unit mass at the frame's origin, ``e_k`` how far moving it by ``com_distance`` changes
that), so the per-sample ratio lies in ``a + [l_k, h_k]`` with ``a`` in the prior's tolerance; the median
being monotone, the joint's median ratio must lie in ``[1 / MAX_SCALE_ERROR + median l, MAX_SCALE_ERROR +
median h]``. Where the payload can only add torque in gravity's direction (it hangs on the same side of the
axis as the arm), recorded torques many times smaller are still refused; an unbounded mass leaves "too large"
unjudged.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.payload import Payload, PayloadRegressor
from robot_dynid.model.payload_defaults import IMPLAUSIBLE_MASS_FACTOR
from robot_dynid.model.regressor import Regressor
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.recording import Recording

__all__ = ["MAX_SCALE_ERROR", "SLOW_FRACTION", "MIN_SLOW_SAMPLES", "GRAVITY_FRACTION", "MIN_GRAVITY_FRACTION",
           "MIN_GRAVITY_TORQUE", "RANGE_POSES", "PAYLOAD_COM_DISTANCE", "TURN_OFF", "UnknownPayload", "TorqueScale",
           "slow_samples", "range_poses", "torque_scale", "check_torque_scale"]

logger = logging.getLogger(__name__)

MAX_SCALE_ERROR = 3.0
"""Recorded over predicted gravity torque beyond this factor (or below its inverse) is a unit mistake."""
SLOW_FRACTION = 0.1
"""Samples count as slow when every joint is below this fraction of its velocity and acceleration limits."""
MIN_SLOW_SAMPLES = 50
"""Fewest samples that judge a joint."""
GRAVITY_FRACTION = 0.25
"""A sample judges a joint where the predicted gravity torque is at least this fraction of the joint's largest."""
MIN_GRAVITY_FRACTION = 0.1
"""... and at least this fraction of its effort limit (friction at rest stays well below)."""
MIN_GRAVITY_TORQUE = 1.0
"""[N m] the same bound for joints without an effort limit."""
RANGE_POSES = 512
"""Poses (uniform within the position limits, a fixed seed) over which a joint's largest gravity torque is taken."""
PAYLOAD_COM_DISTANCE = 0.25
"""[m] the centre of mass of a payload being identified lies within this distance of its frame (a tool, a part)."""
TURN_OFF = ("turn the check off (--no-torque-check; the identifier node's parameter check_torque_scale; a fleet "
            "manifest's torque_check column)")
"""How the check is turned off, in every face's words."""


@dataclass(frozen=True)
class UnknownPayload:
    """A payload being identified (module docstring).

    Attributes
    ----------
    frame : str or None
        Its frame (:func:`~robot_dynid.model.payload.payload_frames`); None: the last link.
    max_mass : float or None
        [kg] the heaviest it may be; None: unbounded (:meth:`for_robot` when the rated payload is unknown).
    com_distance : float
        [m] its centre of mass lies within this distance of ``frame``'s origin.
    """

    frame: str | None = None
    max_mass: float | None = None
    com_distance: float = PAYLOAD_COM_DISTANCE

    @classmethod
    def for_robot(cls, robot: RobotDescription, frame: str | None = None) -> "UnknownPayload":
        """At ``frame``, at most :data:`~robot_dynid.model.payload_defaults.IMPLAUSIBLE_MASS_FACTOR` times ``robot``'s
        ``rated_payload`` [kg] (unbounded without one)."""
        rated = robot.rated_payload
        return cls(frame, None if rated is None else IMPLAUSIBLE_MASS_FACTOR * rated)

    def describe(self) -> str:
        mass = "any mass" if self.max_mass is None else f"up to {self.max_mass:.4g} kg"
        where = "the last link" if self.frame is None else self.frame
        return f"a payload being identified ({mass}, centre of mass within {self.com_distance:g} m of {where})"


@dataclass(frozen=True)
class TorqueScale:
    """Per joint, recorded over predicted gravity torque on the judging samples (module docstring).

    Attributes
    ----------
    joint_names : tuple of str
    scale : ndarray, shape (n,)
        ``s_j`` [1], the median ratio; NaN for joints not judged.
    low, high : ndarray, shape (n,)
        [1] the range of ``s_j`` accepted (``1 / MAX_SCALE_ERROR`` and ``MAX_SCALE_ERROR``, widened by what a
        payload being identified could add; -inf / inf where it could add anything).
    n_judged : ndarray of int, shape (n,)
        Samples that judged each joint.
    n_samples : int
        Slow samples.
    against : str
        What the torques were compared with (the description's inertial data, a payload).
    notes : tuple of str
        Why joints were not judged.
    """

    joint_names: tuple[str, ...]
    scale: np.ndarray
    low: np.ndarray
    high: np.ndarray
    n_judged: np.ndarray
    n_samples: int
    against: str
    notes: tuple[str, ...] = ()

    def off(self) -> list[int]:
        """Indices of the joints whose scale lies outside ``[low, high]``."""
        return [j for j, scale in enumerate(self.scale)
                if np.isfinite(scale) and not self.low[j] <= scale <= self.high[j]]


def slow_samples(recording: Recording, robot: RobotDescription) -> np.ndarray:
    """(N,) True where every joint of ``recording`` (in ``robot``'s order) is below :data:`SLOW_FRACTION` of its
    velocity and acceleration limits (accelerations unknown: velocities only)."""
    _, _, velocity, acceleration, _ = robot.limit_arrays()
    slow = np.all(np.abs(recording.qd) <= SLOW_FRACTION * velocity, axis=1)
    if recording.qdd is not None:
        slow &= np.all(np.abs(recording.qdd) <= SLOW_FRACTION * acceleration, axis=1)
    return slow


def range_poses(robot: RobotDescription, count: int = RANGE_POSES) -> np.ndarray:
    """(count, n) poses uniform within ``robot``'s position limits (a revolute joint's within one turn), seeded."""
    lower, upper = robot.limit_arrays()[:2]
    revolute = ~np.array(robot.prismatic, dtype=bool)
    lower = np.where(revolute, np.maximum(lower, -np.pi), lower)
    upper = np.where(revolute, np.minimum(upper, np.pi), upper)
    return np.random.default_rng(0).uniform(lower, upper, (count, robot.n_joints))


def _gravity(robot: RobotDescription, parameters: np.ndarray, q: np.ndarray) -> np.ndarray:
    zeros = np.zeros_like(q)
    return Regressor(robot).torque(parameters, q, zeros, zeros)


def _payload_interval(robot: RobotDescription, payload: UnknownPayload, q: np.ndarray):
    """Per sample and joint, the least and most torque [N m] (N, n) the payload adds at poses ``q`` (N, n)."""
    zeros = np.zeros_like(q)
    columns = PayloadRegressor(robot, payload.frame).compute(q, zeros, zeros)
    origin = columns[:, :, 0]                                          # a unit mass at the frame's origin
    reach = payload.com_distance * np.linalg.norm(columns[:, :, 1:4], axis=2)
    mass = np.inf if payload.max_mass is None else payload.max_mass
    with np.errstate(invalid="ignore"):
        low = np.where(origin - reach < 0.0, mass * (origin - reach), 0.0)
        high = np.where(origin + reach > 0.0, mass * (origin + reach), 0.0)
    return low, high


def torque_scale(recording: Recording, robot: RobotDescription,
                 payload: Payload | UnknownPayload | None = None) -> TorqueScale | None:
    """:class:`TorqueScale` of ``recording`` (joints matched to ``robot`` by name, torques in ``tau``), the
    gravity torque of ``robot``'s inertial data plus that of a known ``payload``, or with an
    :class:`UnknownPayload`; None when the description has no inertial data, the recording lacks torques or
    velocities, or it has no slow sample."""
    prior = prior_parameters(robot)
    if prior is None or recording.tau is None or recording.qd is None:
        return None
    recording = recording.reorder(robot.joint_names)
    slow = slow_samples(recording, robot)
    if not slow.any():
        return None
    parameters = prior.copy()
    against = "the gravity torque the robot description's inertial data predict"
    if isinstance(payload, Payload):
        parameters[-10:] += payload.link_parameters(robot)
        against += f" with the payload of {payload.mass:.4g} kg at {payload.frame}"
    q = recording.q[slow]
    gravity = _gravity(robot, parameters, q)
    largest = np.maximum(np.abs(_gravity(robot, parameters, range_poses(robot))).max(axis=0),
                         np.abs(gravity).max(axis=0))
    effort = robot.limit_arrays().effort
    floor = np.where(np.isfinite(effort), MIN_GRAVITY_FRACTION * effort, MIN_GRAVITY_TORQUE)
    judging = np.abs(gravity) >= np.maximum(GRAVITY_FRACTION * largest, floor)
    n = robot.n_joints
    low, high = np.full(n, 1.0 / MAX_SCALE_ERROR), np.full(n, MAX_SCALE_ERROR)
    added = None
    if isinstance(payload, UnknownPayload):
        against += f" for the arm alone, with {payload.describe()}"
        added = _payload_interval(robot, payload, q)
    scale, counts, notes = np.full(n, np.nan), np.count_nonzero(judging, axis=0), []
    for j, joint in enumerate(robot.joint_names):
        if largest[j] < floor[j]:
            continue                # a joint gravity barely loads: its torque is mostly friction
        if counts[j] < MIN_SLOW_SAMPLES:
            notes.append(f"joint {joint} not judged: {counts[j]} of the {q.shape[0]} slow samples have a gravity "
                         f"torque of at least {GRAVITY_FRACTION:.0%} of its largest ({largest[j]:.3g} N m), fewer "
                         f"than {MIN_SLOW_SAMPLES}")
            continue
        rows = judging[:, j]
        scale[j] = float(np.median(recording.tau[slow][rows, j] / gravity[rows, j]))
        if added is not None:
            ratios = np.sort(np.stack([added[0][rows, j], added[1][rows, j]]) / gravity[rows, j], axis=0)
            with np.errstate(invalid="ignore"):
                low[j] += np.median(ratios[0])
                high[j] += np.median(ratios[1])
            if not np.isfinite(low[j]) and not np.isfinite(high[j]):
                notes.append(f"joint {joint} not judged: the payload could add any torque to it")
    return TorqueScale(tuple(robot.joint_names), scale, low, high, counts, int(q.shape[0]), against, tuple(notes))


def check_torque_scale(recording: Recording, robot: RobotDescription,
                       payload: Payload | UnknownPayload | None = None) -> TorqueScale | None:
    """:func:`torque_scale`, raising for the first joint whose scale is off; joints not judged are logged (info).

    Raises
    ------
    DataError
        Naming the recording, the joint, the factor and its likely cause: recorded torques many times
        smaller than predicted (motor currents [A] passed as joint torques [N m]; torques on the motor
        side), many times larger (a gear ratio applied twice; N mm), or of the opposite sign (a joint
        direction or torque sign convention that differs from the description).
    """
    result = torque_scale(recording, robot, payload)
    if result is None:
        return None
    for note in result.notes:
        logger.info("%s: torque check: %s", recording.source, note)
    off = result.off()
    if not off:
        return result
    j = off[0]
    scale = result.scale[j]
    accepted = ("" if result.low[j] == 1.0 / MAX_SCALE_ERROR and result.high[j] == MAX_SCALE_ERROR
                else f", outside the {result.low[j]:.3g} to {result.high[j]:.3g} such a payload could explain")
    where = (f"{recording.source}: joint {result.joint_names[j]}: the recorded torques are {scale:.3g} times "
             f"{result.against} (median over the {result.n_judged[j]} slow samples where that torque is large)"
             f"{accepted}")
    if scale < 0.0:
        cause = ("of the opposite sign: does the joint's direction or the drive's torque sign convention differ "
                 "from the description?")
    elif scale < 1.0:
        cause = (f"({1.0 / scale:.3g} times smaller): are these motor currents [A] passed as torques [N m] (give "
                 "them as current.<motor> columns or --current-topic, with the transmission's torque_constants "
                 "[N m/A]), or torques at the motor side of the gear (taum.<motor> columns, --motor-states-topic)?")
    else:
        cause = "(too large): is a gear ratio applied twice, or are the torques in N mm?"
    if isinstance(payload, Payload):
        cause += " Or does the arm carry another load than the model's payload?"
    raise DataError(f"{where}, {cause} If the description's inertial data is what is wrong, fix or remove it, "
                    f"or {TURN_OFF}.")
