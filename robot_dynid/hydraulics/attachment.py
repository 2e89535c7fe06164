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

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.model.robot_description import RobotDescription, build_pinocchio_model

WORLD = "world"
MAX_MOMENT_ARM = 5.0       # m: a larger value looks like millimetres
MAX_POINT_DISTANCE = 20.0  # m
_DIRECTIONAL_STEP = 1e-6   # s: x'' from r(q +- h q') by central differences


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
        for name, attachment in zip(self.names, self.attachments):
            unknown = [link for link in attachment.links() if link not in robot.joint_names]
            if unknown:
                raise DataError(f"cylinder {name!r}: attachment names joint {unknown[0]!r}, which robot "
                                f"{robot.name!r} does not have (joints: {', '.join(robot.joint_names)})")
        self.model = build_pinocchio_model(robot)
        self.data = self.model.createData()
        self._frames = {name: self.model.getFrameId(f"{name}_link") for name in robot.joint_names}
        self._offsets = np.array([0.0 if attachment.constant else attachment.reference_length
                                  for attachment in self.attachments])

    def _point_kinematics(self, point: AttachmentPoint) -> tuple[np.ndarray, np.ndarray]:
        """World position (3,) and linear Jacobian (3, n) of ``point`` (kinematics already computed)."""
        if point.link == WORLD:
            return np.asarray(point.point, dtype=float), np.zeros((3, self.n_joints))
        frame = self._frames[point.link]
        placement = self.data.oMf[frame]
        position = placement.act(np.asarray(point.point, dtype=float))
        jacobian = pin.getFrameJacobian(self.model, self.data, frame, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        offset = position - placement.translation
        # v_point = v_origin + w x offset = (J_lin - [offset]x J_ang) q'
        return position, jacobian[:3] - pin.skew(offset) @ jacobian[3:]

    def length_and_arms(self, q) -> tuple[np.ndarray, np.ndarray]:
        """Lengths ``L`` (c,) [m] (or ``x`` for constant arms) and moment arms (c, n) [m] at one
        configuration ``q`` (n,) [rad]."""
        q = np.asarray(q, dtype=float)
        lengths = np.empty(len(self.attachments))
        arms = np.zeros((len(self.attachments), self.n_joints))
        if any(not attachment.constant for attachment in self.attachments):
            pin.computeJointJacobians(self.model, self.data, q)
            pin.updateFramePlacements(self.model, self.data)
        for index, attachment in enumerate(self.attachments):
            if attachment.constant:
                joint = self.robot.joint_names.index(attachment.joint)
                arms[index, joint] = attachment.moment_arm
                lengths[index] = attachment.moment_arm * (q[joint] - attachment.zero_position)
                continue
            base, base_jacobian = self._point_kinematics(attachment.base)
            rod, rod_jacobian = self._point_kinematics(attachment.rod)
            difference = rod - base
            lengths[index] = float(np.linalg.norm(difference))
            if lengths[index] == 0.0:
                raise DataError(f"cylinder {self.names[index]!r}: its attachment points coincide at q = {q.tolist()}")
            arms[index] = (difference / lengths[index]) @ (rod_jacobian - base_jacobian)
        return lengths, arms

    def displacement(self, q) -> np.ndarray:
        """``x`` (N, c) [m] at configurations ``q`` (N, n) [rad]."""
        q = np.atleast_2d(np.asarray(q, dtype=float))
        return np.array([self.length_and_arms(sample)[0] for sample in q]) - self._offsets

    def motion(self, q, qd, qdd) -> CylinderMotion:
        """:class:`CylinderMotion` along ``q``, ``qd``, ``qdd`` (N, n) [rad, rad/s, rad/s^2]."""
        q, qd, qdd = (np.atleast_2d(np.asarray(value, dtype=float)) for value in (q, qd, qdd))
        lengths, arms = (np.array(values) for values in zip(*(self.length_and_arms(sample) for sample in q)))
        x = lengths - self._offsets
        step = _DIRECTIONAL_STEP
        # dr/dt = (dr/dq) q' by a central difference along q'
        arm_rates = np.array([(self.length_and_arms(sample + step * rate)[1]
                               - self.length_and_arms(sample - step * rate)[1]) / (2.0 * step)
                              for sample, rate in zip(q, qd)])
        xd = np.einsum("kcn,kn->kc", arms, qd)
        xdd = np.einsum("kcn,kn->kc", arms, qdd) + np.einsum("kcn,kn->kc", arm_rates, qd)
        return CylinderMotion(x=x, xd=xd, xdd=xdd, moment_arms=arms)
