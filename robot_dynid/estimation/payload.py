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
- a prior for the inertia (:data:`PayloadSettings.inertia_prior`, default ``"solid"``): the solid body the
  fitted mass and centre of mass imply (:func:`~robot_dynid.model.payload.solid_body_inertia`, a cylinder or
  sphere of ``density``) or inertia values the user gives, about the centre of mass; it enters as a Gaussian
  prior of std :data:`~robot_dynid.model.payload_defaults.PRIOR_STD_FRACTION` of its largest principal moment on each of
  the six inertia parameters about the frame's origin, so a wrist that barely moves leaves the inertia at the
  prior, never undetermined.
  Its weight is stated: per inertia field, the prior's share of the information (``prior_share``: 1 - the
  posterior variance over the prior variance: 0 data only, 1 prior only);
- standard deviations from the covariances of :mod:`~robot_dynid.estimation.covariance` (the robust ``block``
  one reported, the white-noise one beside it; constraints ignored, they can only shrink it), evaluated at the
  unconstrained fit with the prior, and of mass, centre of mass and inertia about it by the delta method;
  intervals use Student's t with the blocks' degrees of freedom;
- differential identification (:func:`differential_recording`): where the same motion was also recorded
  without the load, the unloaded run's residual of the arm's model (aligned in time by the motion) is subtracted
  from the loaded one's, ``y = (tau_L - tau_arm(x_L)) - (tau_U - tau_arm(x_U))``: the arm's model error, the
  same on the same motion, cancels; motions that differ are refused;
- a parameter is *undetermined* when its standard deviation exceeds its scale (``M``, ``M L``,
  ``M L^2``: ``M`` the known mass, else the estimate, at least :data:`MASS_SCALE_FLOOR`; ``L``
  :data:`DEFAULT_LENGTH_SCALE`), i.e. the data say less about it than its size: a recording that
  barely moves the wrist leaves the inertia so. Fields that depend on one (the inertia about the
  centre of mass on ``m``, ``h`` and ``I``; the centre of mass on ``m`` and ``h``), or whose own
  standard deviation exceeds their scale (``M``, ``L``, ``M L^2``: the centre of mass of an almost
  zero mass), are reported as undetermined (None; null in the file), never filled in.

Plausibility (:func:`~robot_dynid.model.payload.plausibility_warnings`): a mass far above the robot's
``rated_payload`` or a centre of mass beyond ``max_com_distance`` [m] is reported as implausible. On recordings
not fitted on, :func:`holdout_residuals` gives each joint's RMS error with and without the payload and names the
joints it makes worse.
"""
from __future__ import annotations

import dataclasses
import datetime
import logging
import math
from typing import NamedTuple, Sequence

import numpy as np

from robot_dynid import __version__, validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation.covariance import (DEFAULT_LEVEL, Uncertainty, fit_uncertainty, interval_quantile,
                                               phase_times)
from robot_dynid.estimation.estimators import RANK_TOLERANCE, LeastSquaresAccumulator, column_scales
from robot_dynid.estimation.identification import RETURNED, prepare_recording
from robot_dynid.estimation.physical_consistency import solve_consistent_body
from robot_dynid.estimation.scalar_minimum import bounded_minimum
from robot_dynid.estimation.torque_scale import UnknownPayload
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.link_inertials import inertial_from_parameters, parameters_from_inertial
from robot_dynid.model.payload import (SCHEMA, SCHEMA_VERSION, UNITS, Payload, PayloadRegressor, default_frame,
                                       plausibility_warnings, solid_body_inertia)
from robot_dynid.model.payload_defaults import DEFAULT_DENSITY, DEFAULT_MAX_COM_DISTANCE, PRIOR_STD_FRACTION
from robot_dynid.model.robot_description import LinkInertial
from robot_dynid.recordings.signal_processing import gap_breaks, interpolate
from robot_dynid.recordings.recording import Recording

__all__ = ["PARAMETER_NAMES", "FIELD_NAMES", "DEFAULT_LENGTH_SCALE", "MASS_SCALE_FLOOR", "DEFAULT_CHUNK_SIZE",
           "MAX_CHUNK_SIZE", "WORSE_MARGIN", "MOTION_TOLERANCE", "INERTIA_PARAMETERS", "PayloadSettings",
           "PayloadEstimate", "arm_torques", "payload_accumulator", "inertia_prior", "solve_payload",
           "identify_payload", "holdout_residuals", "motion_alignment", "differential_recording"]

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
#: [1] a joint is made worse by a payload on held-out data when its RMS error grows by more than this fraction.
WORSE_MARGIN = 0.01
#: [1] the motions of a loaded and an unloaded recording are the same when, aligned, their positions differ by
#: less than this fraction of the motion's spread (RMS over joints and samples).
MOTION_TOLERANCE = 0.02
INERTIA_PARAMETERS = slice(4, 10)


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
    inertia_prior : "solid", tuple of 6 float, or None
        The prior of the inertia about the centre of mass: ``"solid"``, the solid body of ``density`` the fitted
        mass and centre of mass imply; six values [kg m^2] (``ixx, ixy, ixz, iyy, iyz, izz``) the user gives;
        None: no prior (inertia the data do not determine is reported undetermined).
    density : float
        [kg/m^3] of the solid body.
    """

    frame: str | None = None
    mass: float | None = None
    consistent: bool = True
    length_scale: float = DEFAULT_LENGTH_SCALE
    max_com_distance: float = DEFAULT_MAX_COM_DISTANCE
    chunk_size: int = DEFAULT_CHUNK_SIZE
    inertia_prior: object = "solid"
    density: float = DEFAULT_DENSITY

    def __post_init__(self):
        if self.mass is not None:
            validators.positive(self.mass, "payload mass", DataError, "kg")
        validators.positive(self.density, "density", DataError, "kg/m^3")
        if self.inertia_prior is not None and not (isinstance(self.inertia_prior, str)
                                                   and self.inertia_prior == "solid"):
            object.__setattr__(self, "inertia_prior", validators.numbers(
                self.inertia_prior, 6, "inertia prior (ixx, ixy, ixz, iyy, iyz, izz)", DataError, "kg m^2"))
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
    uncertainty : Uncertainty or None
        How ``parameter_std`` were made (:mod:`~robot_dynid.estimation.covariance`), over the free parameters.
    white_field_std : tuple of 10 (float or None)
        The fields' white-noise std, beside ``field_std``.
    inertia_prior : dict or None
        The prior's body (text), the first fit's mass [kg] and centre of mass [m] it was built from, its values
        about the centre of mass [kg m^2], std [kg m^2] and, per inertia parameter, ``prior_share`` [1]; None
        without one.
    differential : dict or None
        The unloaded recording's alignment (:func:`differential_recording`), when the fit was differential.
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
    uncertainty: Uncertainty | None = None
    white_field_std: tuple = (None,) * 10
    inertia_prior: dict | None = None
    differential: dict | None = None

    @property
    def interval_quantile(self) -> float:
        """The quantile ``q`` of the 95 % intervals ``value +- q std`` (t with the blocks' degrees of freedom)."""
        return interval_quantile(DEFAULT_LEVEL, None if self.uncertainty is None else self.uncertainty.interval_dof)

    @property
    def std_method(self) -> str:
        return "white" if self.uncertainty is None else self.uncertainty.std_method

    def uncertainty_record(self) -> dict:
        """How the std were made, the white-noise std beside them and the 95 % intervals (the payload file's
        ``uncertainty``; ``--json``)."""
        record = {"std_method": self.std_method, "description": "" if self.uncertainty is None
                  else self.uncertainty.describe(), "interval_dof": None if self.uncertainty is None
                  else self.uncertainty.interval_dof, "interval_level": 1.0 - DEFAULT_LEVEL,
                  "interval_quantile": self.interval_quantile}
        white = list(self.white_field_std)
        record["white_std"] = {"mass": white[0], "com": white[1:4], "inertia": white[4:]}
        q = self.interval_quantile
        intervals = [None if value is None or std is None else [value - q * std, value + q * std]
                     for value, std in zip(self.fields, self.field_std)]
        record["intervals"] = {"mass": intervals[0], "com": intervals[1:4], "inertia": intervals[4:]}
        return record

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
                "consistent": self.consistent, "std_method": self.std_method,
                "inertia_prior": self.inertia_prior, "differential": self.differential,
                "warnings": list(self.warnings)}

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
                "warnings": list(self.warnings), "provenance": provenance,
                "uncertainty": self.uncertainty_record(), "inertia_prior": self.inertia_prior,
                "differential": self.differential}


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
                        phase=None, check_torques: bool = True) -> LeastSquaresAccumulator:
    """Per-joint normal equations of ``Y_p phi = tau - tau_arm`` over the recordings, in time blocks.

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
    phase : array_like, shape (N,), optional
        [s] the samples' phase (one recording only): their time blocks for the robust covariance; default
        :func:`~robot_dynid.estimation.covariance.phase_times` of each recording (its cycles, or its period).
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
    if phase is not None and len(recordings) != 1:
        raise DataError("give the phase of one recording at a time")
    for recording in recordings:
        recording = prepare_recording(recording, arm.robot, check_torques, UnknownPayload.for_robot(arm.robot, frame))
        phases = phase_times(recording.time, recording.cycle, recording.q) if phase is None else np.asarray(phase)
        for start in range(0, recording.n_samples, chunk_size):
            stop = min(start + chunk_size, recording.n_samples)
            rows = slice(start, stop)
            Y = regressor.compute(recording.q[rows], recording.qd[rows], recording.qdd[rows])
            accumulator.add(Y, recording.tau[rows] - arm_torques(arm, recording, start, stop), phases[rows])
    return accumulator


def _field_values(parameters: np.ndarray) -> np.ndarray:
    """Mass [kg], centre of mass [m] (3), inertia about it [kg m^2] (URDF order, 6) of ``phi`` (10,);
    NaN beyond the mass when it is not > 0."""
    if not parameters[0] > 0.0:
        return np.concatenate([parameters[:1], np.full(9, np.nan)])
    inertial = inertial_from_parameters(parameters, "the payload")
    return np.concatenate([[inertial.mass], inertial.com, inertial.inertia])


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


def _pseudo_inverse(gram: np.ndarray):
    """``(inverse, scales, eigenvectors, resolved, condition number)`` of a Gram matrix (k, k): the inverse over the
    directions (scaled eigenvectors) whose scaled eigenvalue is above ``RANK_TOLERANCE^2`` of the largest
    (``resolved``, a mask)."""
    d, eigenvalues, vectors = _scaled_eigen(gram)
    resolved = eigenvalues > RANK_TOLERANCE**2 * max(eigenvalues[-1], 0.0)
    inverse = ((vectors[:, resolved] / eigenvalues[resolved]) @ vectors[:, resolved].T) / np.outer(d, d)
    condition = math.sqrt(eigenvalues[-1] / eigenvalues[0]) if eigenvalues[0] > 0.0 else math.inf
    return inverse, d, vectors, resolved, condition


def _mass_and_com_seen(parameters: np.ndarray, covariance_free: np.ndarray, free: np.ndarray, scales: np.ndarray,
                       length_scale: float) -> bool:
    """Whether a first fit's mass is positive beyond 3 (white-noise) std and its centre of mass within
    ``length_scale`` [m] (std): what the inertia prior is built from."""
    fields = _field_values(parameters)
    if not fields[0] > 0.0:
        return False
    covariance = np.zeros((10, 10))
    covariance[np.ix_(free, free)] = covariance_free
    jacobian = _field_jacobian(parameters, scales)
    std = np.sqrt(np.clip(np.diag(jacobian @ covariance @ jacobian.T), 0.0, None))
    return bool(fields[0] > 3.0 * std[0] and np.all(std[1:4] <= length_scale))


def inertia_prior(settings: PayloadSettings, mass: float, com) -> dict:
    """The prior of the inertia (module docstring) for a payload of ``mass`` [kg] and centre of mass ``com`` (3,)
    [m]: ``body`` (text), ``values`` about the centre of mass (6,) [kg m^2, URDF order], ``std`` [kg m^2] of each
    inertia parameter, ``parameters`` (6,) [kg m^2]: the prior of the six inertia parameters about the frame's
    origin (``Ixx, Ixy, Iyy, Ixz, Iyz, Izz``, with the parallel-axis terms of ``mass`` and ``com``)."""
    if isinstance(settings.inertia_prior, str):
        values, body = solid_body_inertia(mass, com, settings.density)
    else:
        values, body = np.asarray(settings.inertia_prior, dtype=float), "the inertia values given"
    matrix = np.array([[values[0], values[1], values[2]], [values[1], values[3], values[4]],
                       [values[2], values[4], values[5]]])
    largest = float(np.max(np.abs(np.linalg.eigvalsh(matrix))))
    if not largest > 0.0:
        raise DataError("the inertia prior is zero: give inertia values with a positive principal moment [kg m^2]")
    about_origin = parameters_from_inertial(LinkInertial(float(mass), tuple(map(float, com)), tuple(values)))
    return {"body": body, "values": values, "std": PRIOR_STD_FRACTION * largest,
            "parameters": about_origin[INERTIA_PARAMETERS]}


def _with_prior(accumulator: LeastSquaresAccumulator, prior: dict, noise_variance: float):
    """A copy of ``accumulator`` with the prior as six rows of unit regressor on the inertia parameters, weighted
    ``noise_variance / std^2`` (so that least squares over it is the posterior mode), added to joint 1's sums,
    and the prior's information matrix (10, 10) in the same units."""
    information = np.zeros((10, 10))
    target = np.zeros(10)
    weight = noise_variance / prior["std"] ** 2
    information[INERTIA_PARAMETERS, INERTIA_PARAMETERS] = weight * np.eye(6)
    target[INERTIA_PARAMETERS] = weight * prior["parameters"]
    augmented = LeastSquaresAccumulator(accumulator.n_joints, 10, blocks=False).merge(accumulator)
    augmented.gram_[0] += information
    augmented.moment_[0] += target
    augmented.torque_square_sum_[0] += weight * float(prior["parameters"] @ prior["parameters"])
    return augmented, information, target


def _free_parameters(accumulator: LeastSquaresAccumulator, settings: PayloadSettings):
    """``(free, known, dof)``: the indices of the parameters estimated (all 10, or the 9 beyond a known mass), the
    known values (10,) (the known mass [kg], else zeros) and the equations' degrees of freedom, checked positive."""
    n = accumulator.n_joints
    free = np.arange(1 if settings.mass is not None else 0, 10)
    dof = accumulator.n_samples * n - free.size
    if dof <= 0:
        raise IdentificationError(f"{accumulator.n_samples} samples x {n} joints = {accumulator.n_samples * n} "
                                  f"equations for {free.size} payload parameters; need more")
    known = np.zeros(10)
    if settings.mass is not None:          # the mass column's torque, m Y_m, moved to the target side
        known[0] = settings.mass
    return free, known, dof


def _fit_parameters(equations: LeastSquaresAccumulator, settings: PayloadSettings, free: np.ndarray,
                    known: np.ndarray, mass_scale: float):
    """``(phi (10,), boundary)``: the payload's parameters fitted to ``equations``, physically consistent
    (``settings.consistent``; ``boundary`` whether the fit is on the constraints' boundary) or by least squares
    (``boundary`` False); a known mass kept exactly."""
    if not settings.consistent:
        parameters = known.copy()
        reduced = equations.with_fixed(free, known)
        parameters[free] = _pseudo_inverse(reduced.gram_.sum(axis=0))[0] @ reduced.moment_.sum(axis=0)
        return parameters, False
    body = solve_consistent_body(equations, mass_scale, settings.length_scale, mass=settings.mass)
    parameters = body.parameters.copy()
    if settings.mass is not None:
        parameters[0] = settings.mass           # exactly, not through the solver's scaling
    return parameters, body.boundary


class _Covariances(NamedTuple):
    """The parameters' covariances of the unconstrained fit with the prior (:func:`_parameter_covariances`)."""

    uncertainty: Uncertainty
    covariance: np.ndarray      # (10, 10): the robust one, zero on a known mass
    white: np.ndarray           # (10, 10): the white-noise one
    std: np.ndarray             # (10,): of ``covariance``, inf on the directions the data do not resolve
    variance: float             # the residuals' variance [N^2 m^2]
    bread_inverse: np.ndarray   # (k, k) over the free parameters


def _parameter_covariances(accumulator: LeastSquaresAccumulator, problem: LeastSquaresAccumulator,
                           gram: np.ndarray, moment: np.ndarray, information: np.ndarray, target: np.ndarray,
                           free: np.ndarray, residual_ss: np.ndarray, dof: int) -> _Covariances:
    """The covariances of the unconstrained fit (with the prior, whose information is in the bread, in no block) of
    the free parameters' equations ``problem`` (sums ``gram``, ``moment``), given the final fit's per-joint
    residual sums of squares ``residual_ss`` (n,)."""
    bread = gram + information[np.ix_(free, free)]
    bread_inverse, bread_scales, vectors, resolved, _ = _pseudo_inverse(bread)
    mode = bread_inverse @ (moment + target[free])
    variance = float(residual_ss.sum()) / dof
    active = np.count_nonzero(np.diagonal(problem.gram_, axis1=1, axis2=2) > 0.0, axis=1)
    joint_variances = residual_ss / np.maximum(accumulator.n_samples - active, 1)
    uncertainty = fit_uncertainty(variance * bread_inverse, bread_inverse, bread, mode,
                                  np.ones(accumulator.n_joints), joint_variances, problem.gram_, problem.blocks_,
                                  accumulator.n_samples, resolved=(bread_scales, vectors[:, resolved]))
    covariance, white = np.zeros((10, 10)), np.zeros((10, 10))
    covariance[np.ix_(free, free)] = uncertainty.covariance
    white[np.ix_(free, free)] = variance * bread_inverse
    unresolved = np.zeros(10, dtype=bool)
    unresolved[free] = np.any(np.abs(vectors[:, ~resolved]) > 1e-4, axis=1)
    std = np.where(unresolved, np.inf, np.sqrt(np.clip(np.diag(covariance), 0.0, None)))
    return _Covariances(uncertainty, covariance, white, std, variance, bread_inverse)


def _field_std(parameters: np.ndarray, scales: np.ndarray, covariances: _Covariances):
    """``(fields (10,), jacobian (10, 10), std (10,), white std (10,))``: mass, centre of mass and inertia about it
    (:func:`_field_values`) and their standard deviations by the delta method from the robust and the white-noise
    covariances (the parameters of infinite std left out); NaN jacobian and std without a positive mass."""
    std = covariances.std
    fields = _field_values(parameters)
    jacobian = _field_jacobian(parameters, scales) if parameters[0] > 0.0 else np.full((10, 10), np.nan)
    with np.errstate(invalid="ignore"):
        field_std, white_field_std = (
            np.sqrt(np.clip(np.diag(jacobian @ np.where(np.isfinite(std)[:, None] & np.isfinite(std), matrix, 0.0)
                                    @ jacobian.T), 0.0, None))
            for matrix in (covariances.covariance, covariances.white))
    return fields, jacobian, field_std, white_field_std


def _undetermined_fields(fields: np.ndarray, jacobian: np.ndarray, field_std: np.ndarray,
                         undetermined_parameters: np.ndarray, field_scales: np.ndarray,
                         with_prior: bool) -> np.ndarray:
    """Which fields (10,) are undetermined (module docstring): NaN, depending on an undetermined parameter or (not
    for the inertia under a prior) of a standard deviation above ``field_scales``; the mass as its parameter; all
    but the mass without a positive mass."""
    touched = np.abs(jacobian) > 0.0
    undetermined_fields = np.isnan(fields) | np.any(touched[:, undetermined_parameters], axis=1) \
        | ~(field_std <= field_scales)
    if with_prior:
        undetermined_fields[4:] = np.isnan(fields[4:]) | np.any(touched[4:, undetermined_parameters], axis=1)
    undetermined_fields[0] = bool(undetermined_parameters[0])
    if not fields[0] > 0.0:     # without a positive mass, no centre of mass or inertia about it
        undetermined_fields[1:] = True
    return undetermined_fields


def _reported(values: np.ndarray, undetermined: np.ndarray) -> tuple:
    """``values`` as floats, None where ``undetermined``."""
    return tuple(None if bad else float(value) for bad, value in zip(undetermined, values))


def _prior_record(prior: dict, first_fields: np.ndarray, covariances: _Covariances, free: np.ndarray,
                  noise_variance: float) -> dict:
    """The estimate's record of the inertia prior: the body, the first fit's mass and centre of mass it was built
    from, its values and std, and each inertia parameter's ``prior_share``: the prior's share of its information
    (1 - posterior over prior variance)."""
    variance, bread_inverse = covariances.variance, covariances.bread_inverse
    # the prior's share of each inertia parameter's information: posterior over prior variance
    posterior = np.clip(np.diag(variance * bread_inverse)[np.searchsorted(free, np.arange(4, 10))], 0.0, None)
    share = np.clip(posterior / (variance * prior["std"] ** 2 / noise_variance), 0.0, 1.0)
    return {"body": prior["body"], "from_mass": float(first_fields[0]),
            "from_com": [float(v) for v in first_fields[1:4]],
            "values": [float(v) for v in prior["values"]],
            "std_fraction": PRIOR_STD_FRACTION, "std": float(prior["std"]),
            "prior_share": dict(zip(PARAMETER_NAMES[4:], map(float, share)))}


def _payload_and_warnings(frame: str, fields: np.ndarray, undetermined_fields: np.ndarray, names: tuple,
                          mass_scale: float, settings: PayloadSettings, robot, prior_record: dict | None):
    """``(payload or None, warnings)``: the Payload of ``fields`` where every field is determined, with its
    plausibility warnings; else the warning naming the undetermined fields (and ``names``, the undetermined
    parameters); and the warning of inertia parameters resting mostly on the prior."""
    warnings = []
    payload = None
    if undetermined_fields.any():
        fields_named = ", ".join(name for name, bad in zip(FIELD_NAMES, undetermined_fields) if bad)
        parameters_named = f" (parameters {', '.join(names)} about the frame origin)" if names else ""
        warnings.append(f"the data do not determine the payload's {fields_named}{parameters_named}: standard "
                        f"deviations above their scales (M = {mass_scale:.3g} kg, L = {settings.length_scale:g} m); "
                        "reported as undetermined (null): excite the wrist more (robot-dynid excitation optimize "
                        "--payload)" + ("" if settings.mass is not None else " or give --mass"))
    else:
        try:
            payload = Payload(frame, *(fields[0], tuple(fields[1:4]), tuple(fields[4:])))
        except DynIdError as error:
            warnings.append(f"no payload: {error}")
        else:
            warnings += plausibility_warnings(payload, robot.rated_payload, settings.max_com_distance)
    if prior_record is not None and max(prior_record["prior_share"].values()) > 0.5:
        mostly = [name for name, value in prior_record["prior_share"].items() if value > 0.5]
        warnings.append(f"inertia parameters {', '.join(mostly)} rest mostly on the prior (a {prior_record['body']}; "
                        "prior share above 0.5): the data barely see them")
    return payload, warnings


def solve_payload(accumulator: LeastSquaresAccumulator, robot, settings: PayloadSettings = PayloadSettings(),
                  joint_names: Sequence[str] | None = None, differential: dict | None = None) -> PayloadEstimate:
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
    differential : dict, optional
        The alignment of :func:`differential_recording` when the equations are differential (recorded in the
        estimate).

    Raises
    ------
    IdentificationError
        Too few samples, every torque residual zero, or (consistent) the solver failed.
    SolverUnavailableError
        ``settings.consistent`` without cvxpy, where the least-squares payload is not consistent.
    """
    if not isinstance(accumulator, LeastSquaresAccumulator) or accumulator.n_parameters != 10:
        raise DynIdError("accumulator must be a LeastSquaresAccumulator of the payload's 10 parameters")
    frame = default_frame(robot) if settings.frame is None else settings.frame
    joints = tuple(robot.joint_names if joint_names is None else joint_names)
    free, known, dof = _free_parameters(accumulator, settings)
    problem = accumulator.with_fixed(free, known)
    G, b = problem.gram_.sum(axis=0), problem.moment_.sum(axis=0)
    inverse, _, _, _, condition = _pseudo_inverse(G)
    least_squares = known.copy()
    least_squares[free] = inverse @ b
    mass_scale = settings.mass if settings.mass is not None else max(abs(least_squares[0]), MASS_SCALE_FLOOR)
    L = settings.length_scale
    scales = np.array([mass_scale, *[mass_scale * L] * 3, *[mass_scale * L**2] * 6])

    # a first fit; with the inertia prior its mass and centre of mass imply, a second one
    parameters, boundary = _fit_parameters(accumulator, settings, free, known, mass_scale)
    noise_variance = float(accumulator.residual_sum_of_squares(parameters).sum()) / dof
    prior, information, target = None, np.zeros((10, 10)), np.zeros(10)
    first_fields = _field_values(parameters)
    if settings.inertia_prior is not None and noise_variance > 0.0 and _mass_and_com_seen(
            parameters, noise_variance * inverse, free, scales, L):
        prior = inertia_prior(settings, first_fields[0], first_fields[1:4])
        augmented, information, target = _with_prior(accumulator, prior, noise_variance)
        parameters, boundary = _fit_parameters(augmented, settings, free, known, mass_scale)

    residual_ss = accumulator.residual_sum_of_squares(parameters)
    covariances = _parameter_covariances(accumulator, problem, G, b, information, target, free, residual_ss, dof)
    undetermined_parameters = ~(covariances.std <= scales)
    if prior is not None:       # the prior determines the inertia: its weight is stated, never undetermined
        undetermined_parameters[INERTIA_PARAMETERS] = False
    fields, jacobian, field_std, white_field_std = _field_std(parameters, scales, covariances)
    field_scales = np.array([mass_scale, L, L, L, *[mass_scale * L**2] * 6])
    undetermined_fields = _undetermined_fields(fields, jacobian, field_std, undetermined_parameters, field_scales,
                                               prior is not None)
    prior_record = None if prior is None else _prior_record(prior, first_fields, covariances, free, noise_variance)
    names = tuple(name for name, bad in zip(PARAMETER_NAMES, undetermined_parameters) if bad)
    payload, warnings = _payload_and_warnings(frame, fields, undetermined_fields, names, mass_scale, settings, robot,
                                              prior_record)
    for message in warnings:
        logger.warning(message, extra=RETURNED)
    count = max(accumulator.n_samples, 1)
    return PayloadEstimate(
        frame=frame, parameters=parameters, parameter_std=covariances.std,
        fields=_reported(fields, undetermined_fields), field_std=_reported(field_std, undetermined_fields),
        undetermined=names, payload=payload,
        residual_before=dict(zip(joints, map(float, np.sqrt(accumulator.torque_square_sum_ / count)))),
        residual_after=dict(zip(joints, map(float, np.sqrt(residual_ss / count)))),
        condition_number=condition, n_samples=accumulator.n_samples, known_mass=settings.mass is not None,
        consistent=settings.consistent, boundary=boundary, warnings=tuple(warnings),
        uncertainty=covariances.uncertainty, white_field_std=_reported(white_field_std, undetermined_fields),
        inertia_prior=prior_record, differential=differential)


def identify_payload(arm: DynamicModel, recordings: Recording | Sequence[Recording],
                     settings: PayloadSettings = PayloadSettings()) -> PayloadEstimate:
    """The payload of ``recordings`` with the arm's model ``arm`` fixed (:func:`payload_accumulator`, then
    :func:`solve_payload`)."""
    accumulator = payload_accumulator(arm, recordings, settings.frame, settings.chunk_size)
    return solve_payload(accumulator, arm.robot, settings)


def holdout_residuals(arm: DynamicModel, payload: Payload | None, recordings: Sequence[Recording],
                      check_torques: bool = True) -> dict:
    """Each joint's RMS error [N m] on recordings not fitted on, without and with ``payload``:
    ``{"before": {joint: RMS}, "after": {joint: RMS} or None, "worse": [joints], "warning": text or None}``;
    ``worse``: the joints whose error the payload raises by more than :data:`WORSE_MARGIN` (named in ``warning``).
    Their torques are checked as :func:`payload_accumulator` checks them, with ``check_torques``."""
    arm = arm.without_payload()
    loaded = None if payload is None else arm.with_payload(payload)
    unknown = UnknownPayload.for_robot(arm.robot, None if payload is None else payload.frame)
    recordings = [prepare_recording(recording, arm.robot, check_torques, unknown) for recording in recordings]
    tau = np.vstack([recording.tau for recording in recordings])
    before = np.vstack([arm_torques(arm, recording) for recording in recordings]) - tau
    result = {"before": dict(zip(arm.joint_names, map(float, np.sqrt(np.mean(before**2, axis=0))))), "after": None,
              "worse": [], "warning": None}
    if loaded is not None:
        after = np.vstack([arm_torques(loaded, recording) for recording in recordings]) - tau
        result["after"] = dict(zip(arm.joint_names, map(float, np.sqrt(np.mean(after**2, axis=0)))))
        worse = [joint for joint in arm.joint_names
                 if result["after"][joint] > (1.0 + WORSE_MARGIN) * result["before"][joint]]
        result["worse"] = worse
        if worse:
            changes = ", ".join(f"{joint} {result['before'][joint]:.4g} -> {result['after'][joint]:.4g} N m"
                                for joint in worse)
            result["warning"] = (f"on the held-out recordings the payload makes joint(s) {', '.join(worse)} worse "
                                 f"(RMS error without -> with it: {changes}): the payload, or the arm's model under "
                                 "it, is wrong there")
            logger.warning(result["warning"], extra=RETURNED)
    return result


def motion_alignment(loaded: Recording, unloaded: Recording, tolerance: float = MOTION_TOLERANCE) -> dict:
    """The time shift that puts ``unloaded``'s motion onto ``loaded``'s, checked.

    The positions of both (on a 200 Hz grid) are compared at every shift that overlaps at least half the loaded run
    (mean square difference over the overlap, by FFT); of the shifts where they match (a periodic motion matches
    at several), the one overlapping most, else the best one, is refined between grid points.
    The motions are the same when, so aligned, the positions differ by less than ``tolerance`` of the loaded
    motion's spread (RMS over joints and samples).

    Returns
    -------
    dict
        ``shift`` [s] (``t_unloaded = t_loaded + shift``), ``position_mismatch`` [rad] (RMS), ``relative_mismatch``
        [1], ``worst_joint`` and its RMS mismatch [rad].

    Raises
    ------
    DataError
        The motions differ (naming the mismatch and the worst joint), or overlap by less than half the loaded run.
    """
    joints = loaded.joint_names
    unloaded = unloaded.reorder(joints)
    rate = 200.0
    grids = [recording.time[0] + np.arange(int((recording.time[-1] - recording.time[0]) * rate) + 1) / rate
             for recording in (loaded, unloaded)]
    a, b = (interpolate(grid, recording.time, recording.q, "hold")
            for grid, recording in zip(grids, (loaded, unloaded)))
    centre = a.mean(axis=0)
    spread = float(np.sqrt(np.mean((a - centre) ** 2)))
    if not spread > 0.0:
        raise DataError(f"{loaded.source}: the loaded recording does not move: no motion to align the unloaded one to")
    a, b = a - centre, b - centre
    n_a, n_b = a.shape[0], b.shape[0]
    size = 1 << int(n_a + n_b).bit_length()
    # sum_t a_t . b_(t + k) for every k = -(n_a - 1) .. n_b - 1, then the mean square difference over the overlap
    products = np.fft.irfft(np.sum(np.conj(np.fft.rfft(a, size, axis=0)) * np.fft.rfft(b, size, axis=0), axis=1),
                            size)
    lags = np.arange(-(n_a - 1), n_b)
    products = products[lags % size]
    square_a, square_b = np.r_[0.0, np.cumsum(np.sum(a**2, axis=1))], np.r_[0.0, np.cumsum(np.sum(b**2, axis=1))]
    first_a, last_a = np.maximum(0, -lags), np.minimum(n_a, n_b - lags)
    overlap = last_a - first_a
    sums = (square_a[last_a] - square_a[first_a]) + (square_b[last_a + lags] - square_b[first_a + lags])
    with np.errstate(divide="ignore", invalid="ignore"):
        difference = np.where(overlap >= 0.5 * n_a, (sums - 2.0 * products) / overlap, np.inf)
    if not np.isfinite(difference).any():
        raise DataError(f"{unloaded.source}: shorter than half the loaded recording {loaded.source}: the unloaded run "
                        "must cover the loaded run's motion")
    # a periodic motion matches at several shifts: of those within the tolerance, the one overlapping most
    matching = np.flatnonzero(difference <= (0.5 * tolerance * spread) ** 2)
    index = matching[np.lexsort((np.abs(lags[matching]), -overlap[matching]))[0]] if matching.size \
        else int(np.argmin(difference))
    best = lags[index] / rate + grids[1][0] - grids[0][0]

    def mismatch(shift: float):
        inside = (loaded.time + shift >= unloaded.time[0]) & (loaded.time + shift <= unloaded.time[-1])
        aligned = interpolate(loaded.time[inside] + shift, unloaded.time, unloaded.q, "hold")
        return np.sqrt(np.mean((aligned - loaded.q[inside]) ** 2, axis=0)), inside

    shift = bounded_minimum(lambda value: float(np.sum(mismatch(value)[0] ** 2)), best - 2.0 / rate,
                            best + 2.0 / rate, xatol=1e-5)
    per_joint, _ = mismatch(shift)
    total = float(np.sqrt(np.mean(per_joint**2)))
    worst = int(np.argmax(per_joint))
    record = {"shift": shift, "position_mismatch": total, "relative_mismatch": total / spread,
              "worst_joint": joints[worst], "worst_joint_mismatch": float(per_joint[worst])}
    if not total <= tolerance * spread:
        raise DataError(f"{unloaded.source} does not follow the motion of {loaded.source}: aligned at best (unloaded "
                        f"stamps {shift:+.4g} s), the positions differ by {total:.3g} rad RMS, {total / spread:.1%} of "
                        f"the motion's spread (at most {tolerance:.0%}; worst joint {joints[worst]}: "
                        f"{per_joint[worst]:.3g} rad); record the unloaded run with the same trajectory")
    return record


def differential_recording(arm: DynamicModel, loaded: Recording, unloaded: Recording,
                           tolerance: float = MOTION_TOLERANCE) -> tuple[Recording, dict]:
    """The loaded recording with its torques made differential (module docstring), and what the alignment found.

    ``unloaded`` (the same motion without the load) is aligned by :func:`motion_alignment`; its residual of the arm's
    model, ``tau_U - tau_arm(x_U)``, interpolated at the loaded samples' aligned stamps (within its runs between
    gaps), is subtracted from the loaded torques: :func:`payload_accumulator` then fits
    ``(tau_L - tau_arm(x_L)) - (tau_U - tau_arm(x_U))``. Loaded samples outside the unloaded run are left out.

    Returns
    -------
    recording : Recording
        The loaded samples used, torques differential [N m].
    record : dict
        :func:`motion_alignment`'s, with ``unloaded`` (its source), ``samples`` used and ``left_out``.

    Raises
    ------
    DataError
        As :func:`motion_alignment`, or no loaded sample within the unloaded run.
    """
    arm = arm.without_payload()
    loaded = prepare_recording(loaded, arm.robot)
    unloaded = prepare_recording(unloaded, arm.robot)
    record = motion_alignment(loaded, unloaded, tolerance)
    stamps = loaded.time + record["shift"]
    inside = np.zeros(loaded.n_samples, dtype=bool)
    breaks = np.r_[0, gap_breaks(unloaded.time), unloaded.n_samples]
    for first, stop in zip(breaks[:-1], breaks[1:]):
        inside |= (stamps >= unloaded.time[first]) & (stamps <= unloaded.time[stop - 1])
    if not inside.any():
        raise DataError(f"{loaded.source}: no sample falls within the unloaded run {unloaded.source} once aligned")
    residual = unloaded.tau - arm_torques(arm, unloaded)
    rows = np.flatnonzero(inside)
    used = loaded.take(rows)
    differential = used.tau - interpolate(stamps[rows], unloaded.time, residual, "hold")
    used = dataclasses.replace(used, tau=differential)
    record = {"unloaded": unloaded.source, **record, "samples": int(rows.size),
              "left_out": int(loaded.n_samples - rows.size)}
    logger.info("differential payload: %s aligned to %s (shift %+.4g s, positions %.2g rad RMS apart); %d samples",
                unloaded.source, loaded.source, record["shift"], record["position_mismatch"], rows.size)
    return used, record
