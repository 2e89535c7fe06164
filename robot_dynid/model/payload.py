"""Payloads: a rigid body (tool, gripper, part) fixed to a frame of the arm's last link.

A :class:`Payload` is one more body with ten inertial parameters (METHODS.md section 10), given as
URDF gives a body: ``frame`` (a frame fixed to the last link: its link frame, or a URDF link fixed
below it such as ``tool0``), ``mass`` [kg] > 0, centre of mass ``com`` [m] in ``frame``, and
``inertia`` [kg m^2] about the centre of mass in ``frame``'s axes, ``[ixx, ixy, ixz, iyy, iyz,
izz]``. Only plausible, physically consistent payloads exist (the limits are in
:mod:`~robot_dynid.model.payload_defaults`): mass in [:data:`MIN_MASS`, :data:`MAX_MASS`], centre of mass within
:data:`MAX_COM_DISTANCE` of the frame, inertia at most ``mass MAX_EXTENT^2``; finite values and central principal
moments that obey the triangle inequalities (``a + b >= c``, which makes them >= 0): the
pseudo-inertia :func:`~robot_dynid.model.link_inertials.pseudo_inertia` is then positive
semidefinite.

Its torques: the regressor is linear in the last link's ten parameters ``pi_L`` (about the last
link frame origin, in its axes), so a payload adds ``Y_L(q, qd, qdd) pi_p`` with ``pi_p =
M(F -> L) phi_F`` (:func:`~robot_dynid.model.regressor.inertia_parameter_map` of the frame's
placement) and ``phi_F`` its ten parameters about ``frame``'s origin
(:meth:`Payload.link_parameters`).

A payload file (``payload.yaml``, written by ``robot-dynid payload identify`` or by hand) holds
``frame``, ``mass``, ``com`` and ``inertia`` and, when identified, what the identification found
(standard deviations, undetermined parameters, residuals); :func:`load_payload` reads the payload
of either. A value the identification could not determine is written as null, and such a file is
refused as a payload (naming the field) rather than filled in.
"""
from __future__ import annotations

import dataclasses
import math
import pathlib

import numpy as np
import pinocchio as pin

from robot_dynid import validators
from robot_dynid.errors import DynIdError, PayloadError
from robot_dynid.input_files import read_text
from robot_dynid.model.link_inertials import parameters_from_inertial, pseudo_inertia
from robot_dynid.model.payload_defaults import (CONSISTENCY_RTOL, DEFAULT_DENSITY, DEFAULT_MAX_COM_DISTANCE,
                                                IMPLAUSIBLE_MASS_FACTOR, MAX_COM_DISTANCE, MAX_EXTENT, MAX_MASS,
                                                MIN_MASS)
from robot_dynid.model.regressor import N_INERTIAL, Regressor, inertia_parameter_map
from robot_dynid.model.robot_description import LinkInertial, RobotDescription
from robot_dynid.model.link_inertials import link_bodies
from robot_dynid.yaml_files import load_yaml

__all__ = ["SCHEMA", "SCHEMA_VERSION", "UNITS", "PAYLOAD_KEYS", "PAYLOAD_FILE_KEYS", "payload_frames",
           "default_frame", "frame_placement", "consistency_problem", "Payload", "PayloadRegressor",
           "solid_body_inertia", "plausibility_warnings", "payload_from_file_data",
           "load_payload"]

SCHEMA = "robot_dynid/payload"
SCHEMA_VERSION = 1
#: The ``units`` of a payload file (fixed: SI).
UNITS = {"mass": "kg", "length": "m", "inertia": "kg m^2", "torque": "N m",
         "inertia_order": ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"],
         "inertia_about": "centre of mass, in the axes of frame"}
PAYLOAD_KEYS = ("frame", "mass", "com", "inertia")
#: What else an identified payload file holds (written by :mod:`robot_dynid.estimation.payload`); the last three
#: (how its std were made, the inertia's prior, the unloaded recording it was differenced with) may be absent.
PAYLOAD_FILE_KEYS = ("schema", "schema_version", "units", "robot") + PAYLOAD_KEYS + (
    "std", "undetermined", "residual", "fit", "warnings", "provenance", "uncertainty", "inertia_prior", "differential")


def payload_frames(robot: RobotDescription) -> dict[str, pin.SE3]:
    """The frames a payload can be fixed to, each with its placement in the last link frame: the last
    link itself (the URDF child link of the last joint, ``"<joint>_link"`` for DH robots) and, for a
    URDF, every link fixed below it (fixed joints, or movable joints not among the robot's joints, at 0)."""
    return {body.name: body.placement for body in link_bodies(robot, inertials=False)[-1]}


def default_frame(robot: RobotDescription) -> str:
    """The last link's name: the payload frame when none is given."""
    return link_bodies(robot, inertials=False)[-1][0].name


def frame_placement(robot: RobotDescription, frame: str) -> pin.SE3:
    """Placement of ``frame`` in the last link frame; PayloadError naming the frames there are."""
    frames = payload_frames(robot)
    if frame not in frames:
        raise PayloadError(f"payload frame {frame!r} is not fixed to the last link of robot {robot.name!r}; "
                           f"its frames are {list(frames)}")
    return frames[frame]


def consistency_problem(mass: float, com, inertia) -> str | None:
    """Why a body of ``mass`` [kg], centre of mass ``com`` [m] and ``inertia`` about it [kg m^2]
    (``[ixx, ixy, ixz, iyy, iyz, izz]``) cannot exist, or None when it can (values assumed finite)."""
    if not mass > 0.0:
        return f"mass {mass!r} kg must be > 0"
    xx, xy, xz, yy, yz, zz = inertia
    moments = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
    parameters = parameters_from_inertial(LinkInertial(mass, tuple(com), tuple(inertia)))
    J = pseudo_inertia(parameters)
    slack = CONSISTENCY_RTOL * float(np.abs(J).max())
    if np.linalg.eigvalsh(J)[0] >= -slack:
        return None
    shown = ", ".join(f"{value:.6g}" for value in moments)
    if moments[0] < -slack:
        return (f"inertia about the centre of mass has a negative principal moment ({shown} kg m^2): it must be "
                "positive semidefinite")
    return (f"principal moments about the centre of mass ({shown} kg m^2) violate the triangle inequality: the "
            f"largest exceeds the sum of the other two by {moments[2] - moments[0] - moments[1]:.6g} kg m^2")


@dataclasses.dataclass(frozen=True)
class Payload:
    """A physically consistent body fixed to a frame of the last link (module docstring).

    Attributes
    ----------
    frame : str
        Name of the frame (:func:`payload_frames`).
    mass : float
        [kg], > 0.
    com : tuple of 3 float
        Centre of mass [m] in ``frame``.
    inertia : tuple of 6 float
        About the centre of mass [kg m^2] in ``frame``'s axes, ``(ixx, ixy, ixz, iyy, iyz, izz)``.

    Raises
    ------
    PayloadError
        One line naming the field: not a number, not finite, a wrong length, a mass not in
        (0, :data:`MAX_MASS`] kg, or an inertia no body has (:func:`consistency_problem`).
    """

    frame: str
    mass: float
    com: tuple
    inertia: tuple

    def __post_init__(self):
        if not isinstance(self.frame, str) or not self.frame:
            raise PayloadError(f"payload frame must be a non-empty string, got {validators.show(self.frame)}")
        mass = validators.number(self.mass, "payload mass [kg]", PayloadError)
        com = _numbers(self.com, 3, "payload com", "m")
        inertia = _numbers(self.inertia, 6, "payload inertia", "kg m^2")
        if mass > MAX_MASS:
            raise PayloadError(f"payload mass {mass!r} kg is above {MAX_MASS:g} kg (grams given as kilograms?)")
        distance = math.dist(com, (0.0, 0.0, 0.0))
        if distance > MAX_COM_DISTANCE:
            raise PayloadError(f"payload com {list(com)} m is {distance:.4g} m from frame {self.frame!r}, more than "
                               f"{MAX_COM_DISTANCE:g} m (millimetres given as metres?)")
        largest = max(abs(value) for value in inertia)
        if largest > MAX_MASS * MAX_EXTENT**2:
            raise PayloadError(f"payload inertia {list(inertia)} kg m^2 has an entry above "
                               f"{MAX_MASS * MAX_EXTENT**2:g} kg m^2 (inertia in kg mm^2?)")
        problem = consistency_problem(mass, com, inertia)
        if problem is not None:
            raise PayloadError(f"payload at {self.frame!r} is not physically consistent: {problem}")
        if mass < MIN_MASS:
            raise PayloadError(f"payload mass {mass!r} kg is below {MIN_MASS:g} kg (1 g): not a payload an arm's "
                               "torques can show")
        if largest > mass * MAX_EXTENT**2:
            raise PayloadError(f"payload inertia {list(inertia)} kg m^2: an entry of {largest:.4g} kg m^2 needs a body "
                               f"over {MAX_EXTENT:g} m across for its {mass:g} kg (inertia in kg mm^2, or a mass "
                               "in tonnes?)")
        object.__setattr__(self, "mass", mass)
        object.__setattr__(self, "com", com)
        object.__setattr__(self, "inertia", inertia)

    @property
    def inertial(self) -> LinkInertial:
        """Mass, centre of mass and inertia about it, in ``frame``."""
        return LinkInertial(self.mass, self.com, self.inertia)

    def parameters(self) -> np.ndarray:
        """The ten inertial values about ``frame``'s origin in its axes, shape (10,): ``[m, mx, my, mz, Ixx, Ixy,
        Iyy, Ixz, Iyz, Izz]`` [kg, kg m, kg m^2]."""
        return parameters_from_inertial(self.inertial)

    def link_parameters(self, robot: RobotDescription) -> np.ndarray:
        """The ten parameters (10,) about the last link frame's origin, in its axes (what the last
        link's regressor columns multiply)."""
        placement = frame_placement(robot, self.frame)
        return inertia_parameter_map(placement.rotation, placement.translation) @ self.parameters()

    def to_dict(self) -> dict:
        return {"frame": self.frame, "mass": self.mass, "com": list(self.com), "inertia": list(self.inertia)}

    @classmethod
    def from_dict(cls, data, source: str = "payload") -> "Payload":
        """The payload of a mapping with exactly :data:`PAYLOAD_KEYS`; PayloadError starting with
        ``source``."""
        try:
            validators.known_keys(data, "", PAYLOAD_KEYS, error=PayloadError)
            return cls(**{key: data[key] for key in PAYLOAD_KEYS})
        except DynIdError as error:
            raise PayloadError(f"{source}: {error}") from None


class PayloadRegressor:
    """``Y_p(q, qd, qdd)``: torques per unit of a payload's ten parameters about ``frame``'s origin.

    ``tau_payload = Y_p @ phi`` with ``phi`` = :meth:`Payload.parameters`; ``Y_p = Y_L M(F -> L)``,
    ``Y_L`` the last link's ten inertial columns of the robot's regressor (no friction: a payload has
    none) and ``M`` :func:`~robot_dynid.model.regressor.inertia_parameter_map` of the frame's
    placement in the last link frame.

    Parameters
    ----------
    robot : RobotDescription
    frame : str, optional
        One of :func:`payload_frames`; default the last link (:func:`default_frame`).
    """

    names = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")

    def __init__(self, robot: RobotDescription, frame: str | None = None):
        self.robot = robot
        self.frame = default_frame(robot) if frame is None else frame
        placement = frame_placement(robot, self.frame)
        self.map = inertia_parameter_map(placement.rotation, placement.translation)
        self.regressor = Regressor(robot)
        self._last = slice(self.regressor.n_parameters - N_INERTIAL, self.regressor.n_parameters)

    def compute(self, q, qd, qdd) -> np.ndarray:
        """``Y_p`` (N, n, 10) [N m per kg, kg m, kg m^2] of states (N, n) [rad, rad/s, rad/s^2]."""
        return self.regressor.compute(q, qd, qdd)[:, :, self._last] @ self.map


def solid_body_inertia(mass: float, com, density: float = DEFAULT_DENSITY) -> tuple[np.ndarray, str]:
    """The inertia about the centre of mass [kg m^2] (URDF order ``ixx, ixy, ixz, iyy, iyz, izz``) of the uniform solid
    body that a payload's ``mass`` [kg] and centre of mass ``com`` (3,) [m] in its frame imply, and its description.

    A tool hangs from its frame's origin: the body is a solid cylinder of ``density`` [kg/m^3] whose axis runs from
    the frame's origin through the centre of mass, centred on it (length ``l = 2 |com|``, radius ``r`` from
    ``mass = density pi r^2 l``): ``m r^2 / 2`` about its axis, ``m (3 r^2 + l^2) / 12`` across it. When that
    cylinder would be shorter than its diameter (a centre of mass near the frame), a solid sphere of that density
    around the centre of mass: ``2 m r^2 / 5``, ``r = (3 m / (4 pi density))^(1/3)``.
    """
    mass = validators.positive(mass, "payload mass", PayloadError, "kg")
    density = validators.positive(density, "density", PayloadError, "kg/m^3")
    com = np.asarray(_numbers(com, 3, "payload com", "m"))
    length = 2.0 * float(np.linalg.norm(com))
    radius = math.sqrt(mass / (density * math.pi * length)) if length > 0.0 else math.inf
    if length >= 2.0 * radius:
        axis = com / np.linalg.norm(com)
        axial, across = 0.5 * mass * radius**2, mass * (3.0 * radius**2 + length**2) / 12.0
        inertia = across * (np.eye(3) - np.outer(axis, axis)) + axial * np.outer(axis, axis)
        body = (f"solid cylinder of {density:g} kg/m^3 from the frame's origin through the centre of mass (length "
                f"{length:.3g} m, radius {radius:.3g} m)")
    else:
        radius = (3.0 * mass / (4.0 * math.pi * density)) ** (1.0 / 3.0)
        inertia = 0.4 * mass * radius**2 * np.eye(3)
        body = f"solid sphere of {density:g} kg/m^3 around the centre of mass (radius {radius:.3g} m)"
    return inertia[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]], body


def plausibility_warnings(payload: Payload, rated_payload: float | None = None,
                          max_com_distance: float = DEFAULT_MAX_COM_DISTANCE) -> list[str]:
    """Why a consistent payload is implausible: a mass above :data:`IMPLAUSIBLE_MASS_FACTOR` times
    ``rated_payload`` [kg] (when known), a centre of mass farther than ``max_com_distance`` [m] from
    the frame's origin. Empty when neither."""
    warnings = []
    if rated_payload is not None and payload.mass > IMPLAUSIBLE_MASS_FACTOR * rated_payload:
        warnings.append(f"implausible payload: mass {payload.mass:.4g} kg is more than {IMPLAUSIBLE_MASS_FACTOR:g} "
                        f"times the robot's rated payload of {rated_payload:g} kg")
    distance = math.dist(payload.com, (0.0, 0.0, 0.0))
    if distance > max_com_distance:
        warnings.append(f"implausible payload: centre of mass {distance:.4g} m from frame {payload.frame!r}, farther "
                        f"than {max_com_distance:g} m")
    return warnings


def payload_from_file_data(data, source: str, robot: RobotDescription | None = None) -> Payload:
    """The payload of a payload file's parsed YAML (module docstring): the four payload keys, and the
    other keys of :data:`PAYLOAD_FILE_KEYS` checked where they matter (schema, version, units, robot).
    With ``robot``, its name must match the file's ``robot`` (when given) and ``frame`` must be one of
    its :func:`payload_frames`."""
    try:
        validators.known_keys(data, "", PAYLOAD_KEYS, PAYLOAD_FILE_KEYS[:4] + PAYLOAD_FILE_KEYS[8:], PayloadError)
        if "schema" in data and data["schema"] != SCHEMA:
            raise PayloadError(f"schema is {validators.show(data['schema'])}, expected {SCHEMA!r}")
        if "schema_version" in data and data["schema_version"] != SCHEMA_VERSION:
            raise PayloadError(f"schema_version {validators.show(data['schema_version'])} is not supported (this "
                               f"robot_dynid reads {SCHEMA_VERSION})")
        if "units" in data and data["units"] != UNITS:
            raise PayloadError(f"units must be {UNITS} (payload files are SI), got {validators.show(data['units'])}")
        undetermined = [key for key in PAYLOAD_KEYS[1:] if _holds_null(data[key])]
        if undetermined:
            raise PayloadError(f"{', '.join(undetermined)} not determined (null): the identification could not "
                               "determine them from its data; identify again with more motion of the wrist "
                               "(robot-dynid excitation optimize --payload), or write known values")
        if robot is not None and "robot" in data and data["robot"] != robot.name:
            raise PayloadError(f"identified on robot {validators.show(data['robot'])}, not {robot.name!r}")
        payload = Payload(**{key: data[key] for key in PAYLOAD_KEYS})
        if robot is not None:
            frame_placement(robot, payload.frame)
        return payload
    except DynIdError as error:
        raise PayloadError(f"{source}: {error}") from None


def load_payload(path, robot: RobotDescription | None = None) -> Payload:
    """The payload of a payload file (:func:`payload_from_file_data`); PayloadError naming the file for
    anything that keeps it from loading (unreadable, beyond the size and YAML limits, not a payload)."""
    path = pathlib.Path(path)
    text = read_text(path, "payload file", PayloadError)
    return payload_from_file_data(load_yaml(text, str(path), PayloadError, "payload file"), str(path), robot)


def _holds_null(value) -> bool:
    return value is None or (isinstance(value, list) and any(item is None for item in value))


def _numbers(value, length: int, field: str, unit: str) -> tuple:
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return validators.numbers(value, length, field, PayloadError, unit)
