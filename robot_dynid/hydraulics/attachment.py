"""Where a cylinder acts on the arm: its length, displacement and moment arms from the kinematics.

Two forms of the ``attachment:`` entry of a cylinder configuration:

- constant moment arm (the simple case)::

      attachment: {joint: j2, moment_arm: 0.12, zero_position: 0.0}

  ``x = r (q_j - q_0)`` [m], ``r`` = ``moment_arm`` [m] (signed: positive when extending the rod
  turns the joint positively), ``q_0`` = ``zero_position`` [rad];
- two attachment points, one on each of the two links the cylinder joins::

      attachment:
        base: {link: world, point: [0.1, 0.0, -0.15]}   # [m] in that link's frame
        rod:  {link: j1, point: [-0.25, 0.08, 0.0]}     # [m]
        reference_length: 0.35                          # [m], the length at x = 0

  ``link`` is ``world`` or a joint name (the link that joint moves, in its link frame ``<joint>_link``
  of :func:`robot_dynid.model.robot_description.build_pinocchio_model`, the frame of its inertial
  parameters). The length ``L(q) = ||p_rod(q) - p_base(q)||``, ``x = L - reference_length``, and the
  moment arms are ``r(q) = dL/dq = u^T (J_rod - J_base)`` (n,), ``u`` the unit vector from base to rod
  point and ``J`` the points' linear Jacobians (pinocchio).

The cylinder's rod force ``F`` [N] (positive extending) acts on the joints as ``tau = r(q) F``
[N m] (virtual work ``F dL = tau^T dq``); ``x' = r q'`` and ``x'' = r q'' + (dr/dq q') q'``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.joint_names import index_in
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model, link_frame_placements

__all__ = ["WORLD", "MAX_MOMENT_ARM", "MAX_POINT_DISTANCE", "MIN_LENGTH", "AttachmentPoint", "CylinderAttachment",
           "attachment_from_dict", "CylinderMotion", "CylinderGeometry", "driven_joint", "displacement_function"]

WORLD = "world"
MAX_MOMENT_ARM = 5.0       # m: a larger value looks like millimetres
MAX_POINT_DISTANCE = 20.0  # m
MIN_LENGTH = 1e-6          # m: attachment points closer than this coincide (no direction)
_CHUNK = 4096              # samples per block of the kinematics arrays (a few MB)


@dataclass(frozen=True)
class AttachmentPoint:
    """A point fixed on a link: ``link`` (``world`` or a joint name), ``point`` (3,) [m] in its frame."""

    link: str
    point: tuple[float, float, float]


@dataclass(frozen=True)
class CylinderAttachment:
    """A cylinder's attachment (module docstring): either ``joint`` with ``moment_arm`` [m] and
    ``zero_position`` [rad], or ``base``/``rod`` points with ``reference_length`` [m]."""

    joint: str | None = None
    moment_arm: float | None = None
    zero_position: float = 0.0
    base: AttachmentPoint | None = None
    rod: AttachmentPoint | None = None
    reference_length: float = 0.0

    @property
    def constant(self) -> bool:
        """Whether this is the constant-moment-arm form."""
        return self.moment_arm is not None

    def to_dict(self) -> dict:
        """The configuration entry this was read from (:func:`attachment_from_dict`)."""
        if self.constant:
            return {"joint": self.joint, "moment_arm": self.moment_arm, "zero_position": self.zero_position}
        return {"base": {"link": self.base.link, "point": list(self.base.point)},
                "rod": {"link": self.rod.link, "point": list(self.rod.point)},
                "reference_length": self.reference_length}

    def links(self) -> tuple[str, ...]:
        """Joint names this attachment refers to (for checks against a robot)."""
        if self.constant:
            return (self.joint,)
        return tuple(point.link for point in (self.base, self.rod) if point.link != WORLD)


def _point_from_dict(entry, where: str) -> AttachmentPoint:
    validators.known_keys(entry, where, ("link", "point"), (), DataError)
    link = entry["link"]
    if not isinstance(link, str) or not link:
        raise DataError(f"{where}.link must be 'world' or a joint name, got {link!r}")
    point = validators.numbers(entry["point"], 3, f"{where}.point", DataError, unit="m")
    distance = math.sqrt(sum(value * value for value in point))
    if distance > MAX_POINT_DISTANCE:
        raise DataError(f"{where}.point is {distance:g} m from its link frame's origin: it looks like mm "
                        f"({distance:g} mm = {distance * 1e-3:.4g} m); give metres")
    return AttachmentPoint(link, point)


def attachment_from_dict(entry, where: str = "attachment") -> CylinderAttachment:
    """A :class:`CylinderAttachment` from its configuration entry (module docstring)."""
    if isinstance(entry, dict) and "moment_arm" in entry:
        validators.known_keys(entry, where, ("joint", "moment_arm"), ("zero_position",), DataError)
        if not isinstance(entry["joint"], str) or not entry["joint"]:
            raise DataError(f"{where}.joint must be a joint name, got {entry['joint']!r}")
        arm = validators.number(entry["moment_arm"], f"{where}.moment_arm [m]", DataError)
        if arm == 0.0:
            raise DataError(f"{where}.moment_arm must not be 0 [m]")
        if abs(arm) > MAX_MOMENT_ARM:
            raise DataError(f"{where}.moment_arm = {arm:g} m is above {MAX_MOMENT_ARM:g} m: it looks like mm "
                            f"({arm:g} mm = {arm * 1e-3:.4g} m); give metres")
        zero = validators.number(entry.get("zero_position", 0.0), f"{where}.zero_position [rad]", DataError)
        return CylinderAttachment(joint=entry["joint"], moment_arm=arm, zero_position=zero)
    validators.known_keys(entry, where, ("base", "rod"), ("reference_length",), DataError)
    base = _point_from_dict(entry["base"], f"{where}.base")
    rod = _point_from_dict(entry["rod"], f"{where}.rod")
    if base.link == rod.link:
        raise DataError(f"{where}: base and rod are both on link {base.link!r}; a cylinder joins two links")
    length = validators.positive(entry.get("reference_length", 0.0), f"{where}.reference_length", DataError,
                                 unit="m", allow_zero=True)
    if length > MAX_POINT_DISTANCE:
        raise DataError(f"{where}.reference_length = {length:g} m looks like mm; give metres")
    return CylinderAttachment(base=base, rod=rod, reference_length=length)


class _LinkPoint(NamedTuple):
    """An attachment point: ``slot`` of its joint in ``CylinderGeometry._joints`` (None on the world),
    ``local`` (3,) [m] in that joint's frame (in the world frame on the world), ``mask`` (n,) 1 for the
    joints that move it."""

    slot: int | None
    local: np.ndarray
    mask: np.ndarray


@dataclass(frozen=True)
class CylinderMotion:
    """Cylinder motion along a joint trajectory, for c cylinders and n joints.

    ``x`` [m], ``xd`` [m/s], ``xdd`` [m/s^2]: (N, c); ``moment_arms`` (N, c, n) [m], ``dx_c/dq_j``.
    """

    x: np.ndarray
    xd: np.ndarray
    xdd: np.ndarray
    moment_arms: np.ndarray


class CylinderGeometry:
    """Kinematics of cylinders attached to ``robot`` (a reusable pinocchio workspace).

    Per sample one pinocchio call (``computeJointJacobiansTimeVariation``) gives the joint placements,
    the world Jacobian ``J = [J_v; J_w]`` (6, n) and its time derivative; the rest is numpy over all
    samples. A point ``p`` on the link of joint ``i`` (columns of the joints supporting ``i``) moves
    with ``p' = v + w x p``, ``[v; w] = J q'``, and its acceleration at ``q'' = 0`` is
    ``a = v_b + w_b x p + w x p'``, ``[v_b; w_b] = J' q'``. With ``d = p_rod - p_base``, ``L = ||d||``,
    ``u = d / L``: ``r = u^T (J_rod - J_base)`` and ``(dr/dt) q' = u^T (a_rod - a_base)
    + (||d'||^2 - (u^T d')^2) / L``.

    Parameters
    ----------
    robot : RobotDescription
    attachments : sequence of CylinderAttachment
        One per cylinder; ``names`` label them in errors.
    names : sequence of str
    """

    def __init__(self, robot: RobotDescription, attachments, names) -> None:
        self.robot = robot
        self.attachments = tuple(attachments)
        self.names = tuple(names)
        self.n_joints = robot.n_joints
        ids = [_joint_ids(robot, attachment, name) for name, attachment in zip(self.names, self.attachments)]
        self.model = build_pinocchio_model(robot)
        self.data = self.model.createData()
        self._link_frames = link_frame_placements(self.model)
        self._offsets = np.array([0.0 if attachment.constant else attachment.reference_length
                                  for attachment in self.attachments])
        self._constant = [(index, joints[0] - 1, attachment.moment_arm, attachment.zero_position)
                          for index, (attachment, joints) in enumerate(zip(self.attachments, ids))
                          if attachment.constant]
        self._joints = sorted({joint for attachment, joints in zip(self.attachments, ids) if not attachment.constant
                               for joint in joints} - {0})
        self._points = [(index, self._point(attachment.base, joints[0]), self._point(attachment.rod, joints[1]))
                        for index, (attachment, joints) in enumerate(zip(self.attachments, ids))
                        if not attachment.constant]

    def _point(self, point: AttachmentPoint, joint: int) -> _LinkPoint:
        """``point`` on the link of pinocchio joint ``joint`` (0: ``world``)."""
        mask = np.zeros(self.n_joints)
        if joint == 0:
            return _LinkPoint(None, np.asarray(point.point, dtype=float), mask)
        for support in self.model.supports[joint]:
            if support > 0:
                mask[self.model.joints[support].idx_v] = 1.0
        local = self._link_frames[joint - 1].act(np.asarray(point.point, dtype=float))
        return _LinkPoint(self._joints.index(joint), np.asarray(local, dtype=float), mask)

    def _kinematics(self, q: np.ndarray, qd: np.ndarray):
        """Placements (N, J, 4, 4) of the joints in ``_joints``, world Jacobians ``J`` and ``dJ/dt``
        (N, 6, n) at checked ``q``, ``qd`` (N, n): one pinocchio call per sample."""
        count = q.shape[0]
        placements = np.empty((count, len(self._joints), 4, 4))
        jacobians = np.empty((count, 6, self.n_joints))
        jacobian_rates = np.empty((count, 6, self.n_joints))
        model, data, joints = self.model, self.data, self._joints
        for k in range(count):
            pin.computeJointJacobiansTimeVariation(model, data, q[k], qd[k])
            jacobians[k] = data.J
            jacobian_rates[k] = data.dJ
            oMi = data.oMi.tolist()
            for slot, joint in enumerate(joints):
                placements[k, slot] = oMi[joint].homogeneous
        return placements, jacobians, jacobian_rates

    def _geometry(self, q, qd) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lengths ``L`` (N, c) [m] (``x`` for constant arms), moment arms (N, c, n) [m] and
        ``(dr/dt) q'`` (N, c) [m/s^2] at ``q`` (N, n) [rad], ``qd`` (N, n) [rad/s] (class docstring;
        ``u^T (J_v + J_w x p) = u^T J_v + (p x u)^T J_w``), :data:`_CHUNK` samples at a time."""
        count = q.shape[0]
        lengths = np.empty((count, len(self.attachments)))
        arms = np.zeros((count, len(self.attachments), self.n_joints))
        arm_rates = np.zeros((count, len(self.attachments)))
        for index, joint, arm, zero in self._constant:
            arms[:, index, joint] = arm
            lengths[:, index] = arm * (q[:, joint] - zero)
        for start in range(0, count if self._points else 0, _CHUNK):
            chunk = slice(start, min(start + _CHUNK, count))
            self._two_point_geometry(q[chunk], qd[chunk], lengths[chunk], arms[chunk], arm_rates[chunk])
        return lengths, arms, arm_rates

    def _two_point_geometry(self, q, qd, lengths, arms, arm_rates) -> None:
        """:meth:`_geometry` of the two-point cylinders, written into ``lengths``, ``arms``, ``arm_rates``."""
        count = q.shape[0]
        placements, jacobians, jacobian_rates = self._kinematics(q, qd)
        twists = {}

        def point_motion(point: _LinkPoint):
            """Position, velocity and acceleration at q'' = 0 (N, 3), angular Jacobian (N, 3, n) or None."""
            if point.slot is None:
                zeros = np.zeros((count, 3))
                return np.broadcast_to(point.local, (count, 3)), zeros, zeros, None
            if point.slot not in twists:
                twists[point.slot] = (np.einsum("kin,kn->ki", jacobians, qd * point.mask),
                                      np.einsum("kin,kn->ki", jacobian_rates, qd * point.mask))
            twist, twist_rate = twists[point.slot]
            placement = placements[:, point.slot]
            position = np.einsum("kij,j->ki", placement[:, :3, :3], point.local) + placement[:, :3, 3]
            velocity = twist[:, :3] + np.cross(twist[:, 3:], position)
            acceleration = twist_rate[:, :3] + np.cross(twist_rate[:, 3:], position) + np.cross(twist[:, 3:], velocity)
            return position, velocity, acceleration, jacobians[:, 3:] * point.mask

        for index, base, rod in self._points:
            base_position, base_velocity, base_acceleration, base_angular = point_motion(base)
            rod_position, rod_velocity, rod_acceleration, rod_angular = point_motion(rod)
            difference = rod_position - base_position
            length = np.sqrt(np.einsum("ki,ki->k", difference, difference))
            if not np.all(length >= MIN_LENGTH):
                sample = int(np.flatnonzero(~(length >= MIN_LENGTH))[0])
                raise DataError(f"cylinder {self.names[index]!r}: its attachment points coincide (length "
                                f"{length[sample]:.3g} m < {MIN_LENGTH:g} m) at q = {q[sample].tolist()}")
            direction = difference / length[:, None]
            arm = np.einsum("ki,kin->kn", direction, jacobians[:, :3]) * (rod.mask - base.mask)
            for position, angular, sign in ((rod_position, rod_angular, 1.0), (base_position, base_angular, -1.0)):
                if angular is not None:
                    arm += sign * np.einsum("ki,kin->kn", np.cross(position, direction), angular)
            rate = rod_velocity - base_velocity
            along = np.einsum("ki,ki->k", direction, rate)
            lengths[:, index] = length
            arms[:, index] = arm
            arm_rates[:, index] = (np.einsum("ki,ki->k", direction, rod_acceleration - base_acceleration)
                                   + (np.einsum("ki,ki->k", rate, rate) - along**2) / length)

    def length_and_arms(self, q) -> tuple[np.ndarray, np.ndarray]:
        """Lengths ``L`` (c,) [m] (or ``x`` for constant arms) and moment arms (c, n) [m] at one
        configuration ``q`` (n,) [rad]."""
        q = _configurations(validators.array(q, "q", shape=(self.n_joints,), axes=("joints",), finite=False),
                            self.n_joints, "q")
        lengths, arms, _ = self._geometry(q, np.zeros_like(q))
        return lengths[0], arms[0]

    def displacement(self, q) -> np.ndarray:
        """``x`` (N, c) [m] at configurations ``q`` (N, n) [rad]."""
        q = _configurations(q, self.n_joints, "q")
        return self._geometry(q, np.zeros_like(q))[0] - self._offsets

    def motion(self, q, qd, qdd) -> CylinderMotion:
        """:class:`CylinderMotion` along ``q``, ``qd``, ``qdd`` (N, n) [rad, rad/s, rad/s^2]."""
        q, qd, qdd = (_configurations(value, self.n_joints, name)
                      for value, name in ((q, "q"), (qd, "qd"), (qdd, "qdd")))
        if not q.shape == qd.shape == qdd.shape:
            raise DataError(f"q, qd and qdd must have the same shape, got {q.shape}, {qd.shape} and {qdd.shape}")
        lengths, arms, arm_rates = self._geometry(q, qd)
        xd = np.einsum("kcn,kn->kc", arms, qd)
        xdd = np.einsum("kcn,kn->kc", arms, qdd) + arm_rates
        return CylinderMotion(x=lengths - self._offsets, xd=xd, xdd=xdd, moment_arms=arms)


def _configurations(values, n_joints: int, name: str) -> np.ndarray:
    """``values`` as a C-ordered float array (N, n_joints); one configuration (n,) becomes (1, n)."""
    values = validators.array(values, name, ndim=(1, 2), finite=False)
    shape, axes = ((n_joints,), ("joints",)) if values.ndim == 1 else ((None, n_joints), ("samples", "joints"))
    return np.ascontiguousarray(np.atleast_2d(validators.array(values, name, shape=shape, axes=axes, finite=False)))


def _joint_ids(robot: RobotDescription, attachment: CylinderAttachment, name: str) -> tuple[int, ...]:
    """Pinocchio joint id (0 for ``world``) of the constant-moment-arm joint of cylinder ``name``, or of the
    links of its base and rod points.

    Raises
    ------
    DataError
        A joint or link ``robot`` does not have (:func:`~robot_dynid.joint_names.index_in`).
    """
    links = attachment.links()
    rows = index_in(robot.joint_names, list(dict.fromkeys(links)), f"cylinder {name!r}: attachment",
                    f"robot {robot.name!r}")
    ids = dict(zip(dict.fromkeys(links), (row + 1 for row in rows)))
    if attachment.constant:
        return (ids[attachment.joint],)
    return tuple(0 if point.link == WORLD else ids[point.link] for point in (attachment.base, attachment.rod))


def driven_joint(robot: RobotDescription, attachment: CylinderAttachment, name: str) -> str:
    """The one joint whose motion changes the length of cylinder ``name``: its constant-moment-arm
    joint, or the joint between the links its two points are on (a serial chain: the links of
    joints ``a < b`` are joined by joints ``a + 1`` to ``b``).

    Raises
    ------
    DataError
        A link (or joint) ``robot`` does not have; two or more joints lie between the two links
        (naming them): which one a cylinder stage should move is then not defined by the attachment.
    """
    ends = sorted(_joint_ids(robot, attachment, name))
    if attachment.constant:
        return attachment.joint
    between = robot.joint_names[ends[0]:ends[1]]
    if len(between) != 1:
        raise DataError(f"cylinder {name!r} joins links {attachment.base.link!r} and {attachment.rod.link!r}, between "
                        f"which joints {list(between)} all change its length; a cylinder stage moves one joint")
    return between[0]


def displacement_function(robot: RobotDescription, attachment: CylinderAttachment, name: str):
    """``x(q)`` [m] (N,) of cylinder ``name`` at configurations ``q`` (N, n) [rad], for planning its motion."""
    geometry = CylinderGeometry(robot, [attachment], [name])
    return lambda q: geometry.displacement(q)[:, 0]
