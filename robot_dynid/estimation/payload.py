"""Payload identification: a tool's or load's ten inertial parameters with the arm's model fixed.

With the arm's model fixed (its torques ``tau_arm(q, qd, qdd)``, friction included), the residual
of the measured torques is the payload's: ``y = tau - tau_arm = Y_p(q, qd, qdd) phi``, ``Y_p`` the
last link's ten inertial columns moved to the payload frame
(:class:`~robot_dynid.model.payload.PayloadRegressor`), ``phi = [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz,
Iyz, Izz]`` about the frame's origin (METHODS.md section 10). The rows are folded chunk by chunk
into per-joint normal equations (:func:`payload_accumulator`), so a minute at 500 Hz is a few 10 x 10
matrices; :func:`solve_payload` solves them:

- physically consistent by default
  (:func:`~robot_dynid.estimation.physical_consistency.solve_consistent_body`: pseudo-inertia
  positive semidefinite, i.e. ``m > 0``, an inertia about the centre of mass positive semidefinite
  obeying the triangle inequalities), else ordinary least squares; with a known ``mass`` [kg] only
  the other nine are estimated;
- standard deviations from the least-squares covariance ``s^2 G^-1`` (``s^2`` the residual of the
  fit over ``N n - p`` degrees of freedom; the constraints are ignored, they can only shrink it),
  and of mass, centre of mass and inertia about it by the delta method;
- a parameter is *undetermined* when its standard deviation exceeds its scale (``M``, ``M L``,
  ``M L^2``: ``M`` the known mass, else the estimate, at least :data:`MASS_SCALE_FLOOR`; ``L``
  :data:`DEFAULT_LENGTH_SCALE`), i.e. the data say less about it than its size: a recording that
  barely moves the wrist leaves the inertia so. Fields that depend on one (the inertia about the
  centre of mass on ``m``, ``h`` and ``I``; the centre of mass on ``m`` and ``h``), or whose own
  standard deviation exceeds their scale (``M``, ``L``, ``M L^2``: the centre of mass of an almost
  zero mass), are reported as undetermined (None; null in the file), never filled in.

Plausibility (:func:`~robot_dynid.model.payload.plausibility_warnings`): a mass far above the robot's
``rated_payload`` or a centre of mass beyond ``max_com_distance`` [m] is reported as implausible.
"""
from __future__ import annotations

import dataclasses
import datetime
import logging
import math
from typing import Sequence

import numpy as np

from robot_dynid import __version__, validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation.estimators import RANK_TOLERANCE, LeastSquaresAccumulator, column_scales
from robot_dynid.estimation.identification import RETURNED, prepare_recording
from robot_dynid.estimation.physical_consistency import solve_consistent_body
from robot_dynid.estimation.torque_scale import UnknownPayload
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.link_inertials import URDF_INERTIA_ORDER
from robot_dynid.model.payload import (DEFAULT_MAX_COM_DISTANCE, SCHEMA, SCHEMA_VERSION, UNITS, Payload,
                                       PayloadRegressor, default_frame, plausibility_warnings)
from robot_dynid.model.regressor import inertia_parameter_map
from robot_dynid.recordings.recording import Recording

logger = logging.getLogger(__name__)

PARAMETER_NAMES = PayloadRegressor.names
#: Field names of mass, centre of mass and inertia about it (URDF order), as the payload file has them.
FIELD_NAMES = ("mass", "com[0]", "com[1]", "com[2]", "inertia[0]", "inertia[1]", "inertia[2]", "inertia[3]",
               "inertia[4]", "inertia[5]")
#: Length scale ``L`` [m] of a payload for the "undetermined" rule (a tool's size): first moments are
#: compared with ``M L``, inertias with ``M L^2``.
DEFAULT_LENGTH_SCALE = 0.1
#: Smallest mass scale ``M`` [kg] (an unloaded arm's estimate is about 0).
MASS_SCALE_FLOOR = 0.1
DEFAULT_CHUNK_SIZE = 5000
#: Largest chunk of samples evaluated at once.
MAX_CHUNK_SIZE = 100_000


@dataclasses.dataclass(frozen=True)
class PayloadSettings:
    """How a payload is identified.

    Attributes
    ----------
    frame : str or None
        Frame of the payload (:func:`~robot_dynid.model.payload.payload_frames`); None: the last link.
    mass : float or None
        Known mass [kg] (> 0): only the other nine parameters are estimated.
    consistent : bool
        Physically consistent fit (needs cvxpy), else ordinary least squares.
    length_scale : float
        ``L`` [m] of the undetermined rule (module docstring).
    max_com_distance : float
        [m] beyond which a centre of mass is reported as implausible.
    chunk_size : int
        Samples per regressor evaluation.
    """

    frame: str | None = None
    mass: float | None = None
    consistent: bool = True
    length_scale: float = DEFAULT_LENGTH_SCALE
    max_com_distance: float = DEFAULT_MAX_COM_DISTANCE
    chunk_size: int = DEFAULT_CHUNK_SIZE

    def __post_init__(self):
        if self.mass is not None:
            validators.positive(self.mass, "payload mass", DataError, "kg")
        validators.positive(self.length_scale, "length_scale", DataError, "m")
        validators.positive(self.max_com_distance, "max_com_distance", DataError, "m")
        validators.count(self.chunk_size, "chunk_size", DataError, maximum=MAX_CHUNK_SIZE)


@dataclasses.dataclass(frozen=True)
class PayloadEstimate:
    """Result of :func:`solve_payload`.

    Attributes
    ----------
    frame : str
    parameters, parameter_std : ndarray, shape (10,)
        ``phi`` about the frame's origin [kg, kg m, kg m^2] and its standard deviations (inf where
        the data resolve nothing; 0 for a known mass).
    fields, field_std : tuple of 10 (float or None)
        Mass [kg], centre of mass [m] (3), inertia about it [kg m^2] (6, ``ixx, ixy, ixz, iyy, iyz,
        izz``) and their standard deviations; None where undetermined.
    undetermined : tuple of str
        Parameter names (:data:`PARAMETER_NAMES`) the data do not determine.
    payload : Payload or None
        The payload, when every field is determined and the values are physically consistent.
    residual_before, residual_after : dict
        Joint -> RMS torque residual [N m] of the arm alone and of the arm with the payload, on the
        fitted samples.
    condition_number : float
        Of the column-scaled payload regressor (its free columns).
    n_samples : int
    known_mass : bool
    consistent : bool
        Whether the fit was constrained to physical consistency.
    boundary : bool
        The consistent fit lies on the consistency boundary (the unconstrained one is outside).
    warnings : tuple of str
    """

    frame: str
    parameters: np.ndarray
    parameter_std: np.ndarray
    fields: tuple
    field_std: tuple
    undetermined: tuple
    payload: Payload | None
    residual_before: dict
    residual_after: dict
    condition_number: float
    n_samples: int
    known_mass: bool
    consistent: bool
    boundary: bool
    warnings: tuple

    @property
    def undetermined_fields(self) -> tuple[str, ...]:
        return tuple(name for name, value in zip(FIELD_NAMES, self.fields) if value is None)

    def summary(self) -> dict:
        """What a model with this payload attached records in ``metrics["payload"]``: the keys an
        identified model's metrics have (``residual_rms`` [N m] per joint, ``condition_number``,
        ``n_samples``) for the payload fit, and the rest of the fit."""
        return {"frame": self.frame, "n_samples": int(self.n_samples), "condition_number": float(self.condition_number),
                "residual_rms": dict(self.residual_after), "residual_rms_before": dict(self.residual_before),
                "parameters": dict(zip(PARAMETER_NAMES, map(float, self.parameters))),
                "parameter_std": dict(zip(PARAMETER_NAMES, map(float, self.parameter_std))),
                "undetermined": list(self.undetermined), "known_mass": self.known_mass,
                "consistent": self.consistent, "warnings": list(self.warnings)}

    def to_file_dict(self, robot_name: str, holdout: dict | None = None, provenance: dict | None = None) -> dict:
        """The payload file (:data:`~robot_dynid.model.payload.PAYLOAD_FILE_KEYS`): undetermined values and
        their standard deviations as null; ``holdout`` (from :func:`holdout_residuals`) beside the training
        residuals."""
        fields, std = list(self.fields), [None if value is None else float(value) for value in self.field_std]
        residual = {"training": {"before": dict(self.residual_before), "after": dict(self.residual_after)}}
        if holdout is not None:
            residual["holdout"] = holdout
        provenance = dict(provenance or {})
        provenance.setdefault("date", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
        provenance.setdefault("robot_dynid_version", __version__)
        return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "units": UNITS, "robot": robot_name,
                "frame": self.frame, "mass": fields[0], "com": fields[1:4], "inertia": fields[4:],
                "std": {"mass": std[0], "com": std[1:4], "inertia": std[4:]},
                "undetermined": list(self.undetermined), "residual": residual,
                "fit": {"n_samples": int(self.n_samples), "condition_number": _finite_or_none(self.condition_number),
                        "known_mass": self.known_mass, "consistent": self.consistent,
                        "on_consistency_boundary": self.boundary,
                        "parameters_about_frame_origin": {name: float(value) for name, value
                                                          in zip(PARAMETER_NAMES, self.parameters)},
                        "parameter_std": {name: _finite_or_none(value) for name, value
                                          in zip(PARAMETER_NAMES, self.parameter_std)}},
                "warnings": list(self.warnings), "provenance": provenance}


def _finite_or_none(value: float):
    return float(value) if math.isfinite(value) else None


def arm_torques(arm: DynamicModel, recording: Recording, start: int = 0, stop: int | None = None) -> np.ndarray:
    """The arm model's torques [N m] (rows start:stop, n) along ``recording`` (drifting friction fed
    the recording's temperatures and elapsed time)."""
    rows = slice(start, recording.n_samples if stop is None else stop)
    return arm.torque(recording.q[rows], recording.qd[rows], recording.qdd[rows],
                      temperature=None if recording.temperature is None else recording.temperature[rows],
                      elapsed=recording.elapsed[rows])


def payload_accumulator(arm: DynamicModel, recordings: Recording | Sequence[Recording], frame: str | None = None,
                        chunk_size: int = DEFAULT_CHUNK_SIZE, accumulator: LeastSquaresAccumulator | None = None,
                        check_torques: bool = True) -> LeastSquaresAccumulator:
    """Per-joint normal equations of ``Y_p phi = tau - tau_arm`` over the recordings.

    Parameters
    ----------
    arm : DynamicModel
        The arm's model; a payload it carries is left out (the arm alone is fixed).
    recordings : Recording or sequence of Recording
        With q [rad], qd [rad/s], qdd [rad/s^2] and tau [N m] of the arm's joints (by name).
    frame : str, optional
        Payload frame; default the last link.
    chunk_size : int
    accumulator : LeastSquaresAccumulator, optional
        Added to (n joints, 10 parameters); a new one by default.
    check_torques : bool
        Check each recording's torques against the description's inertial data with a payload being identified
        at ``frame`` (:class:`~robot_dynid.estimation.torque_scale.UnknownPayload`).

    Returns
    -------
    LeastSquaresAccumulator
        ``torque_square_sum_`` is the arm's residual (before the payload), per joint [N^2 m^2].
    """
    arm = arm.without_payload()
    recordings = [recordings] if isinstance(recordings, Recording) else list(recordings)
    if not recordings:
        raise DataError("no recording to identify the payload from")
    regressor = PayloadRegressor(arm.robot, frame)
    accumulator = LeastSquaresAccumulator(arm.robot.n_joints, 10) if accumulator is None else accumulator
    for recording in recordings:
        recording = prepare_recording(recording, arm.robot, check_torques, UnknownPayload.for_robot(arm.robot, frame))
        for start in range(0, recording.n_samples, chunk_size):
            stop = min(start + chunk_size, recording.n_samples)
            rows = slice(start, stop)
            Y = regressor.compute(recording.q[rows], recording.qd[rows], recording.qdd[rows])
            accumulator.add(Y, recording.tau[rows] - arm_torques(arm, recording, start, stop))
    return accumulator


def _field_values(parameters: np.ndarray) -> np.ndarray:
    """Mass [kg], centre of mass [m] (3), inertia about it [kg m^2] (URDF order, 6) of ``phi`` (10,);
    NaN beyond the mass when it is not > 0."""
    mass = parameters[0]
    if not mass > 0.0:
        return np.concatenate([[mass], np.full(9, np.nan)])
    com = parameters[1:4] / mass
    about_com = inertia_parameter_map(np.eye(3), -com) @ parameters
    return np.concatenate([[mass], com, about_com[4:][list(URDF_INERTIA_ORDER)]])


def _field_jacobian(parameters: np.ndarray, scales: np.ndarray) -> np.ndarray:
    """d fields / d phi (10, 10) by central differences of steps 1e-6 of each parameter's scale."""
    columns = []
    for k in range(10):
        step = np.zeros(10)
        step[k] = 1e-6 * scales[k]
        columns.append((_field_values(parameters + step) - _field_values(parameters - step)) / (2.0 * step[k]))
    return np.column_stack(columns)


def _scaled_eigen(gram: np.ndarray):
    """(scales d, eigenvalues ascending, eigenvectors) of the column-scaled ``gram / (d d^T)``."""
    d = column_scales(np.diag(gram).copy())
    eigenvalues, vectors = np.linalg.eigh(gram / np.outer(d, d))
    return d, eigenvalues, vectors


def solve_payload(accumulator: LeastSquaresAccumulator, robot, settings: PayloadSettings = PayloadSettings(),
                  joint_names: Sequence[str] | None = None) -> PayloadEstimate:
    """The payload from accumulated normal equations (:func:`payload_accumulator`); module docstring.

    Parameters
    ----------
    accumulator : LeastSquaresAccumulator
        n joints, 10 parameters.
    robot : RobotDescription
        For the frame, the joint names and the rated payload.
    settings : PayloadSettings
    joint_names : sequence of str, optional
        Default the robot's.

    Raises
    ------
    IdentificationError
        Too few samples, every torque residual zero, or (consistent) the solver failed.
    SolverUnavailableError
        ``settings.consistent`` without cvxpy.
    """
    if not isinstance(accumulator, LeastSquaresAccumulator) or accumulator.n_parameters != 10:
        raise DynIdError("accumulator must be a LeastSquaresAccumulator of the payload's 10 parameters")
    frame = default_frame(robot) if settings.frame is None else settings.frame
    joints = tuple(robot.joint_names if joint_names is None else joint_names)
    n = accumulator.n_joints
    free = np.arange(1 if settings.mass is not None else 0, 10)
    dof = accumulator.n_samples * n - free.size
    if dof <= 0:
        raise IdentificationError(f"{accumulator.n_samples} samples x {n} joints = {accumulator.n_samples * n} "
                                  f"equations for {free.size} payload parameters; need more")
    gram = accumulator.gram_.sum(axis=0)
    moment = accumulator.moment_.sum(axis=0)
    if settings.mass is not None:          # the mass column's torque, m Y_m, moved to the target side
        moment = moment - gram[:, 0] * settings.mass
    G, b = gram[np.ix_(free, free)], moment[free]
    d, eigenvalues, vectors = _scaled_eigen(G)
    resolved = eigenvalues > RANK_TOLERANCE**2 * max(eigenvalues[-1], 0.0)
    inverse = ((vectors[:, resolved] / eigenvalues[resolved]) @ vectors[:, resolved].T) / np.outer(d, d)
    condition = math.sqrt(eigenvalues[-1] / eigenvalues[0]) if eigenvalues[0] > 0.0 else math.inf
    least_squares = np.zeros(10)
    if settings.mass is not None:
        least_squares[0] = settings.mass
    least_squares[free] = inverse @ b
    mass_scale = settings.mass if settings.mass is not None else max(abs(least_squares[0]), MASS_SCALE_FLOOR)
    L = settings.length_scale
    scales = np.array([mass_scale, *[mass_scale * L] * 3, *[mass_scale * L**2] * 6])
    boundary = False
    if settings.consistent:
        fit = solve_consistent_body(accumulator, mass_scale, L, mass=settings.mass)
        parameters, boundary = fit.parameters.copy(), fit.boundary
        if settings.mass is not None:
            parameters[0] = settings.mass           # exactly, not through the solver's scaling
    else:
        parameters = least_squares
    residual_ss = accumulator.residual_sum_of_squares(parameters)
    covariance = np.zeros((10, 10))
    covariance[np.ix_(free, free)] = float(residual_ss.sum()) / dof * inverse
    unresolved = np.zeros(10, dtype=bool)
    unresolved[free] = np.any(np.abs(vectors[:, ~resolved]) > 1e-4, axis=1)
    std = np.where(unresolved, np.inf, np.sqrt(np.clip(np.diag(covariance), 0.0, None)))
    undetermined_parameters = ~(std <= scales)
    fields = _field_values(parameters)
    jacobian = _field_jacobian(parameters, scales) if parameters[0] > 0.0 else np.full((10, 10), np.nan)
    finite = np.where(np.isfinite(std), covariance, 0.0)
    with np.errstate(invalid="ignore"):
        field_std = np.sqrt(np.clip(np.diag(jacobian @ finite @ jacobian.T), 0.0, None))
    touched = np.abs(jacobian) > 0.0
    field_scales = np.array([mass_scale, L, L, L, *[mass_scale * L**2] * 6])
    undetermined_fields = np.isnan(fields) | np.any(touched[:, undetermined_parameters], axis=1) \
        | ~(field_std <= field_scales)
    undetermined_fields[0] = bool(undetermined_parameters[0])
    if not fields[0] > 0.0:     # without a positive mass, no centre of mass or inertia about it
        undetermined_fields[1:] = True
    field_values = tuple(None if bad else float(value) for bad, value in zip(undetermined_fields, fields))
    field_stds = tuple(None if bad else float(value) for bad, value in zip(undetermined_fields, field_std))
    warnings = []
    payload = None
    names = tuple(name for name, bad in zip(PARAMETER_NAMES, undetermined_parameters) if bad)
    if undetermined_fields.any():
        fields_named = ", ".join(name for name, bad in zip(FIELD_NAMES, undetermined_fields) if bad)
        parameters_named = f" (parameters {', '.join(names)} about the frame origin)" if names else ""
        warnings.append(f"the data do not determine the payload's {fields_named}{parameters_named}: standard "
                        f"deviations above their scales (M = {mass_scale:.3g} kg, L = {L:g} m); reported as "
                        "undetermined (null): excite the wrist more (robot-dynid excitation optimize --payload)"
                        + ("" if settings.mass is not None else " or give --mass"))
    else:
        try:
            payload = Payload(frame, *(fields[0], tuple(fields[1:4]), tuple(fields[4:])))
        except DynIdError as error:
            warnings.append(f"no payload: {error}")
        else:
            warnings += plausibility_warnings(payload, robot.rated_payload, settings.max_com_distance)
    for message in warnings:
        logger.warning(message, extra=RETURNED)
    count = max(accumulator.n_samples, 1)
    return PayloadEstimate(
        frame=frame, parameters=parameters, parameter_std=std, fields=field_values, field_std=field_stds,
        undetermined=names, payload=payload,
        residual_before=dict(zip(joints, map(float, np.sqrt(accumulator.torque_square_sum_ / count)))),
        residual_after=dict(zip(joints, map(float, np.sqrt(residual_ss / count)))),
        condition_number=condition, n_samples=accumulator.n_samples, known_mass=settings.mass is not None,
        consistent=settings.consistent, boundary=boundary, warnings=tuple(warnings))


def identify_payload(arm: DynamicModel, recordings: Recording | Sequence[Recording],
                     settings: PayloadSettings = PayloadSettings()) -> PayloadEstimate:
    """The payload of ``recordings`` with the arm's model ``arm`` fixed (:func:`payload_accumulator`, then
    :func:`solve_payload`)."""
    accumulator = payload_accumulator(arm, recordings, settings.frame, settings.chunk_size)
    return solve_payload(accumulator, arm.robot, settings)


def holdout_residuals(arm: DynamicModel, payload: Payload | None, recordings: Sequence[Recording],
                      check_torques: bool = True) -> dict:
    """``{"before": {joint: RMS}, "after": {joint: RMS}}`` [N m]: the arm alone and the arm with
    ``payload`` (None: "after" is None) on recordings not fitted on (their torques checked as
    :func:`payload_accumulator` checks them, with ``check_torques``)."""
    arm = arm.without_payload()
    loaded = None if payload is None else arm.with_payload(payload)
    unknown = UnknownPayload.for_robot(arm.robot, None if payload is None else payload.frame)
    recordings = [prepare_recording(recording, arm.robot, check_torques, unknown) for recording in recordings]
    tau = np.vstack([recording.tau for recording in recordings])
    before = np.vstack([arm_torques(arm, recording) for recording in recordings]) - tau
    result = {"before": dict(zip(arm.joint_names, map(float, np.sqrt(np.mean(before**2, axis=0))))), "after": None}
    if loaded is not None:
        after = np.vstack([arm_torques(loaded, recording) for recording in recordings]) - tau
        result["after"] = dict(zip(arm.joint_names, map(float, np.sqrt(np.mean(after**2, axis=0)))))
    return result
