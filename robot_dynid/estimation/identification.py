"""Identification pipeline: recordings and a model structure in, a :class:`DynamicModel` out.

Shared by the ``robot-dynid identify`` command, the identifier node and the fleet. The recordings' equations,
and every pass over them (the normal equations, cross-validation folds, QR factors, exact residuals), are
:class:`~robot_dynid.estimation.normal_equations.RecordingEquations` (:func:`recording_equations` makes them for
the settings); the accumulated normal equations are solved here (:func:`model_from_accumulator`), so memory is
bounded whatever the recordings' length. Several recordings (files) are stacked: their equations are added up,
each recording keeping its own time base. Options that real data need (their equations:
:mod:`~robot_dynid.estimation.normal_equations`):

- ``lowpass`` [Hz]: parallel filtering (Gautier) of the torques and every column of the regressor alike.
- ``file_offsets``: a torque offset per recording and joint [N m] (a torque sensor re-zeroed between
  recordings), estimated with the model and reported in ``metrics["file_offsets"]``, not part of the model a
  controller evaluates.
- ``min_speed`` [rad/s]: slower joint equations left out (stiction and reversals).

Physical consistency: with ``consistency`` set, the standard parameters are estimated from the
same accumulated equations under the constraints of :mod:`robot_dynid.estimation.physical_consistency`
(every link's pseudo-inertia positive semidefinite, friction and armature non-negative, optional
bounds), the prior being the robot description's inertial data when it has them; the model then
carries those standard parameters and their base projection. Every model, consistent or not, is
checked for plausibility (:func:`~robot_dynid.estimation.physical_consistency.check_plausibility`) and the
result stored in ``metrics["plausibility"]``.
"""
from __future__ import annotations

import dataclasses
import datetime
import functools
import logging
import math
import warnings
from typing import Callable, Mapping, Sequence

import numpy as np

from robot_dynid import __version__, validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation import normal_equations
from robot_dynid.estimation.consistency_check import Folds, compare_with_least_squares
from robot_dynid.estimation.estimators import (BATCH_METHODS, ESTIMATORS, LeastSquaresAccumulator,
                                               RecursiveLeastSquares, build_estimator)
from robot_dynid.estimation.identification_options import DEFAULT_PRIOR_WEIGHT, OPTIONS, PRIOR_MODES
from robot_dynid.estimation.metrics import torque_effects
from robot_dynid.estimation.normal_equations import RecordingEquations
from robot_dynid.estimation.physical_consistency import (DEFAULT_DELTA, GRAM_CONDITION_LIMIT, ConsistencyConstraints,
                                                         ConsistentSolver, ParameterLayout, check_plausibility,
                                                         load_constraints, scaled_gram_condition)
from robot_dynid.estimation.progress import Progress, no_progress
from robot_dynid.estimation.torque_scale import UnknownPayload, check_torque_scale
from robot_dynid.model.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.model.friction import FrictionModel, friction_model
from robot_dynid.model.link_inertials import prior_parameters
from robot_dynid.model.payload import Payload
from robot_dynid.model.regressor import FRICTION_SIDES, Regressor
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.recording import DropCounter, Dropped, Recording, dropped_to_dict
from robot_dynid.stored_columns import column_extremes

__all__ = ["RETURNED", "POORLY_EXCITED_TORQUE_FRACTION", "ConsistencySettings", "IdentificationSettings",
           "settings_from_options", "RESIDUAL_RESOLUTION", "prepare_recording", "recording_equations", "identify",
           "conditioning_record", "identified_range", "model_from_accumulator", "poorly_excited_parameters",
           "plausibility", "check_finite_estimate", "residual_statistics"]

logger = logging.getLogger(__name__)
RETURNED = {"returned": True}
"""``extra`` of a warning that is logged and also returned in the result (a model's ``metrics["warnings"]``, a
payload estimate's ``warnings``): the command line prints it with the result, not a second time from the log."""

POORLY_EXCITED_TORQUE_FRACTION = 0.1
"""[1] default of :attr:`IdentificationSettings.poorly_excited_torque_fraction`: a parameter whose one-std error
moves a joint's torque by 10 % of its RMS is poorly excited."""


@dataclasses.dataclass(frozen=True)
class ConsistencySettings:
    """How a physically consistent fit is made (:func:`~robot_dynid.estimation.physical_consistency.solve_consistent`).

    Attributes
    ----------
    use_prior : bool
        Take the robot description's inertial data (URDF ``<inertial>``, DH ``inertial:``) as the
        prior when it has them; False: no prior (a small regulariser makes the solution unique).
    mode : {"two_step", "regularised"}
        How the prior enters: the fit closest to it among those within ``1 + delta`` of the best
        consistent residual, or a Gaussian prior of weight ``prior_weight``.
    delta : float
        [1] tolerance of the two-step mode.
    prior_weight : float or "auto"
        [1] weight of the regularised mode (in link scales); ``"auto"``: the candidate of
        :data:`~robot_dynid.estimation.consistency_check.PRIOR_WEIGHT_CANDIDATES` with the least
        cross-validated error (:func:`identify` only: it needs the recordings' folds).
    constraints : ConsistencyConstraints or None
        Margin, mass ranges, centre-of-mass boxes, signs; None: the defaults.
    check : bool
        Compare the fit's cross-validated error with plain least squares' on the same folds
        (:mod:`~robot_dynid.estimation.consistency_check`; :func:`identify` only) and warn, naming the
        joints, where it is worse by more than :data:`~robot_dynid.estimation.consistency_check.LEAST_SQUARES_MARGIN`.
    """

    use_prior: bool = True
    mode: str = "two_step"
    delta: float = DEFAULT_DELTA
    prior_weight: float | str = DEFAULT_PRIOR_WEIGHT
    constraints: ConsistencyConstraints | None = None
    check: bool = True

    def __post_init__(self):
        if self.mode not in PRIOR_MODES:
            raise DynIdError(f"prior mode must be one of {list(PRIOR_MODES)}, got {self.mode!r}")
        OPTIONS["prior_weight"].check(self.prior_weight)


@dataclasses.dataclass(frozen=True)
class IdentificationSettings:
    """What to identify and how.

    Attributes
    ----------
    friction : FrictionModel
    armature : bool
        Add a rotor-inertia column ``Ia_j qdd_j`` per joint.
    offset : bool
        Add a constant torque offset per joint [N m].
    method : str
        A registered estimator (:data:`robot_dynid.estimation.estimators.ESTIMATORS`: ols, wls, rls).
    forgetting : float
        RLS forgetting factor mu in (0, 1]; 1 weighs all samples equally.
    chunk_size : int
        Samples per regressor evaluation; bounds memory to about ``chunk_size * n * p * 8`` bytes.
    poorly_excited_torque_fraction : float
        [1] a base parameter is poorly excited when a one-std error of it moves some joint's torque,
        RMS over the robot's range of motion, by more than this fraction of that joint's RMS measured
        torque (:func:`~robot_dynid.estimation.metrics.torque_effects`): a warning naming it and the
        joint, logged and stored in the model's metrics; inf: never. Not ``std / |value|``, which
        flags every parameter whose value is near zero however exactly it is known.
    lowpass : float or None
        Cutoff [Hz] of the parallel filtering of torques and regressor (module docstring).
    file_offsets : bool
        Estimate a torque offset per recording and joint [N m] (module docstring).
    check_torque_scale : bool
        Refuse recordings whose torques are off the description's inertial data by more than 3x
        (:func:`prepare_recording`).
    consistency : ConsistencySettings or None
        Estimate physically consistent standard parameters (not with ``method="rls"``).
    friction_side : {"joint", "motor", "both"} or None
        Where friction and armature act (:class:`~robot_dynid.model.regressor.Regressor`); None: on the
        motors when the robot has a transmission, else on the joints.
    min_speed : float
        [rad/s; m/s for a prismatic joint] joint j's equation of a sample where ``|qd_j|`` is below it is left
        out of the fit (:func:`~robot_dynid.estimation.normal_equations.slow_equations`: stiction and
        reversals); 0 keeps every equation.
    """

    friction: FrictionModel = dataclasses.field(default_factory=FrictionModel)
    armature: bool = False
    offset: bool = False
    method: str = "ols"
    forgetting: float = 1.0
    chunk_size: int = 5000
    poorly_excited_torque_fraction: float = POORLY_EXCITED_TORQUE_FRACTION
    lowpass: float | None = None
    file_offsets: bool = False
    check_torque_scale: bool = True
    consistency: ConsistencySettings | None = None
    friction_side: str | None = None
    min_speed: float = 0.0

    def __post_init__(self):
        if not (math.isfinite(self.min_speed) and self.min_speed >= 0.0):
            raise DynIdError(f"min_speed must be a finite speed >= 0 [rad/s], got {self.min_speed!r}")
        if not self.poorly_excited_torque_fraction > 0.0:
            raise DynIdError("poorly_excited_torque_fraction must be > 0 [1] (inf: never flag), got "
                             f"{self.poorly_excited_torque_fraction!r}")
        if self.friction_side is not None and self.friction_side not in FRICTION_SIDES:
            raise DynIdError(f"friction_side must be one of {list(FRICTION_SIDES)} or None, got {self.friction_side!r}")
        OPTIONS["method"].check(self.method)
        OPTIONS["forgetting"].check(self.forgetting)
        validators.count(self.chunk_size, "chunk_size", DynIdError)
        if self.lowpass is not None:
            validators.positive(self.lowpass, "lowpass", DynIdError, "Hz")
        if self.consistency is not None and "consistent" not in ESTIMATORS[self.method].options:
            raise DynIdError("a physically consistent fit solves the accumulated equations "
                             f"({', '.join(BATCH_METHODS)}), not {self.method}")
        if self.file_offsets and self.offset:
            raise DynIdError("give a torque offset per joint (offset) or per recording and joint (file_offsets), "
                             "not both: together they cannot be told apart")

    def regressor(self, robot: RobotDescription) -> Regressor:
        return Regressor(robot, self.friction, armature=self.armature, offset=self.offset,
                         friction_side=self.friction_side)


def _below_velocity_limits(robot: RobotDescription, field: str, speed: float, consequence: str) -> None:
    """DynIdError naming the joints whose velocity limit ``speed`` [rad/s] reaches: ``consequence``, then 'below
    the slowest joint's limit'."""
    velocity_limits = robot.limit_arrays().velocity
    above = np.flatnonzero(speed >= velocity_limits)
    if above.size:
        joints = ", ".join(f"{robot.joint_names[j]} ({velocity_limits[j]:g} rad/s)" for j in above)
        raise DynIdError(f"{field} = {speed:g} rad/s is at or above the velocity limit of joint(s) {joints}: "
                         f"{consequence} below the slowest joint's limit")


def settings_from_options(options: Mapping, robot: RobotDescription,
                          label: Callable[[str], str] = lambda option: option) -> IdentificationSettings:
    """The identification settings of a mapping of options
    (:data:`~robot_dynid.estimation.identification_options.OPTIONS`), as the command line and the identifier node
    give them; options not given take their defaults.

    Each value is checked against its option's type, choices or interval
    (:meth:`~robot_dynid.estimation.identification_options.Option.check`); then against the robot and the other
    options: ``dead_band`` [rad/s] must be below every joint's velocity limit (at or above it, a joint's friction
    columns are zero over its whole range of motion: its friction is not identified at all), so must
    ``min_speed`` (at or above it, every equation of a joint is left out), ``friction_side``
    motor or both needs a transmission, ``prior_weight`` the regularised prior mode. ``label(option)`` names an
    option in messages as the caller knows it (``--dead-band``, ``parameter dead_band``).

    Raises
    ------
    DynIdError
        An unknown option, or a value the settings refuse (naming it, and the joint for ``dead_band``).
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise DynIdError(f"unknown identification option(s) {unknown}; known: {sorted(OPTIONS)}")
    values = {name: option.default for name, option in OPTIONS.items()}
    values.update({name: OPTIONS[name].check(value, label(name)) for name, value in options.items()})
    dead_band = values["dead_band"]
    _below_velocity_limits(robot, label("dead_band"), dead_band, "it would zero every friction column of such a "
                           "joint over its whole speed range (no friction identified); give a dead band")
    _below_velocity_limits(robot, label("min_speed"), values["min_speed"], "it would leave out every equation of "
                           "such a joint (nothing identified from it); give a min_speed")
    friction = friction_model(values["friction"], drift=values["friction_drift"], dead_band=dead_band,
                              sign_sharpness=values["sign_sharpness"], stribeck_velocity=values["stribeck_velocity"],
                              reversal_lead=values["reversal_lead"])
    side = values["friction_side"]
    settings = IdentificationSettings(friction=friction, armature=values["armature"],
                                      check_torque_scale=values["check_torque_scale"], offset=values["offset"],
                                      method=values["method"], forgetting=values["forgetting"],
                                      lowpass=values["lowpass"] or None, file_offsets=values["file_offsets"],
                                      friction_side=None if side == "auto" else side, min_speed=values["min_speed"])
    if settings.friction_side not in (None, "joint") and robot.transmission is None:
        raise DynIdError(f"{label('friction_side')} {side!r} needs motors: robot {robot.name!r} has no transmission "
                         "(add transmission.motor_from_joint to its description, see docs/robot_description.md)")
    if not values["consistent"]:
        if values["bounds_file"]:
            raise DynIdError(f"{label('bounds_file')} bounds the consistent fit: give {label('consistent')} with it "
                             "(without it the bounds would be ignored)")
        return settings
    mode, weight = values["prior_mode"], values["prior_weight"]
    if weight is not None and mode != "regularised":
        raise DynIdError(f"{label('prior_weight')} weighs the regularised mode's Gaussian prior: give "
                         f"{label('prior_mode')} regularised with it (the prior mode is {mode})")
    constraints = None
    if values["bounds_file"]:
        try:
            constraints = load_constraints(values["bounds_file"],
                                           ParameterLayout.from_regressor(settings.regressor(robot)))
        except DynIdError as error:
            raise type(error)(f"{label('bounds_file')}: {error}") from None
    return dataclasses.replace(settings, consistency=ConsistencySettings(
        use_prior=mode != "none", mode="two_step" if mode == "none" else mode, constraints=constraints,
        prior_weight=DEFAULT_PRIOR_WEIGHT if weight is None else weight))


#: RSD below which the residual of the accumulated normal equations (``c - 2 theta^T b + theta^T G theta``,
#: exact to about 1e-15 of the torques' sum of squares) is unresolved: :func:`identify` then computes it
#: again from the regressor (noise-free data; real data never come near).
RESIDUAL_RESOLUTION = 1e-4


def prepare_recording(recording: Recording, robot: RobotDescription, check_torques: bool = True,
                      payload: Payload | UnknownPayload | None = None) -> Recording:
    """Match joints to the robot by name and check the fields identification needs.

    With ``check_torques``, the torques are compared with the gravity torque of the robot description's
    inertial data (and of ``payload``: known, or being identified), where it has them
    (:func:`~robot_dynid.estimation.torque_scale.check_torque_scale`: a DataError naming the joint for motor
    currents passed as torques, a gear ratio applied twice).
    """
    recording = recording.reorder(robot.joint_names)
    if recording.tau is None:
        raise DataError(f"{recording.source}: identification needs torques tau [N m], and the recording has none "
                        "(a bag: the effort of its joint states, or a topic given as effort or current topic; a CSV: "
                        "tau columns)")
    missing = [name for name in ("qd", "qdd") if getattr(recording, name) is None]
    if missing:
        raise DataError(
            f"{recording.source}: identification needs {', '.join(missing)}; "
            "give velocities/accelerations or derive them (robot_dynid.recordings.signal_processing.differentiate)"
        )
    if recording.n_samples == 0:
        raise DataError(f"{recording.source}: no samples left to identify from")
    if check_torques:
        check_torque_scale(recording, robot, payload)
    return recording


def identify(
    recordings: Recording | Sequence[Recording],
    robot: RobotDescription,
    settings: IdentificationSettings = IdentificationSettings(),
    base: BaseParameters | None = None,
    provenance: dict | None = None,
    progress: Progress = no_progress,
) -> DynamicModel:
    """Identify the base parameters of ``robot`` from one recording or several, stacked.

    Parameters
    ----------
    recordings : Recording or sequence of Recording
        Samples with q [rad], qd [rad/s], qdd [rad/s^2] and tau [N m]; joints are matched by
        name, extra joints are ignored. Select stages / cycles before calling
        (:meth:`Recording.select`). Each recording keeps its own time base (friction drift with
        time, low-pass filtering, ``file_offsets``).
    robot : RobotDescription
    settings : IdentificationSettings
    base : BaseParameters, optional
        Reuse a base-parameter set (e.g. from a model in use); computed from random states otherwise.
    provenance : dict, optional
        Stored in the model (data source, segments, ...); date and version are added.
    progress : callable
        Wraps the loop that takes seconds: the consistent fit's search of the prior weight
        (:data:`~robot_dynid.estimation.progress.Progress`).

    Raises
    ------
    IdentificationError
        When the data leave base parameters unidentifiable (named in the message).
    """
    recordings = [recordings] if isinstance(recordings, Recording) else list(recordings)
    if not recordings:
        raise DataError("no recording to identify from")
    recordings = [prepare_recording(recording, robot, settings.check_torque_scale) for recording in recordings]
    regressor = settings.regressor(robot)
    if base is None:
        base = compute_base_parameters(regressor)
    offsets = _file_offset_names(recordings, robot) if settings.file_offsets else []
    equations = recording_equations(recordings, regressor, base, settings, offsets=bool(offsets))
    accumulator, rls, dropped = _accumulated(equations, settings)
    _check_slow_equations(accumulator, robot, settings)
    model = model_from_accumulator(accumulator, robot, settings, base, rls=rls, dropped=dropped.counts,
                                   provenance=_data_provenance(recordings, settings, provenance),
                                   nuisance_names=offsets, equations=equations, progress=progress)
    nuisance = model.metrics.pop("nuisance", {})
    if min(model.metrics["rsd"].values()) < RESIDUAL_RESOLUTION:
        _residuals_from_equations(model, accumulator, equations, offsets, nuisance)
    if offsets:
        model.metrics["file_offsets"] = {
            recording.source: {joint: nuisance[f"offset{j + 1}@{index}"] for j, joint in enumerate(robot.joint_names)}
            for index, recording in enumerate(recordings)}
    model.metrics["identified_range"] = identified_range(recordings)
    return model


def recording_equations(recordings: Sequence[Recording], regressor: Regressor, base: BaseParameters,
                        settings: IdentificationSettings, offsets: bool = False) -> RecordingEquations:
    """The equations of ``recordings`` as ``settings`` make them (chunk size, low-pass, minimum speed, a batch
    method or not); with ``offsets``, a torque offset column per recording and joint."""
    return RecordingEquations(recordings, regressor, base, chunk_size=settings.chunk_size, lowpass=settings.lowpass,
                              min_speed=settings.min_speed, offsets=offsets, batch=ESTIMATORS[settings.method].batch)


def _accumulated(equations: RecordingEquations, settings: IdentificationSettings):
    """(accumulator, RLS estimator or None, drop counter) of ``equations``: their normal equations, the RLS run
    through the same equations for a recursive method, the samples the recordings dropped before (and the
    filter drops)."""
    estimator = build_estimator(settings.method, equations.n_parameters, forgetting=settings.forgetting)
    rls = None if estimator.batch else estimator
    dropped = DropCounter()
    for recording in equations.recordings:
        dropped.merge(recording.dropped)
    return equations.accumulate(rls=rls, dropped=dropped), rls, dropped


def _data_provenance(recordings, settings, provenance) -> dict:
    """A copy of ``provenance`` with the recordings' source(s) and their conditioning record where it does not
    give them."""
    provenance = dict(provenance or {})
    provenance.setdefault("data_source", [recording.source for recording in recordings]
                          if len(recordings) > 1 else recordings[0].source)
    conditioning = conditioning_record(recordings, settings)
    if conditioning is not None:
        provenance.setdefault("conditioning", conditioning)
    return provenance


def _residuals_from_equations(model, accumulator, equations: RecordingEquations, offsets, nuisance) -> None:
    """The model's per-joint residual RMS [N m] and RSD [1] summed again from the equations: below
    :data:`RESIDUAL_RESOLUTION` those from the normal equations are rounding error."""
    theta = np.concatenate([model.values, [nuisance[name] for name in offsets]])
    residual_ss = equations.residual_sum_of_squares(theta)
    with np.errstate(divide="ignore", invalid="ignore"):
        for key, value in (("residual_rms", np.sqrt(residual_ss / accumulator.equations_)),
                           ("rsd", np.sqrt(residual_ss / accumulator.torque_square_sum_))):
            model.metrics[key] = dict(zip(model.joint_names, map(float, value)))


def _check_slow_equations(accumulator: LeastSquaresAccumulator, robot: RobotDescription,
                          settings: IdentificationSettings) -> None:
    """DataError naming the joints whose every equation ``settings.min_speed`` left out."""
    empty = [name for name, kept in zip(robot.joint_names, accumulator.equations_) if kept == 0]
    if empty and accumulator.n_samples:
        raise DataError(f"min_speed = {settings.min_speed:g} rad/s leaves out every sample of joint(s) {empty}: "
                        "they never move that fast in the data; give a lower min_speed (0 keeps every equation)")


def conditioning_record(recordings: Sequence[Recording], settings: IdentificationSettings) -> dict | None:
    """What a model's provenance keeps of how its data were conditioned: ``settings`` (the
    :class:`~robot_dynid.recordings.conditioning.Conditioning` of the first recording, the low-pass of
    ``settings``), and per recording what it gave (derivative fit, fraction at rest); None when the
    recordings say nothing of it (built from arrays)."""
    conditioned = [recording for recording in recordings if recording.conditioning.get("settings")]
    if not conditioned:
        return None
    record = dict(conditioned[0].conditioning["settings"])
    record["lowpass_hz"] = settings.lowpass
    return {"settings": record,
            "recordings": {recording.source: {key: value for key, value in recording.conditioning.items()
                                              if key != "settings"} for recording in conditioned}}


def identified_range(recordings: Sequence[Recording]) -> dict:
    """Largest ``|qd|`` [rad/s] and ``|qdd|`` [rad/s^2] per joint over the recordings: how far the model may
    be trusted (friction polynomials and stiffness-like terms extrapolate badly)."""
    joints = recordings[0].joint_names
    ranges = {}
    for field, key in (("max_speed", "qd"), ("max_acceleration", "qdd")):
        lows, highs = zip(*(column_extremes(getattr(recording, key)) for recording in recordings))
        largest = np.maximum(np.max(np.abs(lows), axis=0), np.max(np.abs(highs), axis=0))
        ranges[field] = {joint: float(largest[j]) for j, joint in enumerate(joints)}
    return ranges


def _file_offset_names(recordings, robot) -> list[str]:
    return [f"offset{j + 1}@{index}" for index in range(len(recordings)) for j in range(robot.n_joints)]


def model_from_accumulator(
    accumulator: LeastSquaresAccumulator,
    robot: RobotDescription,
    settings: IdentificationSettings,
    base: BaseParameters,
    rls: RecursiveLeastSquares | None = None,
    dropped: dict[str, Dropped] | None = None,
    provenance: dict | None = None,
    nuisance_names: Sequence[str] = (),
    equations: RecordingEquations | None = None,
    progress: Progress = no_progress,
) -> DynamicModel:
    """Solve accumulated normal equations (or take an RLS estimate) into a :class:`DynamicModel`.

    The batch solve always runs: it gives the noise level, condition number, the covariances
    (:mod:`~robot_dynid.estimation.covariance`: the model's std is the robust ``block`` one where the
    recordings make enough time blocks, else ``per_joint``; ``white_std`` beside it; ``metrics["uncertainty"]``
    says which and why) and, for OLS/WLS, the estimate. With ``rls`` the estimate is the RLS state, its
    white std ``sqrt(diag(P) sigma^2)`` (with mu = 1, P approximates (W^T W)^-1) widened per parameter by the
    batch fit's ratio of reported to white std. A consistent fit's std is the least-squares fit's, widened by
    the ratio of the consistent fit's white std to least squares' where the constraints or the prior cost
    residual (they are otherwise ignored: they can only shrink it). Metrics: per-joint RMS residual [N m] and RSD,
    noise std [N m], condition number, and the poorly excited base parameters
    (:func:`poorly_excited_parameters` with ``settings.poorly_excited_torque_fraction``, also logged as a
    warning); the samples left out
    before, by reason (``dropped``). The accumulator's parameters are the base parameters followed
    by ``nuisance_names`` (e.g. per-recording torque offsets), whose estimates go to
    ``metrics["nuisance"]`` (name -> value), not into the model. ``equations`` (those accumulated, when the caller
    has them) serve a consistent fit's second looks at the data: the cross-validation folds of
    ``prior_weight="auto"`` and of its comparison with plain least squares
    (:mod:`~robot_dynid.estimation.consistency_check`), and the QR factors it is compressed from when its scaled
    Gram matrix is beyond :data:`~robot_dynid.estimation.physical_consistency.GRAM_CONDITION_LIMIT`; without them
    such a fit is compressed from the Gram matrices all the same, with a warning.

    Raises
    ------
    IdentificationError
        A value or standard deviation is not finite (naming the parameter and the likely cause):
        no model with one is ever made.
    """
    names = list(base.names) + list(nuisance_names)
    # the batch solve gives the noise level and condition number for every method, the estimate for batch ones
    batch = accumulator.solve(ESTIMATORS[settings.method].batch_method, parameter_names=names)
    values, white, std, standard, consistency = _estimate(accumulator, robot, settings, base, batch, rls, equations,
                                                          progress)
    check_finite_estimate(accumulator, names, values, std)
    metrics = _model_metrics(accumulator, robot, settings, base, batch, values, std, nuisance_names, consistency,
                             dropped)
    values, std, white = values[:base.rank], std[:base.rank], white[:base.rank]
    provenance = dict(provenance or {})
    provenance.setdefault("date", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    provenance.setdefault("robot_dynid_version", __version__)
    return DynamicModel(
        robot, settings.friction, settings.armature, settings.offset, base, values, std,
        method=settings.method, metrics=metrics, provenance=provenance, standard=standard,
        friction_side=settings.friction_side, std_method=batch.uncertainty.std_method, white_std=white,
        interval_dof=batch.uncertainty.interval_dof,
    )


def _model_metrics(accumulator, robot, settings, base, batch, values, std, nuisance_names, consistency, dropped):
    """The metrics of a fit of ``values`` and ``std`` (base then nuisance parameters) with the batch solve
    ``batch`` (:func:`model_from_accumulator`); its warnings logged."""
    residual_rms, rsd = residual_statistics(accumulator, values)
    nuisance = {name: float(value) for name, value in zip(nuisance_names, values[base.rank:])}
    values, std = values[:base.rank], std[:base.rank]
    with np.errstate(divide="ignore", invalid="ignore"):
        relative_std = np.abs(std / values)
    joints = robot.joint_names
    poorly_excited = poorly_excited_parameters(settings.regressor(robot), base, std, relative_std,
                                               np.sqrt(accumulator.torque_square_sum_ / max(accumulator.n_samples, 1)),
                                               settings.poorly_excited_torque_fraction)
    metrics = {
        "n_samples": int(accumulator.n_samples),
        "n_dropped": sum(entry.count for entry in (dropped or {}).values()),
        "dropped": dropped_to_dict(dropped or {}),
        "condition_number": float(batch.condition_number),
        "residual_rms": {j: float(v) for j, v in zip(joints, residual_rms)},
        "rsd": {j: float(v) for j, v in zip(joints, rsd)},
        "noise_std": {j: float(v) for j, v in zip(joints, batch.noise_std)},
        "max_relative_std": float(np.max(relative_std)) if relative_std.size else 0.0,
        "uncertainty": batch.uncertainty.to_dict(),
        "poorly_excited": poorly_excited,
        "warnings": _model_warnings(settings, poorly_excited, batch.uncertainty, consistency),
    }
    if settings.min_speed > 0.0:
        metrics["slow_equations"] = {
            "min_speed": settings.min_speed,
            "left_out": {j: int(accumulator.n_samples - kept) for j, kept in zip(joints, accumulator.equations_)}}
    if nuisance:
        metrics["nuisance"] = nuisance
    if consistency is not None:
        metrics["consistency"] = consistency
    metrics["plausibility"] = plausibility(robot, settings, base, values, std)
    return metrics


def _estimate(accumulator, robot, settings, base, batch, rls, equations, progress):
    """(values, white std, std, standard parameters or None, consistency summary or None) of the base and
    nuisance parameters: the RLS state, the consistent fit or the batch solve ``batch``
    (:func:`model_from_accumulator`)."""
    if rls is not None and rls.n_updates_:
        values = rls.theta_.copy()
        sigma2 = float(np.mean(batch.noise_std**2))
        white = np.sqrt(np.clip(np.diag(rls.covariance_), 0.0, None) * sigma2)
        return values, white, white * _design_effect(batch), None, None
    if settings.consistency is not None:
        values, white, standard, consistency = _consistent_fit(accumulator, robot, settings, base, batch, equations,
                                                               progress)
        # the least-squares fit's std (constraints ignored: they can only shrink it), scaled up where the
        # consistent fit's residual (prior, constraints) is larger than least squares'
        std = batch.std * np.maximum(1.0, white / np.where(batch.uncertainty.white_std > 0.0,
                                                           batch.uncertainty.white_std, 1.0))
        return values, white, std, standard, consistency
    return batch.theta, batch.uncertainty.white_std, batch.std, None, None


def _model_warnings(settings, poorly_excited, uncertainty, consistency) -> list[str]:
    """The model's warnings, each logged (returned to the caller): poorly excited base parameters, standard
    deviations not robust to correlated residuals, a consistent fit worse than least squares."""
    warnings = []
    if poorly_excited:
        listing = ", ".join(f"{p['name']} ({p['torque_fraction']:.2g} of {p['joint']}'s torque)"
                            for p in poorly_excited)
        warnings.append(f"poorly excited base parameters (a one-std error moves a joint's torque, RMS over the robot's "
                        f"range of motion, by more than {settings.poorly_excited_torque_fraction:g} of its RMS "
                        f"measured torque): {listing}")
        logger.warning(warnings[-1], extra=RETURNED)
    if uncertainty.std_method != "block":
        warnings.append(f"standard deviations are not robust to correlated residuals ({uncertainty.describe()}): "
                        f"{uncertainty.note}")
        logger.warning(warnings[-1], extra=RETURNED)
    check = (consistency or {}).get("least_squares_check") or {}
    if check.get("warning"):
        warnings.append(check["warning"])
        logger.warning(warnings[-1], extra=RETURNED)
    return warnings


def _design_effect(batch) -> np.ndarray:
    """Per parameter, the batch fit's reported std over its white-noise std (1 where that is 0): how much
    per-joint noise and correlated residuals widen a white-noise std, applied to the RLS recursion's."""
    white = batch.uncertainty.white_std
    return np.where(white > 0.0, batch.std / np.where(white > 0.0, white, 1.0), 1.0)


def poorly_excited_parameters(regressor: Regressor, base: BaseParameters, std, relative_std, torque_rms,
                              threshold: float) -> list[dict]:
    """The base parameters whose :func:`~robot_dynid.estimation.metrics.torque_effects` exceed ``threshold`` [1]
    at some joint: ``{name, torque_fraction, joint, relative_std}`` each (the largest effect and its joint);
    ``std``, ``relative_std`` (r,), ``torque_rms`` (n,) [N m]."""
    if not np.isfinite(threshold) or not len(std):
        return []
    effects = torque_effects(regressor, base, std, torque_rms)
    worst = np.argmax(effects, axis=1)
    return [{"name": name, "torque_fraction": float(effects[i, worst[i]]),
             "joint": regressor.robot.joint_names[worst[i]], "relative_std": float(relative_std[i])}
            for i, name in enumerate(base.names) if not effects[i, worst[i]] <= threshold]


def _layout_and_prior(robot: RobotDescription, settings: IdentificationSettings):
    layout = ParameterLayout.from_regressor(settings.regressor(robot))
    use_prior = settings.consistency is None or settings.consistency.use_prior
    return layout, prior_parameters(robot) if use_prior else None


def _consistent_fit(accumulator, robot, settings, base, batch, equations=None, progress=no_progress):
    """(values, white std, standard, summary) of the consistent fit; values and std cover the nuisance
    parameters too (they are solved for given the consistent base parameters). With ``equations``, the
    prior weight ``"auto"`` is chosen and the fit compared with least squares by cross-validation over their
    folds, and the final fit is compressed from their QR factors when the scaled Gram matrix is beyond
    GRAM_CONDITION_LIMIT (the summary's ``compression``: ``gram`` or ``qr``, and ``gram_condition``)."""
    options = settings.consistency
    method = ESTIMATORS[settings.method]
    layout, prior = _layout_and_prior(robot, settings)
    reduced, back_substitute = accumulator.eliminate(base.rank)
    solve = ConsistentSolver(base, layout, method, prior, options.constraints, options.mode, options.delta)
    folds = _folds(equations, options)
    prior_weight, scores = options.prior_weight, None
    if prior_weight == "auto":
        if folds is None:
            raise IdentificationError("prior_weight auto chooses the weight by cross-validation over the recordings: "
                                      "identify from recordings (not accumulated equations alone), or give a weight")
        prior_weight, scores = folds.choose_prior_weight(solve.base_values, progress)
        logger.info("prior weight %g chosen by cross-validation over %d %s", prior_weight, len(folds.fits),
                    folds.kind)
    weights = method.joint_weights(batch.noise_std)
    condition = scaled_gram_condition(reduced.gram_, weights)
    factors = None
    if condition > GRAM_CONDITION_LIMIT:
        if equations is not None:
            logger.info("scaled Gram matrix condition %.3g > %g: consistent fit compressed by QR of the regressor",
                        condition, GRAM_CONDITION_LIMIT)
            factors = equations.qr_factors()
        else:
            logger.warning("scaled Gram matrix condition %.3g > %g and no data for a QR: the consistent fit's "
                           "compression may lose %.0e relative", condition, GRAM_CONDITION_LIMIT,
                           condition * np.finfo(float).eps)
    result = solve(reduced, prior_weight, batch.noise_std, factors)
    nuisance = back_substitute(result.base_values)
    values = np.concatenate([result.base_values, nuisance])
    white = np.concatenate([result.base_std, batch.uncertainty.white_std[base.rank:]])
    summary = {"prior": "robot description" if prior is not None else "none", "mode": result.mode,
               "status": result.status, "solve_time": result.solve_time,
               "residual_increase": result.residual_increase, "constraint_increase": result.constraint_increase,
               "prior_increase": result.residual_increase - result.constraint_increase, "active": list(result.active),
               "links": [link.to_dict() for link in result.links],
               "prior_weight": prior_weight if result.mode == "regularised" else None,
               "least_squares_values": [float(value) for value in batch.theta[:base.rank]],
               "compression": "gram" if factors is None else "qr",
               "gram_condition": condition if math.isfinite(condition) else None}
    if scores is not None:
        summary["prior_weight_scores"] = {f"{weight:g}": score for weight, score in scores.items()}
        summary["prior_weight_scored_on"] = ("held-out folds' raw (unfiltered) torques" if settings.lowpass
                                             else "held-out folds' torques")
    if folds is not None and options.check:
        summary["least_squares_check"] = _cross_validated_check(folds, robot, settings, result, solve, prior_weight)
    return values, white, result.standard, summary


def _folds(equations: RecordingEquations | None, options: ConsistencySettings) -> Folds | None:
    """The folds of ``equations`` for the consistent fit's checks; None when no check is asked, there are no
    equations, or per-recording offsets make a held-out recording unpredictable."""
    if equations is None or not (options.check or options.prior_weight == "auto"):
        return None
    if equations.offsets:
        if options.prior_weight == "auto":
            raise DynIdError("prior_weight auto cross-validates over the recordings, and per-recording torque offsets "
                             "(file_offsets) cannot be predicted on a recording left out: give a prior weight")
        return None
    return equations.folds()


def _cross_validated_check(folds: Folds, robot, settings, result, solve: ConsistentSolver, prior_weight) -> dict:
    """:func:`~robot_dynid.estimation.consistency_check.compare_with_least_squares` over the folds."""
    try:
        least_squares = folds.cross_validated_rss(ESTIMATORS[settings.method].fit_values)
        consistent = folds.cross_validated_rss(functools.partial(solve.base_values, prior_weight=prior_weight))
    except DynIdError as error:
        text = f"consistent fit not compared with plain least squares by cross-validation: {error}"
        logger.info(text)
        return {"data": folds.kind, "text": text, "warning": None}
    share = (result.residual_increase - result.constraint_increase) / result.residual_increase \
        if result.residual_increase > 0.0 else math.nan
    return compare_with_least_squares(robot.joint_names, consistent.sum(axis=0), least_squares.sum(axis=0),
                                      folds.n_samples,
                                      f"held-out folds (cross-validated over {len(folds.fits)} {folds.kind})",
                                      prior_share=share)


def plausibility(robot, settings, base, values, std) -> dict:
    """:func:`~robot_dynid.estimation.physical_consistency.check_plausibility` of base parameters, as a dict."""
    layout, prior = _layout_and_prior(robot, settings)
    constraints = None if settings.consistency is None else settings.consistency.constraints
    return check_plausibility(values, std, base, layout, constraints=constraints, prior=prior).to_dict()


def check_finite_estimate(accumulator: LeastSquaresAccumulator, names, values, std) -> None:
    """IdentificationError naming the first parameter (of ``names``) whose value or std is not
    finite, and why."""
    bad = np.flatnonzero(~(np.isfinite(values) & np.isfinite(std)))
    if not bad.size:
        return
    name = names[bad[0]]
    what = "value" if not np.isfinite(values[bad[0]]) else "standard deviation"
    overflow = np.flatnonzero(~np.isfinite(accumulator.torque_square_sum_))
    if overflow.size:
        cause = (f"the torques of joint {overflow[0] + 1} hold values too large to square in float64 "
                 "(a corrupt sample? read the data with a robot description to drop implausible samples)")
    else:
        cause = "the regressor or torques overflow float64 (corrupt samples?)"
    raise IdentificationError(f"identification gave a non-finite {what} for parameter {name} "
                              f"({bad.size} of {values.size} parameters): {cause}; no model written")


def residual_statistics(accumulator: LeastSquaresAccumulator, theta: np.ndarray):
    """Per-joint RMS residual [N m] and RSD [1] of ``theta`` from accumulated normal equations (over each joint's
    equations: those ``min_speed`` left out do not count).

    RSD_j = sqrt(sum_k (tau_hat_kj - tau_kj)^2 / sum_k tau_kj^2).
    """
    residual_ss = accumulator.residual_sum_of_squares(theta)
    residual_rms = np.sqrt(residual_ss / np.maximum(accumulator.equations_, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rsd = np.sqrt(residual_ss / accumulator.torque_square_sum_)
    return residual_rms, rsd


_MOVED = {name: normal_equations for name in ("slow_equations", "iter_regressor_chunks", "FILTER_OVERLAP_PERIODS",
                                              "contiguous_runs", "accumulate_recording")}


def __getattr__(name):
    """The names that moved to :mod:`~robot_dynid.estimation.normal_equations`, with a DeprecationWarning (they go
    in 0.2.0)."""
    home = _MOVED.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} moved to {home.__name__}.{name}; the old name goes in robot_dynid 0.2.0",
                  DeprecationWarning, stacklevel=2)
    return getattr(home, name)
