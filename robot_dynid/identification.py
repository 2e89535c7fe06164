"""Identification pipeline: a recording and a model structure in, a :class:`DynamicModel` out.

Shared by the ``robot-dynid identify`` command and the identifier node. Memory is bounded:
the regressor is evaluated ``chunk_size`` samples at a time and folded into per-joint normal
equations (:class:`~robot_dynid.estimators.LeastSquaresAccumulator`) or into a recursive
least-squares estimator, so the stacked regressor of a long recording is never built.
"""
from __future__ import annotations

import dataclasses
import datetime
import logging

import numpy as np

from robot_dynid import __version__
from robot_dynid.base_parameters import BaseParameters, compute_base_parameters
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimators import LeastSquaresAccumulator, RecursiveLeastSquares
from robot_dynid.friction import FrictionModel
from robot_dynid.model import DynamicModel
from robot_dynid.recording import Dropped, Recording, dropped_to_dict
from robot_dynid.regressor import Regressor
from robot_dynid.robot_description import RobotDescription

logger = logging.getLogger(__name__)

METHODS = ("ols", "wls", "rls")


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
    method : {"ols", "wls", "rls"}
    forgetting : float
        RLS forgetting factor mu in (0, 1]; 1 weighs all samples equally.
    chunk_size : int
        Samples per regressor evaluation; bounds memory to about ``chunk_size * n * p * 8`` bytes.
    poorly_excited_relative_std : float
        Base parameters whose relative standard deviation exceeds this [1] are reported as
        poorly excited (a warning, logged and stored in the model's metrics).
    """

    friction: FrictionModel = dataclasses.field(default_factory=FrictionModel)
    armature: bool = False
    offset: bool = False
    method: str = "ols"
    forgetting: float = 1.0
    chunk_size: int = 5000
    poorly_excited_relative_std: float = 1.0

    def __post_init__(self):
        if self.method not in METHODS:
            raise DynIdError(f"method must be one of {list(METHODS)}, got {self.method!r}")
        if not 0.0 < self.forgetting <= 1.0:
            raise DynIdError(f"forgetting must be in (0, 1], got {self.forgetting!r}")
        if self.chunk_size < 1:
            raise DynIdError(f"chunk_size must be a positive number of samples, got {self.chunk_size!r}")

    def regressor(self, robot: RobotDescription) -> Regressor:
        return Regressor(robot, self.friction, armature=self.armature, offset=self.offset)


def iter_regressor_chunks(regressor: Regressor, base: BaseParameters, recording: Recording, chunk_size: int):
    """Yield ``(Y_base (M, n, r), tau (M, n))`` for consecutive chunks of a recording (the full
    regressor of each chunk is written into one reused buffer)."""
    elapsed = recording.elapsed
    buffer = np.empty((min(chunk_size, recording.n_samples), recording.n_joints, regressor.n_parameters))
    for start in range(0, recording.n_samples, chunk_size):
        stop = min(start + chunk_size, recording.n_samples)
        temperature = None if recording.temperature is None else recording.temperature[start:stop]
        Y = regressor.compute(
            recording.q[start:stop], recording.qd[start:stop], recording.qdd[start:stop],
            temperature=temperature, elapsed=elapsed[start:stop], out=buffer[:stop - start],
        )
        yield base.select(Y), recording.tau[start:stop]


def prepare_recording(recording: Recording, robot: RobotDescription) -> Recording:
    """Match joints to the robot by name and check the fields identification needs."""
    recording = recording.reorder(robot.joint_names)
    missing = [name for name in ("qd", "qdd", "tau") if getattr(recording, name) is None]
    if missing:
        raise DataError(
            f"{recording.source}: identification needs {', '.join(missing)}; "
            "give velocities/accelerations or derive them (robot_dynid.signal_processing.differentiate)"
        )
    if recording.n_samples == 0:
        raise DataError(f"{recording.source}: no samples left to identify from")
    return recording


def identify(
    recording: Recording,
    robot: RobotDescription,
    settings: IdentificationSettings = IdentificationSettings(),
    base: BaseParameters | None = None,
    provenance: dict | None = None,
) -> DynamicModel:
    """Identify the base parameters of ``robot`` from ``recording``.

    Parameters
    ----------
    recording : Recording
        Samples with q [rad], qd [rad/s], qdd [rad/s^2] and tau [N m]; joints are matched by
        name, extra joints are ignored. Select stages / cycles before calling
        (:meth:`Recording.select`).
    robot : RobotDescription
    settings : IdentificationSettings
    base : BaseParameters, optional
        Reuse a base-parameter set (e.g. from a model in use); computed from random states otherwise.
    provenance : dict, optional
        Stored in the model (data source, segments, ...); date and version are added.

    Raises
    ------
    IdentificationError
        When the data leave base parameters unidentifiable (named in the message).
    """
    recording = prepare_recording(recording, robot)
    regressor = settings.regressor(robot)
    if base is None:
        base = compute_base_parameters(regressor)
    accumulator = LeastSquaresAccumulator(robot.n_joints, base.rank)
    rls = RecursiveLeastSquares(base.rank, forgetting=settings.forgetting) if settings.method == "rls" else None
    for Y_base, tau in iter_regressor_chunks(regressor, base, recording, settings.chunk_size):
        accumulator.add(Y_base, tau)
        if rls is not None:
            rls.update_batch(Y_base, tau)
    provenance = dict(provenance or {})
    provenance.setdefault("data_source", recording.source)
    return model_from_accumulator(accumulator, robot, settings, base, rls=rls,
                                  dropped=recording.dropped, provenance=provenance)


def model_from_accumulator(
    accumulator: LeastSquaresAccumulator,
    robot: RobotDescription,
    settings: IdentificationSettings,
    base: BaseParameters,
    rls: RecursiveLeastSquares | None = None,
    dropped: dict[str, Dropped] | None = None,
    provenance: dict | None = None,
) -> DynamicModel:
    """Solve accumulated normal equations (or take an RLS estimate) into a :class:`DynamicModel`.

    The batch solve always runs: it gives the noise level, condition number and, for OLS/WLS,
    the estimate. With ``rls`` the estimate is the RLS state, its std ``sqrt(diag(P) sigma^2)``
    (with mu = 1, P approximates (W^T W)^-1). Metrics: per-joint RMS residual [N m] and RSD,
    noise std [N m], condition number, and the base parameters whose relative std exceeds
    ``settings.poorly_excited_relative_std`` (also logged as a warning); the samples left out
    before, by reason (``dropped``).

    Raises
    ------
    IdentificationError
        A value or standard deviation is not finite (naming the parameter and the likely cause):
        no model with one is ever made.
    """
    batch = accumulator.solve("wls" if settings.method == "wls" else "ols", parameter_names=base.names)
    if rls is None or rls.n_updates_ == 0:
        values, std = batch.theta, batch.std
    else:
        values = rls.theta_.copy()
        sigma2 = float(np.mean(batch.noise_std**2))
        std = np.sqrt(np.clip(np.diag(rls.covariance_), 0.0, None) * sigma2)
    check_finite_estimate(accumulator, base, values, std)
    residual_rms, rsd = residual_statistics(accumulator, values)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative_std = np.abs(std / values)
    poorly_excited = [
        {"name": name, "relative_std": float(rel)}
        for name, rel in zip(base.names, relative_std)
        if not rel <= settings.poorly_excited_relative_std
    ]
    warnings = []
    if poorly_excited:
        listing = ", ".join(f"{p['name']} ({p['relative_std']:.0%})" for p in poorly_excited)
        warnings.append(f"poorly excited base parameters (relative std > "
                        f"{settings.poorly_excited_relative_std:.0%}): {listing}")
        logger.warning(warnings[-1])
    joints = robot.joint_names
    metrics = {
        "n_samples": int(accumulator.n_samples),
        "n_dropped": sum(entry.count for entry in (dropped or {}).values()),
        "dropped": dropped_to_dict(dropped or {}),
        "condition_number": float(batch.condition_number),
        "residual_rms": {j: float(v) for j, v in zip(joints, residual_rms)},
        "rsd": {j: float(v) for j, v in zip(joints, rsd)},
        "noise_std": {j: float(v) for j, v in zip(joints, batch.noise_std)},
        "max_relative_std": float(np.max(relative_std)) if relative_std.size else 0.0,
        "poorly_excited": poorly_excited,
        "warnings": warnings,
    }
    provenance = dict(provenance or {})
    provenance.setdefault("date", datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    provenance.setdefault("robot_dynid_version", __version__)
    return DynamicModel(
        robot, settings.friction, settings.armature, settings.offset, base, values, std,
        method=settings.method, metrics=metrics, provenance=provenance,
    )


def check_finite_estimate(accumulator: LeastSquaresAccumulator, base: BaseParameters, values, std) -> None:
    """IdentificationError naming the first base parameter whose value or std is not finite, and why."""
    bad = np.flatnonzero(~(np.isfinite(values) & np.isfinite(std)))
    if not bad.size:
        return
    name = base.names[bad[0]]
    what = "value" if not np.isfinite(values[bad[0]]) else "standard deviation"
    overflow = np.flatnonzero(~np.isfinite(accumulator.torque_square_sum_))
    if overflow.size:
        cause = (f"the torques of joint {overflow[0] + 1} hold values too large to square in float64 "
                 "(a corrupt sample? read the data with a robot description to drop implausible samples)")
    else:
        cause = "the regressor or torques overflow float64 (corrupt samples?)"
    raise IdentificationError(f"identification gave a non-finite {what} for base parameter {name} "
                              f"({bad.size} of {values.size} parameters): {cause}; no model written")


def residual_statistics(accumulator: LeastSquaresAccumulator, theta: np.ndarray):
    """Per-joint RMS residual [N m] and RSD [1] of ``theta`` from accumulated normal equations.

    RSD_j = sqrt(sum_k (tau_hat_kj - tau_kj)^2 / sum_k tau_kj^2).
    """
    residual_ss = accumulator.residual_sum_of_squares(theta)
    residual_rms = np.sqrt(residual_ss / max(accumulator.n_samples, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        rsd = np.sqrt(residual_ss / accumulator.torque_square_sum_)
    return residual_rms, rsd
