"""Robot descriptions: joint names, limits, gravity and kinematics of a serial arm.

A :class:`RobotDescription` is built by one validating loader (:mod:`robot_dynid.model.robot_loader`:
``load_robot`` of a YAML file, ``robot_from_dict`` of a dict of the same form) from a DH table
(:func:`robot_from_dh_dict`, here), a URDF (:mod:`robot_dynid.model.urdf`, also ``robot_from_urdf`` of URDF text
such as a ROS ``robot_description`` parameter carries) or an MJCF file (:mod:`robot_dynid.model.mjcf`); the
pieces the three forms share (their keys, number parsers, inertial and simulation checks) live here. The YAML
contract is documented in ``docs/robot_description.md``.

Kinematics (revolute joints ``q`` [rad], prismatic joints ``q`` [m]):

- standard DH: ``A_i = Rz(q_i + theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)`` (revolute) or
  ``Rz(theta_i) Tz(q_i + d_i) Tx(a_i) Rx(alpha_i)`` (prismatic); joint ``i`` moves about or
  along ``z_{i-1}``; DH frame ``i`` sits at the distal end of link ``i``.
- modified DH (Craig/Khalil): ``A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(q_i + theta_i) Tz(d_i)``
  (``Rz(theta_i) Tz(q_i + d_i)`` for a prismatic joint); DH frame ``i`` is the frame of joint ``i``.
- URDF: each joint's frame is its child link's frame; ``revolute``, ``continuous`` and
  ``prismatic`` joints.

A prismatic joint's position limits are in m, its velocity and acceleration limits in m/s and
m/s^2, its effort limit in N. An optional ``transmission`` (:mod:`robot_dynid.model.transmission`)
maps joints to motors, ``qm = T q``.

An optional ``base`` row is a fixed transform from the world (gravity) frame to the base of
joint 1, written in the table's own convention.

The *link frame* of link ``i`` is the frame its 10 inertial parameters are taken about and
expressed in: DH frame ``i`` for DH robots, the joint's child link frame for URDF robots.
:func:`build_pinocchio_model` adds it to the pinocchio model as the BODY frame of joint ``i``.

Inertial data, where a description has it (:func:`~robot_dynid.model.link_inertials.link_bodies`): a DH table's optional
``inertial:`` entry per joint (:class:`LinkInertial`, in the link frame), a URDF's ``<inertial>``
elements of the links that move with each joint.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import math
import os
from dataclasses import dataclass
from typing import Any, Mapping, NamedTuple, Sequence

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DataError, RobotDescriptionError
from robot_dynid.input_files import read_text
from robot_dynid.joint_names import index_in
from robot_dynid.model.joint_chains import MAX_LENGTH, mjcf_chain, mjcf_continuous, parse_urdf, urdf_chain
from robot_dynid.model.transmission import Transmission, transmission_from_dict

__all__ = ["DH_CONVENTIONS", "DEFAULT_GRAVITY", "GRAVITY_NORM_RANGE", "MAX_POSITION_LIMIT", "MAX_VELOCITY_LIMIT",
           "MAX_ANGLE", "MAX_PRISMATIC_POSITION_LIMIT", "MAX_PRISMATIC_VELOCITY_LIMIT", "JOINT_TYPES",
           "DEFAULT_ACCELERATION_PER_VELOCITY", "CONTINUOUS_POSITION_LIMITS", "URDF_OPTIONAL_KEYS", "MAX_RATED_PAYLOAD",
           "URDF_LIMIT_MAPS", "URDF_DRIVE_MAPS", "SIMULATION_KEYS", "URDF_JOINT_TYPES", "LimitArrays", "JointLimits",
           "DHRow", "JointDrive", "current_to_torque", "JointSimulation", "LinkInertial", "LinkBody",
           "RobotDescription", "check_inertial", "simulation_from_dict", "numbers", "check_keys", "xml_or_file",
           "robot_from_dh_dict",
           "build_pinocchio_model", "link_frame_placements"]

logger = logging.getLogger(__name__)

DH_CONVENTIONS = ("standard", "modified")
DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
#: Norms [m/s^2] a non-zero gravity vector may have: 9.78 (equator) to 9.83 (poles) at sea level,
#: with room for altitude and rounding (10); anything else is a unit mistake (mm/s^2, ft/s^2).
GRAVITY_NORM_RANGE = (9.5, 10.1)
#: Bounds beyond which a value is taken for a unit mistake (degrees, millimetres).
MAX_POSITION_LIMIT = 2.0 * math.pi * 1.05
MAX_VELOCITY_LIMIT = 50.0
MAX_ANGLE = 2.0 * math.pi
#: Bounds of a prismatic joint's limits beyond which they are taken for millimetres: its stroke
#: [m] (a long linear track; 20 would be 20 mm in mm), its speed [m/s].
MAX_PRISMATIC_POSITION_LIMIT = MAX_LENGTH
MAX_PRISMATIC_VELOCITY_LIMIT = 20.0
JOINT_TYPES = ("revolute", "prismatic")
#: URDF carries no acceleration limits; without an override a joint gets this many times its
#: velocity limit [1/s] (full speed reached in 0.2 s).
DEFAULT_ACCELERATION_PER_VELOCITY = 5.0
#: Position limits given to URDF ``continuous`` joints without an override [rad].
CONTINUOUS_POSITION_LIMITS = (-math.pi, math.pi)

_DH_REQUIRED = ("name", "dh_convention", "joints")
_DH_OPTIONAL = ("gravity", "base", "transmission", "rated_payload", "simulation")
#: Optional keys of the URDF form (``urdf:`` and these), which the MJCF form (``mjcf:``) takes too.
URDF_OPTIONAL_KEYS = ("name", "gravity", "joints", "position_limits", "velocity_limits",
                      "acceleration_limits", "effort_limits", "gear_ratios", "rated_motor_torques",
                      "torque_constants", "transmission", "rated_payload", "simulation")
#: Largest rated payload accepted [kg] (the heaviest industrial arms carry about 2300 kg): more is grams.
MAX_RATED_PAYLOAD = 5000.0
#: The URDF and MJCF forms' limit overrides, each a mapping joint name -> value.
URDF_LIMIT_MAPS = ("position_limits", "velocity_limits", "acceleration_limits", "effort_limits")
_JOINT_REQUIRED = ("name", "a", "alpha", "d", "position_limits", "velocity_limit",
                   "acceleration_limit")
_JOINT_OPTIONAL = ("type", "theta_offset", "effort_limit", "gear_ratio", "rated_motor_torque",
                   "torque_constant", "inertial")
_INERTIAL_KEYS = ("mass", "com", "inertia")
#: Drive keys of a DH joint and, in the plural, the URDF form's mappings joint -> value.
_DRIVE_KEYS = ("gear_ratio", "rated_motor_torque", "torque_constant")
URDF_DRIVE_MAPS = tuple(f"{key}s" for key in _DRIVE_KEYS)
_BASE_KEYS = ("a", "alpha", "d", "theta")
#: Keys of a joint's entry in the ``simulation:`` section and their units (revolute joint, prismatic joint).
SIMULATION_KEYS = {"armature": ("kg m^2", "kg"), "damping": ("N m s/rad", "N s/m"), "friction_loss": ("N m", "N")}
_URDF_REVOLUTE_TYPES = ("revolute", "continuous")
#: URDF joint types a robot's selected joints may have.
URDF_JOINT_TYPES = _URDF_REVOLUTE_TYPES + ("prismatic",)


class LimitArrays(NamedTuple):
    """Limits of several joints, each (m,): ``lower`` and ``upper`` positions [rad], ``velocity``
    [rad/s], ``acceleration`` [rad/s^2], ``effort`` [N m] (NaN where unknown); a prismatic
    joint's in m, m/s, m/s^2 and N."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    acceleration: np.ndarray
    effort: np.ndarray


@dataclass(frozen=True)
class JointLimits:
    """Limits of one joint.

    Parameters
    ----------
    position : tuple of float
        ``(lower, upper)`` [rad; m for a prismatic joint], ``lower < upper``.
    velocity : float
        Maximum speed [rad/s; m/s] (> 0).
    acceleration : float
        Maximum acceleration magnitude [rad/s^2; m/s^2] (> 0).
    effort : float or None
        Maximum torque [N m; N] (> 0), None when unknown.
    """

    position: tuple[float, float]
    velocity: float
    acceleration: float
    effort: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "position", tuple(self.position))


@dataclass(frozen=True)
class DHRow:
    """One row of a DH table: ``a`` [m], ``alpha`` [rad], ``d`` [m], ``theta`` [rad].

    For a joint row ``theta`` is the constant offset added to ``q``; for the base row it is the
    fixed rotation. In a modified table ``a`` and ``alpha`` are ``a_{i-1}`` and ``alpha_{i-1}``.
    """

    a: float
    alpha: float
    d: float
    theta: float = 0.0


@dataclass(frozen=True)
class JointDrive:
    """Optional drive data of one joint (not used by the dynamics): for reports and to turn
    motor currents into joint torques (:meth:`RobotDescription.torque_from_current`).

    Parameters
    ----------
    gear_ratio : float or None
        Motor turns per joint turn (> 0).
    rated_motor_torque : float or None
        Rated torque at the motor shaft [N m] (> 0); times ``gear_ratio`` it is the rated joint
        torque.
    torque_constant : float or None
        Motor torque per motor current [N m/A] (non-zero; negative where the drive counts the
        current against the joint's direction).
    """

    gear_ratio: float | None = None
    rated_motor_torque: float | None = None
    torque_constant: float | None = None


def current_to_torque(current, torque_constant, gear_ratio, efficiency=None) -> np.ndarray:
    """Joint torque from motor current, ``tau = i k_t r eta``.

    Parameters
    ----------
    current : array_like, shape (N, n)
        Motor current [A].
    torque_constant : array_like, shape (n,) or float
        Motor torque constant k_t [N m/A] (motor side).
    gear_ratio : array_like, shape (n,) or float
        Reduction r = motor speed / joint speed (> 0; use the sign of k_t for direction).
    efficiency : array_like, shape (n,) or float, optional
        Gear efficiency eta in (0, 1]; 1 by default. Applied as a plain factor (a motoring
        efficiency; friction models identify the rest).

    Returns
    -------
    ndarray, shape (N, n)
        Joint torque [N m].
    """
    current = validators.array(current, "current", ndim=2, axes=("samples", "joints"), unit="A")
    n_joints = current.shape[1]
    torque_constant = validators.array(torque_constant, "torque_constant", shape=(n_joints,), axes=("joints",),
                                       unit="N m/A", broadcast=True)
    if np.any(torque_constant == 0.0):
        raise DataError(f"torque_constant must be non-zero [N m/A], got 0.0 at joint "
                        f"{int(np.flatnonzero(torque_constant == 0.0)[0])}")
    gear_ratio = validators.per_joint(gear_ratio, n_joints, "gear_ratio", DataError)
    factor = torque_constant * gear_ratio
    if efficiency is not None:
        factor = factor * validators.per_joint(efficiency, n_joints, "efficiency", DataError, upper=1.0)
    return current * factor


@dataclass(frozen=True)
class JointSimulation:
    """What a physics engine adds at one joint (the description's ``simulation:`` section), each >= 0 or None.

    Parameters
    ----------
    armature : float or None
        Rotor inertia reflected to the joint [kg m^2; kg for a prismatic joint], torque ``Ia qdd``.
    damping : float or None
        Viscous damping [N m s/rad; N s/m], torque ``-d qd``.
    friction_loss : float or None
        Dry friction [N m; N]: at most this torque opposes the motion (MuJoCo's ``frictionloss``).

    None keeps what the engine's model file says (URDF ``<dynamics damping friction>``, MJCF joint
    attributes), 0 where it says nothing.
    """

    armature: float | None = None
    damping: float | None = None
    friction_loss: float | None = None

    def to_dict(self) -> dict:
        return {key: value for key, value in dataclasses.asdict(self).items() if value is not None}


@dataclass(frozen=True)
class LinkInertial:
    """Mass properties of a body, in the axes of a frame F (a DH link frame, a URDF link frame).

    Parameters
    ----------
    mass : float
        [kg], >= 0.
    com : tuple of 3 float
        Centre of mass in F [m].
    inertia : tuple of 6 float
        Inertia about the centre of mass in F's axes, URDF's order
        ``(ixx, ixy, ixz, iyy, iyz, izz)`` [kg m^2].
    """

    mass: float
    com: tuple[float, float, float]
    inertia: tuple[float, float, float, float, float, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "mass", float(self.mass))
        object.__setattr__(self, "com", tuple(float(value) for value in self.com))
        object.__setattr__(self, "inertia", tuple(float(value) for value in self.inertia))

    def to_dict(self) -> dict:
        return {"mass": self.mass, "com": list(self.com), "inertia": list(self.inertia)}


@dataclass(frozen=True)
class LinkBody:
    """A URDF link (or a DH link) that moves rigidly with a joint's link frame.

    Parameters
    ----------
    name : str
        URDF link name; ``"<joint>_link"`` for DH links.
    placement : pinocchio.SE3
        The body's frame in the joint's link frame (unselected movable joints at 0).
    inertial : LinkInertial or None
        Its inertial data in its own frame; None where the description has none.
    """

    name: str
    placement: pin.SE3
    inertial: LinkInertial | None


@dataclass(frozen=True)
class RobotDescription:
    """A serial arm of revolute and prismatic joints.

    Parameters
    ----------
    name : str
        Robot name.
    joint_names : tuple of str
        The ``n`` actuated joints, base to tip; this order is the column order of ``q``.
    limits : tuple of JointLimits
        One per joint.
    gravity : tuple of float
        Gravity acceleration [m/s^2] in the world frame (the DH base frame or the URDF root link):
        zero, or of a norm within :data:`GRAVITY_NORM_RANGE` (9.5 to 10.1 m/s^2).
    dh_convention : {"standard", "modified"} or None
        None for URDF robots.
    dh : tuple of DHRow or None
        One row per joint for DH robots.
    base : DHRow or None
        Fixed transform from the world frame to joint 1's base, in ``dh_convention``.
    urdf : str or None
        URDF XML text for URDF robots.
    drives : tuple of JointDrive or None
        Optional gear ratios, rated motor torques and torque constants, one per joint.
    inertials : tuple of LinkInertial or None
        DH robots only: optional mass properties of each link in its link frame (``inertial:``
        entries); URDF robots carry theirs in the URDF (:func:`~robot_dynid.model.link_inertials.link_bodies`).
    joint_types : tuple of str
        ``"revolute"`` or ``"prismatic"`` per joint (None: all revolute).
    transmission : Transmission or None
        ``qm = T q`` between motors and joints; None: friction and armature on the joint side.
    rated_payload : float or None
        The mass the arm is rated to carry [kg] (datasheet), in (0, :data:`MAX_RATED_PAYLOAD`]; an
        identified payload far heavier is reported as implausible. None: unknown.
    simulation : tuple of JointSimulation or None
        One per joint: armature, damping and friction loss a physics engine simulates (``sim_robot``'s
        ``engine: mujoco``); not used by identification.
    mjcf : str or None
        MJCF (MuJoCo XML) text for MJCF robots (:mod:`robot_dynid.model.mjcf`); ``urdf`` is then None.
    """

    name: str
    joint_names: tuple[str, ...]
    limits: tuple[JointLimits, ...]
    gravity: tuple[float, float, float] = DEFAULT_GRAVITY
    dh_convention: str | None = None
    dh: tuple[DHRow, ...] | None = None
    base: DHRow | None = None
    urdf: str | None = None
    drives: tuple[JointDrive, ...] | None = None
    inertials: tuple[LinkInertial, ...] | None = None
    joint_types: tuple[str, ...] | None = None
    transmission: Transmission | None = None
    rated_payload: float | None = None
    simulation: tuple[JointSimulation, ...] | None = None
    mjcf: str | None = None

    def __post_init__(self) -> None:
        for field in ("joint_names", "limits", "gravity", "dh", "drives", "inertials", "joint_types", "simulation"):
            value = getattr(self, field)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, field, tuple(value))
        if self.joint_types is None:
            object.__setattr__(self, "joint_types", ("revolute",) * len(self.joint_names))
        _check_description(self)

    @property
    def prismatic(self) -> tuple[bool, ...]:
        """Per joint, True for a prismatic joint (``q`` [m], its effort a force [N])."""
        return tuple(kind == "prismatic" for kind in self.joint_types)

    @property
    def effort_unit(self) -> str:
        """The unit of the joints' efforts for table headings: ``N m``, ``N`` (all prismatic), or
        ``N m; N for prismatic joints``."""
        kinds = set(self.joint_types)
        return "N m" if kinds == {"revolute"} else "N" if kinds == {"prismatic"} else "N m; N for prismatic joints"

    def joint_units(self, index: int) -> tuple[str, str, str, str]:
        """Units of joint ``index``'s position, velocity, acceleration and effort:
        ``("rad", "rad/s", "rad/s^2", "N m")`` or ``("m", "m/s", "m/s^2", "N")``."""
        return ("m", "m/s", "m/s^2", "N") if self.joint_types[index] == "prismatic" \
            else ("rad", "rad/s", "rad/s^2", "N m")

    @property
    def n_joints(self) -> int:
        """Number of actuated joints ``n``."""
        return len(self.joint_names)

    def limit_arrays(self, joint_names: Sequence[str] | None = None, *,
                     unbounded_continuous: bool = False) -> "LimitArrays":
        """Limits of ``joint_names`` (default all joints, in order) as arrays, each (m,): the one
        place limits become arrays.

        ``unbounded_continuous``: -inf and inf as the positions of URDF continuous joints, which
        turn without end (else the limits given to them, :data:`CONTINUOUS_POSITION_LIMITS` by default).

        Raises
        ------
        NameMatchError
            A name twice or one the robot does not have.
        """
        names = self.joint_names if joint_names is None else tuple(joint_names)
        rows = index_in(self.joint_names, names, "joint_names", f"robot {self.name!r}")
        arrays = LimitArrays(*(np.array(values, dtype=float) for values in zip(
            *((limit.position[0], limit.position[1], limit.velocity, limit.acceleration,
               np.nan if limit.effort is None else limit.effort) for limit in (self.limits[row] for row in rows)))))
        if unbounded_continuous:
            continuous = np.array(self.continuous, dtype=bool)[rows]
            arrays.lower[continuous], arrays.upper[continuous] = -np.inf, np.inf
        return arrays

    @functools.cached_property
    def kinematics_hash(self) -> str:
        """16 hex digits (SHA-256) of what a model's torques depend on besides its parameters and
        joint names: each joint's placement, axis and link frame (:func:`build_pinocchio_model`'s
        geometry, rounded to 1e-9 m and 1e-9 rad), which joints are prismatic, gravity and the
        transmission ``T`` (motor-side parameters mean something else through another one). Limits,
        drives, inertial data and names do not enter it; another arm, or the same arm described in
        other link frames (whose inertial parameters mean something else), has another hash."""
        arrays = [array for geometry in _joint_geometry(self)
                  for array in (geometry.placement.homogeneous, geometry.axis, geometry.link_frame.homogeneous)]
        arrays.append(np.array(self.prismatic, dtype=float))
        if self.transmission is not None:
            arrays.append(self.transmission.motor_from_joint)
        digest = hashlib.sha256()
        for values in (*arrays, self.gravity):
            digest.update((np.round(np.asarray(values, dtype=float), 9) + 0.0).tobytes())    # + 0.0: no -0.0
        return digest.hexdigest()[:16]

    @functools.cached_property
    def continuous(self) -> tuple[bool, ...]:
        """Per joint, True for a URDF ``continuous`` joint: it turns without end, and its
        position limits (``[-pi, pi]`` unless overridden) only bound excitation design."""
        if self.mjcf is not None:
            return mjcf_continuous(self.mjcf, self.joint_names)
        if self.urdf is None:
            return (False,) * self.n_joints
        _, joints = parse_urdf(self.urdf)
        return tuple(joints[name].type == "continuous" for name in self.joint_names)

    def torque_from_current(self, current) -> np.ndarray:
        """Joint torques from motor currents, ``tau_j = i_j k_t,j r_j`` with each joint's
        ``torque_constant`` and ``gear_ratio``.

        Parameters
        ----------
        current : array_like, shape (N, n)
            Motor currents [A], in joint order.

        Returns
        -------
        ndarray, shape (N, n)
            Joint torques [N m].
        """
        if self.transmission is not None:
            raise RobotDescriptionError(
                f"robot {self.name!r} has a transmission: currents are per motor; convert them with "
                "Transmission.motor_torques_from_current and Transmission.joint_torques")
        for index, name in enumerate(self.joint_names):
            drive = self.drives[index] if self.drives is not None else JointDrive()
            for key, unit in (("torque_constant", "N m/A"), ("gear_ratio", "1")):
                if getattr(drive, key) is None:
                    raise RobotDescriptionError(
                        f"joint {name!r} has no {key} [{unit}] in robot {self.name!r}: both "
                        "torque_constant and gear_ratio are needed to turn motor currents "
                        "into joint torques")
        return current_to_torque(current, [drive.torque_constant for drive in self.drives],
                                 [drive.gear_ratio for drive in self.drives])

    def to_dict(self) -> dict:
        """The YAML contract form, from which ``robot_from_dict`` rebuilds this robot.

        A URDF robot is written with its URDF text inline and every limit as an override.
        """
        data: dict[str, Any] = {"name": self.name, "gravity": list(self.gravity)}
        if self.urdf is not None or self.mjcf is not None:
            data["urdf" if self.urdf is not None else "mjcf"] = self.urdf if self.urdf is not None else self.mjcf
            data["joints"] = list(self.joint_names)
            pairs = list(zip(self.joint_names, self.limits))
            data["position_limits"] = {name: list(limit.position) for name, limit in pairs}
            data["velocity_limits"] = {name: limit.velocity for name, limit in pairs}
            data["acceleration_limits"] = {name: limit.acceleration for name, limit in pairs}
            data["effort_limits"] = {name: limit.effort for name, limit in pairs
                                     if limit.effort is not None}
            for key, mapping in zip(_DRIVE_KEYS, URDF_DRIVE_MAPS):
                values = {name: getattr(drive, key)
                          for name, drive in zip(self.joint_names, self.drives or ())
                          if getattr(drive, key) is not None}
                if values:
                    data[mapping] = values
        else:
            data["dh_convention"] = self.dh_convention
            if self.base is not None:
                data["base"] = dataclasses.asdict(self.base)
            joints = []
            for index, (name, row, limits) in enumerate(zip(self.joint_names, self.dh, self.limits)):
                joint = {"name": name, **({"type": "prismatic"} if self.prismatic[index] else {}),
                         "a": row.a, "alpha": row.alpha, "d": row.d,
                         "theta_offset": row.theta, "position_limits": list(limits.position),
                         "velocity_limit": limits.velocity,
                         "acceleration_limit": limits.acceleration}
                if limits.effort is not None:
                    joint["effort_limit"] = limits.effort
                if self.drives is not None:
                    for key, value in dataclasses.asdict(self.drives[index]).items():
                        if value is not None:
                            joint[key] = value
                if self.inertials is not None:
                    joint["inertial"] = self.inertials[index].to_dict()
                joints.append(joint)
            data["joints"] = joints
        if self.transmission is not None:
            data["transmission"] = self.transmission.to_dict()
        if self.rated_payload is not None:
            data["rated_payload"] = self.rated_payload
        if self.simulation is not None:
            data["simulation"] = self._simulation_dict()
        return data

    def _simulation_dict(self) -> dict:
        return {name: entry.to_dict() for name, entry in zip(self.joint_names, self.simulation) if entry.to_dict()}


def _check_description(robot: RobotDescription) -> None:
    """Consistency and unit-plausibility checks shared by every way of building a robot."""
    _check_joint_list(robot)
    _check_gravity_vector(robot)
    _check_form(robot)
    n = len(robot.joint_names)
    if robot.drives is not None and len(robot.drives) != n:
        raise RobotDescriptionError(
            f"drives has {len(robot.drives)} entries, expected one per joint ({n})")
    _check_inertials(robot)
    _check_simulation_entries(robot)
    if len(robot.joint_types) != n or any(kind not in JOINT_TYPES for kind in robot.joint_types):
        raise RobotDescriptionError(f"joint_types must give one of {JOINT_TYPES} per joint ({n}), "
                                    f"got {list(robot.joint_types)}")
    if robot.transmission is not None:
        if not isinstance(robot.transmission, Transmission):
            raise RobotDescriptionError(f"transmission must be a Transmission, got {robot.transmission!r}")
        validators.array(robot.transmission.motor_from_joint, "transmission.motor_from_joint", RobotDescriptionError,
                         shape=(n, n), axes=("motors", "joints"), finite=False)
    if robot.rated_payload is not None:
        object.__setattr__(robot, "rated_payload", validators.in_range(
            robot.rated_payload, "rated_payload", RobotDescriptionError, "kg", 0.0, MAX_RATED_PAYLOAD,
            allow_minimum=False))
    for index, (name, limits) in enumerate(zip(robot.joint_names, robot.limits)):
        label = (f"joints[{index}] ({name})" if robot.dh is not None else f"joint {name!r}")
        _check_limits(limits, label, robot.joint_types[index] == "prismatic")
        if robot.drives is not None:
            _check_drive(robot.drives[index], label, robot.transmission is not None)


def _check_joint_list(robot: RobotDescription) -> None:
    """The robot's name; at least one joint, one limits entry each, names non-empty and unique."""
    if not isinstance(robot.name, str) or not robot.name:
        raise RobotDescriptionError(f"name must be a non-empty string, got {robot.name!r}")
    n = len(robot.joint_names)
    if n == 0:
        raise RobotDescriptionError("the robot has no joints; expected at least one")
    if len(robot.limits) != n:
        raise RobotDescriptionError(
            f"limits has {len(robot.limits)} entries, expected one per joint ({n})")
    seen = set()
    for index, name in enumerate(robot.joint_names):
        if not isinstance(name, str) or not name:
            raise RobotDescriptionError(
                f"joints[{index}].name must be a non-empty string, got {name!r}")
        if name in seen:
            raise RobotDescriptionError(
                f"joints[{index}].name {name!r} is a duplicate; joint names must be unique")
        seen.add(name)


def _check_gravity_vector(robot: RobotDescription) -> None:
    """Three gravity numbers [m/s^2], stored as a tuple of floats, of a plausible norm."""
    if len(robot.gravity) != 3:
        raise RobotDescriptionError(
            f"gravity must have 3 values [m/s^2], got {len(robot.gravity)}: {robot.gravity!r}")
    object.__setattr__(robot, "gravity", tuple(number(g, "gravity") for g in robot.gravity))
    _check_gravity(robot.gravity)


def _check_form(robot: RobotDescription) -> None:
    """Exactly one of a DH table, URDF and MJCF text; a DH table's rows and base in metres and radians."""
    if sum(value is not None for value in (robot.dh, robot.urdf, robot.mjcf)) != 1:
        raise RobotDescriptionError("a robot needs exactly one of a DH table (dh), urdf text and mjcf text")
    if robot.dh is not None:
        n = len(robot.joint_names)
        validators.text(robot.dh_convention, "dh_convention", RobotDescriptionError, DH_CONVENTIONS)
        if len(robot.dh) != n:
            raise RobotDescriptionError(
                f"dh has {len(robot.dh)} rows, expected one per joint ({n})")
        for index, row in enumerate(robot.dh):
            _check_dh_row(row, f"joints[{index}] ({robot.joint_names[index]})", "theta_offset")
        if robot.base is not None:
            _check_dh_row(robot.base, "base", "theta")
    elif robot.dh_convention is not None or robot.base is not None:
        raise RobotDescriptionError("a URDF or MJCF robot takes no dh_convention or base; "
                                    "put fixed transforms into its file")


def _check_inertials(robot: RobotDescription) -> None:
    """A DH robot's link inertials, one per joint; a URDF or MJCF robot takes none."""
    if robot.inertials is None:
        return
    n = len(robot.joint_names)
    if robot.dh is None:
        raise RobotDescriptionError("a URDF or MJCF robot takes no inertials; they come from its file")
    if len(robot.inertials) != n:
        raise RobotDescriptionError(
            f"inertials has {len(robot.inertials)} entries, expected one per joint ({n})")
    for index, inertial in enumerate(robot.inertials):
        check_inertial(inertial, f"joints[{index}] ({robot.joint_names[index]}).inertial")


def _check_simulation_entries(robot: RobotDescription) -> None:
    """One :class:`JointSimulation` per joint, each checked, when the robot has a simulation section."""
    if robot.simulation is None:
        return
    n = len(robot.joint_names)
    if len(robot.simulation) != n or not all(isinstance(entry, JointSimulation) for entry in robot.simulation):
        raise RobotDescriptionError(f"simulation must give one JointSimulation per joint ({n}), "
                                    f"got {robot.simulation!r}")
    for name, entry, kind in zip(robot.joint_names, robot.simulation, robot.joint_types or ()):
        _check_simulation(entry, name, kind == "prismatic")


def _check_drive(drive: JointDrive, label: str, has_transmission: bool) -> None:
    """A joint's drive values: positive, a torque constant [N m/A] non-zero; gear ratio and torque constant
    belong to the transmission when the robot has one."""
    for key, value in dataclasses.asdict(drive).items():
        if value is None:
            continue
        if has_transmission and key in ("gear_ratio", "torque_constant"):
            where = "motor_from_joint (its row's entries)" if key == "gear_ratio" else "torque_constants"
            raise RobotDescriptionError(
                f"{label}.{key}: the robot has a transmission, which gives the motors' {key}s: write "
                f"them in transmission.{where}, not per joint")
        if key == "torque_constant":
            if validators.number(value, f"{label}.{key}", RobotDescriptionError) == 0.0:
                raise RobotDescriptionError(f"{label}.{key} must be non-zero [N m/A], got {value!r}")
        else:
            validators.positive(value, f"{label}.{key}", RobotDescriptionError)


def check_inertial(inertial: LinkInertial, label: str) -> None:
    """Finite values, ``mass >= 0`` [kg], 3 ``com`` and 6 ``inertia`` values, ``com`` not in mm."""
    if not isinstance(inertial, LinkInertial):
        raise RobotDescriptionError(f"{label} must be a LinkInertial, got {inertial!r}")
    for key, count in (("com", 3), ("inertia", 6)):
        if len(getattr(inertial, key)) != count:
            raise RobotDescriptionError(f"{label}.{key} must have {count} values, got "
                                        f"{list(getattr(inertial, key))}")
    for key in _INERTIAL_KEYS:
        validators.array(getattr(inertial, key), f"{label}.{key}", RobotDescriptionError)
    validators.positive(inertial.mass, f"{label}.mass", RobotDescriptionError, "kg", allow_zero=True)
    if max(abs(value) for value in inertial.com) > MAX_LENGTH:
        raise RobotDescriptionError(f"{label}.com = {list(inertial.com)} m looks like millimetres "
                                    f"(expected |com| <= {MAX_LENGTH} m)")


def _check_simulation(entry: JointSimulation, joint: str, prismatic: bool) -> None:
    """Each value of a joint's simulation entry finite and >= 0 (or None), naming the joint, key and unit."""
    for key, units in SIMULATION_KEYS.items():
        value = getattr(entry, key)
        if value is None:
            continue
        unit = units[1] if prismatic else units[0]
        validators.positive(value, f"simulation.{joint}.{key}", RobotDescriptionError, unit, allow_zero=True)


def simulation_from_dict(section: Any, joint_names: Sequence[str]) -> tuple[JointSimulation, ...]:
    """The ``simulation:`` section (mapping joint name -> ``{armature, damping, friction_loss}``), one
    :class:`JointSimulation` per joint of ``joint_names`` (empty for joints it does not name)."""
    if not isinstance(section, Mapping):
        raise RobotDescriptionError("simulation must be a mapping joint name -> {armature [kg m^2], damping "
                                    f"[N m s/rad], friction_loss [N m]}}, got {type(section).__name__}")
    index_in(joint_names, list(section), "simulation", "the robot", error=RobotDescriptionError)
    entries = []
    for name in joint_names:
        entry = section.get(name, {})
        if entry is None:
            raise RobotDescriptionError(f"simulation.{name} is null: give some of {', '.join(SIMULATION_KEYS)} "
                                        "or leave the joint out")
        check_keys(entry, f"simulation.{name}", (), tuple(SIMULATION_KEYS))
        entries.append(JointSimulation(**{key: entry[key] for key in SIMULATION_KEYS if key in entry}))
    return tuple(entries)


def _check_gravity(gravity: tuple[float, ...]) -> None:
    """A gravity vector [m/s^2] is zero or of about Earth's norm (:data:`GRAVITY_NORM_RANGE`)."""
    norm = math.hypot(*gravity)
    low, high = GRAVITY_NORM_RANGE
    if norm == 0.0 or low <= norm <= high:
        return
    hint = " (looks like mm/s^2)" if 1e3 * low <= norm <= 1e3 * high else ""
    raise RobotDescriptionError(
        f"gravity [{', '.join(f'{g:g}' for g in gravity)}] has norm {norm:.4g} m/s^2; expected "
        f"about 9.81 (SI: {low} to {high} m/s^2) or 0{hint}")


def _check_dh_row(row: DHRow, label: str, theta_key: str) -> None:
    for key in ("a", "d"):
        value = getattr(row, key)
        if abs(value) > MAX_LENGTH:
            raise RobotDescriptionError(
                f"{label}.{key} = {value!r} m looks like millimetres "
                f"(expected |{key}| <= {MAX_LENGTH} m)")
    for key, attribute in (("alpha", "alpha"), (theta_key, "theta")):
        value = getattr(row, attribute)
        if abs(value) > MAX_ANGLE:
            raise RobotDescriptionError(
                f"{label}.{key} = {value!r} rad looks like degrees "
                f"(expected |{key}| <= 2 pi rad)")


def _check_limits(limits: JointLimits, label: str, prismatic: bool = False) -> None:
    """Order and sign of a joint's limits, and their size against unit mistakes: degrees for a
    revolute joint, millimetres for a prismatic one."""
    position_unit, velocity_unit, acceleration_unit, effort_unit = (
        ("m", "m/s", "m/s^2", "N") if prismatic else ("rad", "rad/s", "rad/s^2", "N m"))
    mistake = "millimetres" if prismatic else "degrees"
    if len(limits.position) != 2:
        raise RobotDescriptionError(
            f"{label}.position_limits must be [lower, upper] [{position_unit}], got {limits.position!r}")
    lower, upper = limits.position
    position_bound = MAX_PRISMATIC_POSITION_LIMIT if prismatic else MAX_POSITION_LIMIT
    for value in (lower, upper):
        if abs(value) > position_bound:
            raise RobotDescriptionError(
                f"{label}.position_limits = [{lower!r}, {upper!r}] {position_unit} looks like {mistake} "
                f"(expected within +-{position_bound:.3f} {position_unit})")
    if not lower < upper:
        raise RobotDescriptionError(
            f"{label}.position_limits = [{lower!r}, {upper!r}] {position_unit}: lower must be < upper")
    if not limits.velocity > 0.0:
        raise RobotDescriptionError(
            f"{label}.velocity_limit = {limits.velocity!r} {velocity_unit} must be > 0")
    velocity_bound = MAX_PRISMATIC_VELOCITY_LIMIT if prismatic else MAX_VELOCITY_LIMIT
    if limits.velocity > velocity_bound:
        raise RobotDescriptionError(
            f"{label}.velocity_limit = {limits.velocity!r} {velocity_unit} looks like {mistake} "
            f"(expected <= {velocity_bound} {velocity_unit})")
    if not limits.acceleration > 0.0:
        raise RobotDescriptionError(
            f"{label}.acceleration_limit = {limits.acceleration!r} {acceleration_unit} must be > 0")
    if limits.effort is not None and not limits.effort > 0.0:
        raise RobotDescriptionError(f"{label}.effort_limit = {limits.effort!r} {effort_unit} must be > 0")


number = functools.partial(validators.number, error=RobotDescriptionError)
""":func:`robot_dynid.validators.number` raising RobotDescriptionError (the DH, URDF and MJCF forms' numbers)."""


def _optional_number(mapping: Mapping, key: str, label: str) -> float | None:
    """``mapping[key]`` as a number, None when the key is absent (an explicit null is an error:
    a robot file leaves out what it does not know)."""
    return number(mapping[key], f"{label}.{key}") if key in mapping else None


def numbers(value: Any, count: int, label: str, unit: str) -> tuple[float, ...]:
    """:func:`robot_dynid.validators.numbers` raising RobotDescriptionError."""
    return validators.numbers(value, count, label, RobotDescriptionError, unit)


def check_keys(mapping: Any, label: str, required: Sequence[str], optional: Sequence[str] = ()) -> None:
    """:func:`robot_dynid.validators.known_keys` raising RobotDescriptionError."""
    validators.known_keys(mapping, label, required, optional, RobotDescriptionError)


def xml_or_file(data: Mapping, key: str, what: str, base_dir: str | os.PathLike | None) -> tuple[str, str | None]:
    """(XML text, its file or None) of the description's ``key`` (``urdf``, ``mjcf``): the value itself when it is
    XML, else the ``what`` file it names (relative to ``base_dir``, default the working directory) read."""
    value = data[key]
    if not isinstance(value, str) or not value.strip():
        raise RobotDescriptionError(f"{key} must be a file path or {what} XML text, got {value!r}")
    if value.lstrip().startswith("<"):
        return value, None
    path = value if os.path.isabs(value) else os.path.join(base_dir or os.getcwd(), value)
    try:
        return read_text(path, what, RobotDescriptionError), path
    except RobotDescriptionError as error:
        raise RobotDescriptionError(f"{key}: {error}") from None


def _name_and_gravity(data: Mapping) -> tuple[str, tuple[float, ...]]:
    name = data["name"]
    if not isinstance(name, str) or not name:
        raise RobotDescriptionError(f"name must be a non-empty string, got {name!r}")
    gravity = numbers(data.get("gravity", list(DEFAULT_GRAVITY)), 3, "gravity", "m/s^2")
    return name, gravity


def robot_from_dh_dict(data: Mapping) -> RobotDescription:
    """A robot of a description with a DH table (``dh_convention:``, ``joints:`` with ``a``, ``alpha``, ``d``)."""
    check_keys(data, "robot description", _DH_REQUIRED, _DH_OPTIONAL)
    name, gravity = _name_and_gravity(data)
    convention = data["dh_convention"]
    validators.text(convention, "dh_convention", RobotDescriptionError, DH_CONVENTIONS)
    base = None
    if "base" in data:
        check_keys(data["base"], "base", _BASE_KEYS)
        base = DHRow(*(number(data["base"][key], f"base.{key}") for key in _BASE_KEYS))
    joints = data["joints"]
    if not isinstance(joints, list) or not joints:
        raise RobotDescriptionError("joints must be a non-empty list of joint mappings")
    names, rows, limits, drives, inertials, types = [], [], [], [], [], []
    for index, joint in enumerate(joints):
        label = f"joints[{index}]"
        if isinstance(joint, Mapping) and isinstance(joint.get("name"), str):
            label += f" ({joint['name']})"
        check_keys(joint, label, _JOINT_REQUIRED, _JOINT_OPTIONAL)
        names.append(joint["name"])
        types.append(joint.get("type", "revolute"))
        validators.text(types[-1], f"{label}.type", RobotDescriptionError, JOINT_TYPES)
        rows.append(DHRow(a=number(joint["a"], f"{label}.a"),
                          alpha=number(joint["alpha"], f"{label}.alpha"),
                          d=number(joint["d"], f"{label}.d"),
                          theta=number(joint.get("theta_offset", 0.0), f"{label}.theta_offset")))
        limits.append(_limits_from_values(
            joint["position_limits"], joint["velocity_limit"], joint["acceleration_limit"],
            _optional_number(joint, "effort_limit", label), label,
            ("position_limits", "velocity_limit", "acceleration_limit", "effort_limit")))
        drives.append(JointDrive(*(_optional_number(joint, key, label) for key in _DRIVE_KEYS)))
        inertials.append(_inertial_from_dict(joint, label, joints))
    has_drives = any(drive != JointDrive() for drive in drives)
    transmission = transmission_from_dict(data["transmission"], names) if "transmission" in data else None
    return RobotDescription(name=name, joint_names=tuple(names), limits=tuple(limits),
                            gravity=gravity, dh_convention=convention, dh=tuple(rows), base=base,
                            drives=tuple(drives) if has_drives else None,
                            inertials=None if inertials[0] is None else tuple(inertials),
                            joint_types=tuple(types), transmission=transmission,
                            rated_payload=number(data["rated_payload"], "rated_payload") if "rated_payload" in data
                            else None,
                            simulation=simulation_from_dict(data["simulation"], names) if "simulation" in data
                            else None)


def _inertial_from_dict(joint: Mapping, label: str, joints: list) -> LinkInertial | None:
    """A DH joint's ``inertial: {mass, com, inertia}``; every joint has one or none does."""
    with_inertial = [index for index, entry in enumerate(joints)
                     if isinstance(entry, Mapping) and "inertial" in entry]
    if "inertial" not in joint:
        if with_inertial:
            raise RobotDescriptionError(
                f"{label}: missing key 'inertial' (joints[{with_inertial[0]}] has one; give "
                "inertial: for every joint or for none)")
        return None
    entry, where = joint["inertial"], f"{label}.inertial"
    check_keys(entry, where, _INERTIAL_KEYS)
    return LinkInertial(mass=number(entry["mass"], f"{where}.mass"),
                        com=numbers(entry["com"], 3, f"{where}.com", "m"),
                        inertia=numbers(entry["inertia"], 6, f"{where}.inertia", "kg m^2"))


def _limits_from_values(position: Any, velocity: Any, acceleration: Any, effort: Any,
                        label: str, keys: Sequence[str]) -> JointLimits:
    return JointLimits(
        position=numbers(position, 2, f"{label}.{keys[0]}", "rad"),
        velocity=number(velocity, f"{label}.{keys[1]}"),
        acceleration=number(acceleration, f"{label}.{keys[2]}"),
        effort=None if effort is None else number(effort, f"{label}.{keys[3]}"))


def _dh_transform(row: DHRow, convention: str, q: float = 0.0) -> pin.SE3:
    """``A = Rz(q+theta) Tz(d) Tx(a) Rx(alpha)`` (standard) or ``Rx Tx Rz Tz`` (modified)."""
    rot_z = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, q + row.theta), np.zeros(3))
    rot_x = pin.SE3(pin.rpy.rpyToMatrix(row.alpha, 0.0, 0.0), np.zeros(3))
    along_z = pin.SE3(np.eye(3), np.array([0.0, 0.0, row.d]))
    along_x = pin.SE3(np.eye(3), np.array([row.a, 0.0, 0.0]))
    if convention == "standard":
        return rot_z * along_z * along_x * rot_x
    return rot_x * along_x * rot_z * along_z


@dataclass(frozen=True)
class _JointGeometry:
    placement: pin.SE3       # joint frame in the parent joint frame (world for joint 1), q = 0
    axis: np.ndarray         # (3,) unit rotation axis (revolute) or direction (prismatic) in the joint frame
    link_frame: pin.SE3      # link frame in the joint frame


def _joint_geometry(robot: RobotDescription) -> list[_JointGeometry]:
    if robot.urdf is not None:
        return [_JointGeometry(placement, axis, pin.SE3.Identity())
                for placement, axis in urdf_chain(robot.urdf, robot.joint_names)]
    if robot.mjcf is not None:
        return [_JointGeometry(placement, axis, pin.SE3.Identity())
                for placement, axis, _ in mjcf_chain(robot.mjcf, robot.joint_names)]
    convention = robot.dh_convention
    base = (pin.SE3.Identity() if robot.base is None
            else _dh_transform(robot.base, convention))
    z_axis = np.array([0.0, 0.0, 1.0])
    geometry = []
    if convention == "standard":
        placement = base
        for row in robot.dh:
            link_frame = _dh_transform(row, convention)
            geometry.append(_JointGeometry(placement, z_axis, link_frame))
            placement = link_frame
        return geometry
    for index, row in enumerate(robot.dh):
        placement = _dh_transform(row, convention)
        if index == 0:
            placement = base * placement
        geometry.append(_JointGeometry(placement, z_axis, pin.SE3.Identity()))
    return geometry


def _joint_model(axis: np.ndarray, prismatic: bool = False) -> pin.JointModel:
    """A pinocchio revolute (about) or prismatic (along) joint model of ``axis``."""
    aligned = (pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ) if prismatic \
        else (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)
    for index, joint_model in enumerate(aligned):
        if np.array_equal(axis, np.eye(3)[index]):
            return joint_model()
    return pin.JointModelPrismaticUnaligned(axis) if prismatic else pin.JointModelRevoluteUnaligned(axis)


def build_pinocchio_model(robot: RobotDescription) -> pin.Model:
    """A pinocchio model of the robot's kinematics, with zero inertias.

    Joint ``i`` (pinocchio id ``i``, name ``robot.joint_names[i-1]``) is revolute about (or
    prismatic along) its axis in its joint frame; its BODY frame ``"<joint>_link"`` is the link frame the inertial
    parameters of link ``i`` refer to. ``model.gravity`` is the robot's gravity. Position,
    velocity and effort limits are copied (effort 0 when unknown).
    """
    model = pin.Model()
    model.name = robot.name
    model.gravity = pin.Motion(np.array(robot.gravity, dtype=float), np.zeros(3))
    parent = 0
    for name, limits, geometry, prismatic in zip(robot.joint_names, robot.limits, _joint_geometry(robot),
                                                 robot.prismatic):
        joint_id = model.addJoint(
            parent, _joint_model(geometry.axis, prismatic), geometry.placement, name,
            np.array([limits.effort or 0.0]), np.array([limits.velocity]),
            np.array([limits.position[0]]), np.array([limits.position[1]]))
        model.appendBodyToJoint(joint_id, pin.Inertia.Zero(), pin.SE3.Identity())
        joint_frame = model.addJointFrame(joint_id)
        model.addBodyFrame(f"{name}_link", joint_id, geometry.link_frame, joint_frame)
        parent = joint_id
    return model


def link_frame_placements(model: pin.Model) -> tuple[pin.SE3, ...]:
    """Placement of each link frame in its joint frame, read from a model of
    :func:`build_pinocchio_model` (one BODY frame per joint), joints 1..n."""
    placements: dict[int, pin.SE3] = {}
    for frame in model.frames:
        if frame.type == pin.FrameType.BODY:
            # Frame.parentJoint from pinocchio 3; Frame.parent before
            joint = frame.parentJoint if hasattr(frame, "parentJoint") else frame.parent
            if joint in placements:
                raise RobotDescriptionError(f"joint {model.names[joint]!r} has more than one BODY frame")
            placements[joint] = frame.placement
    missing = [model.names[j] for j in range(1, model.njoints) if j not in placements]
    if missing:
        raise RobotDescriptionError(f"no link (BODY) frame for joint {missing[0]!r}")
    return tuple(placements[j] for j in range(1, model.njoints))
