"""Online friction tracking: the rigid-body base parameters fixed, the friction (and optionally the offsets)
followed by recursive least squares with forgetting from ordinary operation.

With a model's base regressor split into rigid-body columns ``Y_rb`` and tracked columns ``Y_f`` (the base
parameters that are friction, or torque offsets with ``offsets=True``), every sample's residual
``tau - Y_rb theta_rb`` is the tracked part ``Y_f theta_f`` plus noise: :class:`FrictionTracker` feeds its
rows to :class:`~robot_dynid.estimation.estimators.RecursiveLeastSquares` (forgetting ``mu``: an equivalent
memory of ``1 / (1 - mu)`` samples), starting at the model's values with the covariance of its standard
deviations, and the noise variance from the model's residual RMS per joint, so that the covariance is the
parameters' (``std = sqrt(diag P)``).

Whatever the arm does: samples where a joint stands still (``|qd| < min_speed``) carry no information on its
friction and are skipped for that joint's rows (the Coulomb sign of a resting joint is undefined), so a
pause neither pulls the estimate nor winds up the covariance (the forgetting applies per update, and an
update only comes with moving joints).

:meth:`FrictionTracker.changed` says whether the tracked friction moved from the model's by more than a
fraction (relative change of the tracked coefficients' torque at each joint's typical speed, the largest over
joints); :meth:`FrictionTracker.model` is the model with the tracked values and std, for the quality gate.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.analysis_defaults import DEFAULT_FORGETTING
from robot_dynid.estimation.estimators import RECURSIVE_METHOD, build_estimator
from robot_dynid.estimation.quality_gate import GATE_DEFAULTS, check_gate_bound, gate_rejection
from robot_dynid.joint_names import match_joints
from robot_dynid.model.dynamic_model import DynamicModel

__all__ = ["DEFAULT_MIN_SPEED", "FrictionTracker", "time_to_follow", "TrackingOutcome", "OnlineFrictionTracking",
           "TrackingHistory", "track_recording"]

#: Joints slower than this [rad/s] are left out of an update.
DEFAULT_MIN_SPEED = 0.02


class FrictionTracker:
    """RLS with forgetting on the friction (and offset) base parameters of ``model``.

    Parameters
    ----------
    model : DynamicModel
        The last accepted model: its rigid-body base parameters stay fixed.
    forgetting : float
        mu in (0, 1].
    offsets : bool
        Track the torque offsets too (when the model has them).
    min_speed : float
        [rad/s] > 0: a joint's rows enter an update only while it moves faster than this.
    """

    def __init__(self, model: DynamicModel, forgetting: float = DEFAULT_FORGETTING, offsets: bool = False,
                 min_speed: float = DEFAULT_MIN_SPEED) -> None:
        if not isinstance(model, DynamicModel):
            raise DynIdError(f"model must be a DynamicModel, got {type(model).__name__}")
        self.model = model
        self.min_speed = validators.positive(min_speed, "min_speed", DynIdError, "rad/s")
        regressor = model.regressor
        groups = [regressor.slices["friction"]] + ([regressor.slices["offset"]] if offsets else [])
        tracked_standard = {i for group in groups for i in range(group.start, group.stop)}
        independent = model.base.independent
        self.tracked = np.array([k for k, i in enumerate(independent) if i in tracked_standard], dtype=int)
        if self.tracked.size == 0:
            raise DynIdError("the model has no friction parameters to track (friction model 'none')")
        dependent_tracked = [model.base.standard_names[i] for i in model.base.dependent if i in tracked_standard]
        if dependent_tracked:
            raise DynIdError(f"friction parameters {dependent_tracked} are regrouped into other base parameters; "
                             "they cannot be tracked alone")
        self.fixed = np.setdiff1d(np.arange(model.base.rank), self.tracked)
        self.names = tuple(model.base.names[k] for k in self.tracked)
        std = np.asarray(model.std, dtype=float)[self.tracked]
        scale = np.maximum(np.abs(model.values[self.tracked]), 1e-6)
        initial = np.maximum(std, 0.05 * scale) ** 2        # never so sure of the model that nothing moves it
        rms = model.metrics.get("residual_rms")
        if isinstance(rms, dict):
            rms = [rms.get(joint, math.nan) for joint in model.joint_names]
        try:
            rms = np.asarray(rms, dtype=float).reshape(model.robot.n_joints)
        except (TypeError, ValueError):
            rms = np.full(model.robot.n_joints, math.nan)
        if not np.all(np.isfinite(rms) & (rms > 0)):
            rms = np.ones(model.robot.n_joints)     # unknown: then std is relative to a unit noise
        self.noise_variance = rms ** 2
        self.rls = build_estimator(RECURSIVE_METHOD, self.tracked.size, forgetting=forgetting,
                                   initial_covariance=initial, theta0=model.values[self.tracked])

    @property
    def values(self) -> np.ndarray:
        """Tracked base parameters (k,) in :attr:`names` order, each in its SI unit."""
        return self.rls.theta_.copy()

    @property
    def std(self) -> np.ndarray:
        """Their standard deviations (k,) from the RLS covariance."""
        return np.sqrt(np.clip(np.diag(self.rls.covariance_), 0.0, None))

    def update(self, q, qd, qdd, tau, temperature=None, elapsed=None) -> int:
        """Track from samples q [rad], qd [rad/s], qdd [rad/s^2], tau [N m], each (N, n) in the model's joint
        order (``temperature`` [deg C] (N, n), ``elapsed`` [s] (N,) for drift models); returns the samples used
        (those with a moving joint). DataError for non-finite or misshapen data."""
        tau = validators.array(tau, "tau", shape=(None, self.model.robot.n_joints), axes=("samples", "joints"),
                               columns=self.model.joint_names, unit="N m")
        return self.update_base(self.base_regressor(q, qd, qdd, temperature, elapsed), qd, tau)

    def base_regressor(self, q, qd, qdd, temperature=None, elapsed=None) -> np.ndarray:
        """The model's base regressor (N, n, r) of the samples."""
        return self.model.base.select(self.model.regressor.compute(q, qd, qdd, temperature=temperature,
                                                                   elapsed=elapsed))

    def update_base(self, Y, qd, tau) -> int:
        """:meth:`update` with the base regressor ``Y`` (N, n, r) of the samples already computed."""
        tau = np.asarray(tau, dtype=float)
        residual = tau - Y[:, :, self.fixed] @ self.model.values[self.fixed]
        Phi = Y[:, :, self.tracked]
        if not (np.isfinite(Phi).all() and np.isfinite(residual).all()):
            raise DataError("phi and y must be finite: the samples' base regressor Y and torques tau")
        moving = np.abs(np.asarray(qd, dtype=float)) >= self.min_speed
        used = 0
        for k in np.flatnonzero(moving.any(axis=1)):     # checked above: the trusted update, row by row
            rows = moving[k]
            self.rls.update_trusted(Phi[k, rows], residual[k, rows], self.noise_variance[rows])
            used += 1
        return used

    def tracked_model(self) -> DynamicModel:
        """The model with the tracked values and their std (rigid-body part unchanged, no standard parameters:
        the tracked friction has no consistent standard set of its own)."""
        values = np.array(self.model.values, dtype=float)
        std = np.array(self.model.std, dtype=float)
        values[self.tracked], std[self.tracked] = self.values, self.std
        provenance = dict(self.model.provenance, friction_tracking={
            "updates": int(self.rls.n_updates_), "forgetting": self.rls.forgetting, "parameters": list(self.names)})
        return dataclasses.replace(self.model, values=values, std=std, standard=None, provenance=provenance)

    def change(self) -> float:
        """Largest relative change of a tracked parameter from the model's, ``|theta - theta0| / |theta0|`` [1]
        (parameters with ``theta0 = 0``: relative to the largest ``|theta0|`` of the tracked ones)."""
        start = np.asarray(self.model.values, dtype=float)[self.tracked]
        floor = max(float(np.max(np.abs(start))), 1e-12)
        scale = np.where(np.abs(start) > 1e-9 * floor, np.abs(start), floor)
        return float(np.max(np.abs(self.values - start) / scale))

    def changed(self, fraction: float) -> bool:
        """Whether :meth:`change` exceeds ``fraction`` [1] (> 0)."""
        return self.change() > validators.positive(fraction, "change fraction", DynIdError)

    def rebase(self, model: DynamicModel) -> None:
        """Track on from ``model`` (the tracked model just accepted, same structure): changes are measured
        from it; the estimate and covariance go on."""
        if model.base.names != self.model.base.names:
            raise DynIdError("rebase needs a model with the same base parameters")
        self.model = model

    def condition_number(self) -> float:
        """Condition number [1] of the tracked parameters' information, column-scaled: the square root of the
        condition number of the correlation matrix of the RLS covariance (as that of a column-scaled regressor)."""
        std = self.std
        if not np.all(std > 0.0):
            return math.inf
        correlation = self.rls.covariance_ / np.outer(std, std)
        eigenvalues = np.linalg.eigvalsh((correlation + correlation.T) / 2.0)
        return float(np.sqrt(eigenvalues[-1] / eigenvalues[0])) if eigenvalues[0] > 0.0 else math.inf


def time_to_follow(history: np.ndarray, target: float, tolerance: float, times: np.ndarray) -> float:
    """First time [s] from which ``history`` (N,) stays within ``tolerance`` (relative) of ``target``; inf
    when it never settles."""
    inside = np.abs(np.asarray(history, dtype=float) - target) <= tolerance * abs(target)
    if not inside[-1]:
        return math.inf
    outside = np.flatnonzero(~inside)
    return float(times[0] if outside.size == 0 else times[min(outside[-1] + 1, len(times) - 1)])


@dataclasses.dataclass(frozen=True)
class TrackingOutcome:
    """A tracked model offered for publication: ``accepted`` with ``model``, or refused with ``message``."""

    accepted: bool
    model: DynamicModel | None
    message: str


class OnlineFrictionTracking:
    """Friction tracking sample by sample (the identifier node's ``track_friction`` mode).

    Samples (stamp [s], q [rad], qd [rad/s], tau [N m], each (n,)) are gathered in batches of ``batch``;
    ``qdd`` [rad/s^2] is the central difference of ``qd`` within a batch. Each batch is first the hold-out of
    the current estimate (it has not been used yet), then tracked. When the tracked parameters have moved from
    the model in use by more than ``change_fraction``, the tracked model is offered: it passes when its
    hold-out RSD on the batch is below ``max_holdout_rsd``, the model's condition number below
    ``max_condition`` (:func:`~robot_dynid.estimation.quality_gate.gate_rejection`) and, with
    ``require_improvement``, its hold-out RMS is not above the model in use's; then it is the model in use.
    A gap in the stamps (more than 5 sample periods) or stamps that do not increase start a new batch.
    """

    def __init__(self, model: DynamicModel, forgetting: float = DEFAULT_FORGETTING, change_fraction: float = 0.1,
                 offsets: bool = False, batch: int = 50, max_holdout_rsd: float = GATE_DEFAULTS["max_holdout_rsd"],
                 max_condition: float = GATE_DEFAULTS["max_condition"], require_improvement: bool = True) -> None:
        if model.payload is not None:
            raise DynIdError(f"friction tracking of a model with a payload (at {model.payload.frame}) is not "
                             "supported; track the arm's model")
        if model.friction.drift != "none":
            raise DynIdError(f"friction tracking follows the friction as it is; the model's friction drifts with "
                             f"{model.friction.drift} (track a model without drift)")
        self.tracker = FrictionTracker(model, forgetting, offsets)
        self.change_fraction = validators.positive(change_fraction, "change fraction", DynIdError)
        self.batch = int(batch)
        if self.batch < 3:
            raise DynIdError(f"batch must be >= 3 samples, got {batch!r}")
        self.max_holdout_rsd = check_gate_bound("max_holdout_rsd", max_holdout_rsd)
        self.max_condition = check_gate_bound("max_condition", max_condition)
        self.require_improvement = require_improvement
        self.samples: list[tuple] = []
        self.history: list[tuple[float, np.ndarray, np.ndarray]] = []     # (stamp, values, std) per batch

    @property
    def model(self) -> DynamicModel:
        """The model in use (the last accepted)."""
        return self.tracker.model

    def add(self, stamp: float, q, qd, tau) -> TrackingOutcome | None:
        """One sample; a :class:`TrackingOutcome` when a batch made the friction change enough, else None."""
        if self.samples:
            previous = self.samples[-1][0]
            period = (previous - self.samples[0][0]) / max(len(self.samples) - 1, 1)
            if not stamp > previous or (len(self.samples) > 1 and stamp - previous > 5.0 * period):
                self.samples = []
        self.samples.append((float(stamp), np.asarray(q, float), np.asarray(qd, float), np.asarray(tau, float)))
        if len(self.samples) < self.batch:
            return None
        time, q, qd, tau = (np.array(column) for column in zip(*self.samples))
        self.samples = []
        return self.track(time, q, qd, tau)

    def track(self, time, q, qd, tau) -> TrackingOutcome | None:
        """A batch (N >= 3 samples, each (N, n) and time (N,) [s] increasing)."""
        qdd = np.gradient(qd, time, axis=0)
        Y = self.tracker.base_regressor(q, qd, qdd)
        estimate = np.array(self.model.values, dtype=float)
        estimate[self.tracker.tracked] = self.tracker.values
        residual = Y @ estimate - tau                         # the current estimate on data it has not seen
        in_use = Y @ self.model.values - tau
        self.tracker.update_base(Y, qd, tau)
        self.history.append((float(time[-1]), self.tracker.values, self.tracker.std))
        if not self.tracker.changed(self.change_fraction) or self.tracker.rls.n_updates_ == 0:
            return None
        rms, in_use_rms = (float(np.sqrt(np.mean(r ** 2))) for r in (residual, in_use))
        rsd = float(np.sqrt(np.sum(residual ** 2) / max(np.sum(tau ** 2), 1e-300)))
        condition = self.tracker.condition_number()
        rejection = gate_rejection(rms, rsd, condition, self.max_holdout_rsd, self.max_condition)
        if not rejection and self.require_improvement and rms > in_use_rms:
            rejection = f"hold-out RMS {rms:.4g} N m is above the model in use's {in_use_rms:.4g} N m"
        change = self.tracker.change()
        if rejection:
            return TrackingOutcome(False, None, f"tracked friction changed by {change:.1%} but is refused: {rejection}")
        metrics = {"residual_rms": dict(zip(self.model.joint_names, np.sqrt(np.mean(residual ** 2, axis=0)).tolist())),
                   "holdout_rsd": rsd, "condition_number": condition, "n_samples": int(self.tracker.rls.n_updates_)}
        model = dataclasses.replace(self.tracker.tracked_model(), metrics=metrics)
        self.tracker.rebase(model)
        return TrackingOutcome(True, model, f"tracked friction changed by {change:.1%}; hold-out RMS {rms:.4g} N m "
                                            f"(model in use {in_use_rms:.4g} N m)")


@dataclasses.dataclass(frozen=True)
class TrackingHistory:
    """Tracked parameters over a recording: ``names`` (k,), ``time`` (m,) [s] at the end of each batch, ``values``
    and ``std`` (m, k), each in the SI unit of its parameter, ``units`` (k,) (N m for fc, N m s/rad for fv, N m for
    offsets: :meth:`~robot_dynid.model.regressor.Regressor.parameter_unit`)."""

    names: tuple[str, ...]
    time: np.ndarray
    values: np.ndarray
    std: np.ndarray
    units: tuple[str, ...] = ()


def track_recording(model: DynamicModel, recording, forgetting: float = DEFAULT_FORGETTING, offsets: bool = False,
                    batch: int = 50) -> TrackingHistory:
    """Track the friction of ``model`` over ``recording`` (q, qd, qdd, tau; joints matched by name) in batches of
    ``batch`` samples, as the identifier's ``track_friction`` mode does live."""
    if recording.qdd is None or recording.tau is None:
        raise DataError("friction tracking needs accelerations and torques in the recording")
    columns = match_joints(model.joint_names, recording.joint_names, recording.source, "the model")
    tracker = FrictionTracker(model, forgetting, offsets)
    arrays = [getattr(recording, field)[:, columns] for field in ("q", "qd", "qdd", "tau")]
    ends = list(range(batch, recording.n_samples + 1, batch)) or [recording.n_samples]
    values, std = np.empty((len(ends), tracker.tracked.size)), np.empty((len(ends), tracker.tracked.size))
    for index, end in enumerate(ends):
        rows = slice(max(0, end - batch), end)
        tracker.update(*(x[rows] for x in arrays))
        values[index], std[index] = tracker.values, tracker.std
    units = tuple(_unit(model, name) for name in tracker.names)
    return TrackingHistory(tracker.names, recording.time[np.array(ends) - 1] - recording.time[0], values, std, units)


def _unit(model: DynamicModel, name: str) -> str:
    """A tracked parameter's unit: a base parameter's (its leading standard one's), an offset's N m (N)."""
    try:
        return model.regressor.parameter_unit(name)
    except DynIdError:
        joint = int(name[3:]) - 1 if name.startswith("off") and name[3:].isdigit() else None
        return "N" if joint is not None and model.robot.prismatic[joint] else "N m"
