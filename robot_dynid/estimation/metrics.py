"""Fit and validation metrics: residuals, RSD, relative RMSD, conditioning, parameter drift.

With ``e = tau_hat - tau`` (N, n) the prediction error [N m] per sample and joint:

- :func:`rms_residual`: ``sqrt(mean_k e_kj^2)`` [N m].
- :func:`rsd` (relative, dimensionless): ``sqrt(sum_k e_kj^2 / sum_k tau_kj^2)``.
- :func:`residual_std` (the hydraulic paper's "residual standard deviation", reported in N m):
  the sample standard deviation of ``e_j``, ``sqrt(sum_k (e_kj - mean e_j)^2 / (N - 1))``.
- :func:`relative_rmsd` (thesis): :func:`rsd` over the samples where the joint moves, i.e.
  ``|qd_kj| >= speed_threshold``; slow samples are dominated by the friction discontinuity
  at zero speed. By default each joint is judged on its own speed (``exclude="joint"``);
  ``exclude="any"`` drops a sample for all joints when any joint is slow.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.estimation.estimators import scaled_condition_number
from robot_dynid.model.base_parameters import random_states
from robot_dynid.stored_columns import is_stored, piece_ranges

__all__ = ["share_of", "rms_residual", "rsd", "residual_std", "moving_mask", "relative_rmsd", "EFFECT_STATES",
           "TORQUE_FLOOR", "torque_effects", "condition_number", "ParameterStatistics", "parameter_statistics",
           "ValidationReport", "validation_report", "prediction_report", "cross_validation", "self_validation"]


_EXCLUDE_MODES = ("joint", "any")
_AXES = ("samples", "joints")


def _check_prediction(tau_hat, tau) -> tuple[np.ndarray, np.ndarray]:
    tau = validators.array(tau, "tau", ndim=2, axes=_AXES, min_length=1, finite=False, unit="N m")
    tau_hat = validators.array(tau_hat, "tau_hat", shape=tau.shape, axes=_AXES, finite=False, unit="N m")
    return tau_hat, tau


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``sqrt(numerator / denominator)``; inf where the denominator is 0 and the numerator not."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.sqrt(numerator / denominator)
    return np.where(denominator == 0.0, np.where(numerator == 0.0, 0.0, np.inf), ratio)


def share_of(count: int, total: int, what: str) -> str:
    """``count`` of ``total`` ``what`` (plural noun) as text: from 1 % a rounded percentage with the count,
    ``"12% (1440 of 12000) of the validation samples"``; below, the count alone,
    ``"3 of 12000 validation samples"`` (a percentage would round to 0 %)."""
    if total > 0 and count / total >= 0.01:
        return f"{count / total:.0%} ({count} of {total}) of the {what}"
    return f"{count} of {total} {what}"


def rms_residual(tau_hat, tau) -> np.ndarray:
    """RMS prediction error per joint.

    Parameters
    ----------
    tau_hat, tau : array_like, shape (N, n)
        Predicted and measured torques [N m].

    Returns
    -------
    ndarray, shape (n,)
        ``sqrt(mean_k (tau_hat - tau)^2)`` [N m].
    """
    return _PredictionSums.of(*_check_prediction(tau_hat, tau)).rms()


def rsd(tau_hat, tau) -> np.ndarray:
    """Relative standard deviation per joint, ``sqrt(sum e^2 / sum tau^2)`` (dimensionless).

    Parameters
    ----------
    tau_hat, tau : array_like, shape (N, n)
        Predicted and measured torques [N m].

    Returns
    -------
    ndarray, shape (n,)
        0 is a perfect fit; ``inf`` for a joint whose measured torque is all zero.
    """
    return _PredictionSums.of(*_check_prediction(tau_hat, tau)).rsd()


def residual_std(tau_hat, tau) -> np.ndarray:
    """Residual standard deviation per joint [N m] (the hydraulic paper's RSD).

    Parameters
    ----------
    tau_hat, tau : array_like, shape (N, n)
        Predicted and measured torques [N m], N >= 2.

    Returns
    -------
    ndarray, shape (n,)
        ``std(tau_hat - tau, ddof=1)`` [N m].
    """
    return _PredictionSums.of(*_check_prediction(tau_hat, tau)).residual_std()


def moving_mask(qd, speed_threshold: float, exclude: str = "joint") -> np.ndarray:
    """Samples counted by :func:`relative_rmsd`.

    Parameters
    ----------
    qd : array_like, shape (N, n)
        Joint velocities [rad/s].
    speed_threshold : float
        Samples with ``|qd| < speed_threshold`` [rad/s] are excluded (>= 0).
    exclude : {"joint", "any"}
        Judge each joint by its own speed, or drop a sample for all joints if any is slow.

    Returns
    -------
    ndarray of bool, shape (N, n)
        True where the sample counts for that joint.
    """
    qd = validators.array(qd, "qd", ndim=2, axes=_AXES, finite=False)
    validators.positive(speed_threshold, "speed_threshold", DataError, "rad/s", allow_zero=True)
    if exclude not in _EXCLUDE_MODES:
        raise DataError(f"exclude must be one of {_EXCLUDE_MODES}, got {exclude!r}")
    moving = np.abs(qd) >= speed_threshold
    if exclude == "any":
        moving = np.repeat(np.all(moving, axis=1, keepdims=True), qd.shape[1], axis=1)
    return moving


def relative_rmsd(tau_hat, tau, qd, speed_threshold: float, exclude: str = "joint") -> np.ndarray:
    """Relative RMSD per joint over moving samples (thesis), ``sqrt(sum e^2 / sum tau^2)``.

    Parameters
    ----------
    tau_hat, tau : array_like, shape (N, n)
        Predicted and measured torques [N m].
    qd : array_like, shape (N, n)
        Joint velocities [rad/s].
    speed_threshold, exclude
        As in :func:`moving_mask`.

    Returns
    -------
    ndarray, shape (n,)
        Dimensionless; ``nan`` for a joint with no moving sample.
    """
    tau_hat, tau = _check_prediction(tau_hat, tau)
    qd = validators.array(qd, "qd", shape=tau.shape, axes=_AXES, finite=False)
    return _PredictionSums.of(tau_hat, tau, moving_mask(qd, speed_threshold, exclude)).relative_rmsd()


#: States of the robot's range of motion over which :func:`torque_effects` takes a column's RMS.
EFFECT_STATES = 200
#: Joints whose RMS torque is below this fraction of the largest joint's are judged against that floor.
TORQUE_FLOOR = 1e-6


def torque_effects(regressor, base, std, torque_rms, n_states: int = EFFECT_STATES, seed: int = 0) -> np.ndarray:
    """How much each base parameter's uncertainty moves the torques, as a fraction of the measured ones.

    ``effect[i, j] = std_i * rms_s(Y_base[s, j, i]) / torque_rms_j``: the RMS torque [N m] a one-std error
    of base parameter i makes at joint j over the robot's range of motion (``n_states`` states drawn
    uniformly within its position, velocity and acceleration limits,
    :func:`~robot_dynid.model.base_parameters.random_states`), over joint j's RMS measured torque. Unlike
    ``std / |value|`` it does not grow without bound for a parameter whose value is near zero, and it
    stays large for a parameter the data leave uncertain even where its column was small in them.

    Parameters
    ----------
    regressor : Regressor
    base : BaseParameters
        Of ``regressor``.
    std : array_like, shape (r,)
        Standard deviations of the r base parameters (their units).
    torque_rms : array_like, shape (n,)
        [N m] RMS measured torque per joint; floored at TORQUE_FLOOR of the largest.

    Returns
    -------
    ndarray, shape (r, n)
        [1] (inf where std is inf).
    """
    states = random_states(regressor, n_states, np.random.default_rng(seed))
    column_rms = np.sqrt(np.mean(base.select(regressor.compute(**states)) ** 2, axis=0))   # (n, r)
    torque_rms = np.asarray(torque_rms, dtype=float)
    floor = max(TORQUE_FLOOR * float(np.max(torque_rms, initial=0.0)), np.finfo(float).tiny)
    with np.errstate(invalid="ignore"):
        effect = np.asarray(std, dtype=float)[:, None] * column_rms.T / np.maximum(torque_rms, floor)[None, :]
    return np.where(np.isnan(effect), np.inf, effect)


def condition_number(Y) -> float:
    """Condition number of the column-scaled regressor (unit-norm columns).

    Parameters
    ----------
    Y : array_like, shape (N, n, p) or (M, p)
        Regressor batch or stacked regressor.

    Returns
    -------
    float
        ``s_max / s_min`` of ``W D^-1``; ``inf`` when rank deficient.
    """
    Y = validators.array(Y, "Y", ndim=(2, 3), finite=False)
    return scaled_condition_number(Y.reshape(-1, Y.shape[-1]))


@dataclass(frozen=True)
class ParameterStatistics:
    """Statistics of parameter estimates over C cycles, each array of shape (p,).

    ``relative_range = (max - min) / |max|`` (inf where max == 0), ``start_end_difference =
    last - first`` (the drift from the first to the last cycle), ``std`` with ddof = 1
    (0 for a single cycle).
    """

    names: tuple[str, ...] | None
    mean: np.ndarray
    minimum: np.ndarray
    maximum: np.ndarray
    relative_range: np.ndarray
    start_end_difference: np.ndarray
    std: np.ndarray
    n_cycles: int

    def to_dict(self) -> dict:
        """Plain lists keyed by statistic (YAML/JSON friendly)."""
        return {
            "names": None if self.names is None else list(self.names),
            "n_cycles": self.n_cycles,
            "mean": self.mean.tolist(),
            "min": self.minimum.tolist(),
            "max": self.maximum.tolist(),
            "relative_range": self.relative_range.tolist(),
            "start_end_difference": self.start_end_difference.tolist(),
            "std": self.std.tolist(),
        }


def parameter_statistics(estimates, names=None) -> ParameterStatistics:
    """Statistics of per-cycle estimates (thesis, per-cycle re-identification).

    Parameters
    ----------
    estimates : array_like, shape (C, p)
        One row of estimated parameters per cycle, in cycle order.
    names : sequence of str, length p, optional
        Parameter names carried into the result.
    """
    estimates = validators.array(estimates, "estimates", ndim=2, axes=("cycles", "parameters"), min_length=1,
                                 columns=names)
    if names is not None:
        names = tuple(names)
        if len(names) != estimates.shape[1]:
            raise DataError(f"names has {len(names)} entries, expected p = {estimates.shape[1]}")
    minimum, maximum = estimates.min(axis=0), estimates.max(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative_range = np.where(maximum == 0.0, np.where(minimum == 0.0, 0.0, np.inf),
                                  (maximum - minimum) / np.abs(maximum))
    n_cycles = estimates.shape[0]
    return ParameterStatistics(
        names=names,
        mean=estimates.mean(axis=0),
        minimum=minimum,
        maximum=maximum,
        relative_range=relative_range,
        start_end_difference=estimates[-1] - estimates[0],
        std=estimates.std(axis=0, ddof=1) if n_cycles > 1 else np.zeros(estimates.shape[1]),
        n_cycles=n_cycles,
    )


@dataclass(frozen=True)
class ValidationReport:
    """Per-joint prediction quality on one data segment; arrays of shape (n,).

    Attributes
    ----------
    rms : RMS error [N m]. rsd : relative standard deviation [-].
    residual_std : residual standard deviation [N m]. relative_rmsd : RSD over moving
    samples [-]. n_samples : N. n_moving : samples per joint counted by relative_rmsd.
    speed_threshold : [rad/s].
    """

    rms: np.ndarray
    rsd: np.ndarray
    residual_std: np.ndarray
    relative_rmsd: np.ndarray
    n_samples: int
    n_moving: np.ndarray
    speed_threshold: float
    joint_names: tuple[str, ...] | None = None

    def to_dict(self) -> dict:
        """Plain lists (YAML/JSON friendly); nan/inf stay floats."""
        return {
            "joint_names": None if self.joint_names is None else list(self.joint_names),
            "n_samples": self.n_samples,
            "speed_threshold": self.speed_threshold,
            "rms": self.rms.tolist(),
            "rsd": self.rsd.tolist(),
            "residual_std": self.residual_std.tolist(),
            "relative_rmsd": self.relative_rmsd.tolist(),
            "n_moving": self.n_moving.tolist(),
        }


def validation_report(tau_hat, tau, qd, speed_threshold: float = 0.0, exclude: str = "joint",
                      joint_names=None) -> ValidationReport:
    """All metrics of one prediction.

    Parameters
    ----------
    tau_hat, tau : array_like, shape (N, n)
        Predicted and measured torques [N m].
    qd : array_like, shape (N, n)
        Joint velocities [rad/s] for the relative RMSD.
    speed_threshold, exclude
        As in :func:`relative_rmsd`.
    joint_names : sequence of str, length n, optional
    """
    return prediction_report([(tau_hat, tau, qd)], speed_threshold, exclude, joint_names)


def prediction_report(parts, speed_threshold: float = 0.0, exclude: str = "joint",
                      joint_names=None) -> ValidationReport:
    """:func:`validation_report` of the samples of ``parts``, ``(tau_hat, tau, qd)`` (N_i, n) each (arrays or
    StoredColumns: :mod:`robot_dynid.stored_columns`), taken together: their sums added a piece at a time, the
    residual's variance by pairwise combination (Chan et al.), so no part is held whole."""
    validators.positive(speed_threshold, "speed_threshold", DataError, "rad/s", allow_zero=True)
    if exclude not in _EXCLUDE_MODES:
        raise DataError(f"exclude must be one of {_EXCLUDE_MODES}, got {exclude!r}")
    sums = None
    for tau_hat, tau, qd in parts:
        stored = any(map(is_stored, (tau_hat, tau, qd)))       # arrays: one piece, the numbers of the whole
        for start, stop in piece_ranges(len(tau)) if stored else [(0, len(tau))]:
            piece_hat, piece = _check_prediction(np.asarray(tau_hat[start:stop]), np.asarray(tau[start:stop]))
            moving = moving_mask(np.asarray(qd[start:stop]), speed_threshold, exclude)
            sums = _PredictionSums.of(piece_hat, piece, moving) if sums is None else \
                sums.combined(_PredictionSums.of(piece_hat, piece, moving))
    if sums is None:
        raise DataError("no prediction to score")
    if joint_names is not None:
        joint_names = tuple(joint_names)
        if len(joint_names) != sums.count_moving.size:
            raise DataError(f"joint_names has {len(joint_names)} entries, expected n = {sums.count_moving.size}")
    return ValidationReport(
        rms=sums.rms(),
        rsd=sums.rsd(),
        residual_std=sums.residual_std(),
        relative_rmsd=sums.relative_rmsd(),
        n_samples=sums.n,
        n_moving=sums.count_moving,
        speed_threshold=float(speed_threshold),
        joint_names=joint_names,
    )


@dataclass(frozen=True)
class _PredictionSums:
    """Per-joint sums of a prediction's samples: the error ``e`` squared, its mean and spread about it
    (``sum (e - mean)^2``), the torque squared, and over the moving samples the error and torque squared; the
    metrics (module docstring) are defined from them, here only."""

    n: int
    error_square: np.ndarray
    error_mean: np.ndarray
    error_spread: np.ndarray
    torque_square: np.ndarray
    moving_error_square: np.ndarray
    moving_torque_square: np.ndarray
    count_moving: np.ndarray

    @classmethod
    def of(cls, tau_hat, tau, moving=None) -> "_PredictionSums":
        """The sums of ``tau_hat`` and ``tau`` (N, n), N >= 1 (checked), ``moving`` (N, n) the samples that count
        for the relative RMSD (default all)."""
        error = tau_hat - tau
        mean = np.mean(error, axis=0)
        error_square, torque_square = np.sum(error**2, axis=0), np.sum(tau**2, axis=0)
        if moving is None:
            moving_sums = error_square, torque_square, np.full(tau.shape[1], tau.shape[0])
        else:
            moving_sums = (np.sum(np.where(moving, error, 0.0)**2, axis=0),
                           np.sum(np.where(moving, tau, 0.0)**2, axis=0), np.count_nonzero(moving, axis=0))
        return cls(int(error.shape[0]), error_square, mean, np.sum((error - mean)**2, axis=0), torque_square,
                   *moving_sums)

    def combined(self, other: "_PredictionSums") -> "_PredictionSums":
        n = self.n + other.n
        delta = other.error_mean - self.error_mean
        mean = self.error_mean + delta * (other.n / n)
        spread = self.error_spread + other.error_spread + delta**2 * (self.n * other.n / n)
        return _PredictionSums(n, self.error_square + other.error_square, mean, spread,
                               self.torque_square + other.torque_square,
                               self.moving_error_square + other.moving_error_square,
                               self.moving_torque_square + other.moving_torque_square,
                               self.count_moving + other.count_moving)

    def rms(self) -> np.ndarray:
        """``sqrt(mean e^2)`` [N m]."""
        return np.sqrt(self.error_square / self.n)

    def rsd(self) -> np.ndarray:
        """``sqrt(sum e^2 / sum tau^2)`` [1]; inf for a joint whose torque is all zero."""
        return _ratio(self.error_square, self.torque_square)

    def residual_std(self) -> np.ndarray:
        """``std(e, ddof=1)`` [N m]; DataError below 2 samples."""
        if self.n < 2:
            raise DataError(f"residual_std needs at least 2 samples, got {self.n}")
        return np.sqrt(self.error_spread / (self.n - 1))

    def relative_rmsd(self) -> np.ndarray:
        """:meth:`rsd` over the moving samples [1]; nan for a joint with none."""
        return np.where(self.count_moving > 0, _ratio(self.moving_error_square, self.moving_torque_square), np.nan)


def cross_validation(fit, segments, speed_threshold: float = 0.0, exclude: str = "joint",
                     joint_names=None) -> list[list[ValidationReport]]:
    """Parameters fitted on each segment predict every segment (thesis cross-verification).

    Parameters
    ----------
    fit : callable
        ``fit(segment) -> predict`` with ``predict(segment) -> tau_hat`` (N, n) [N m].
    segments : sequence
        Objects with ``tau`` (N, n) [N m] and ``qd`` (N, n) [rad/s] attributes
        (e.g. :class:`robot_dynid.recordings.recording.Recording` segments).
    speed_threshold, exclude, joint_names
        As in :func:`validation_report`.

    Returns
    -------
    list of list of ValidationReport
        ``reports[i][k]``: parameters from segment i predicting segment k; the diagonal is
        self-verification.
    """
    segments = list(segments)
    if not segments:
        raise DataError("segments is empty")
    predictors = [fit(segment) for segment in segments]
    return [[validation_report(predict(segment), segment.tau, segment.qd, speed_threshold,
                               exclude, joint_names) for segment in segments]
            for predict in predictors]


def self_validation(fit, segments, speed_threshold: float = 0.0, exclude: str = "joint",
                    joint_names=None) -> list[ValidationReport]:
    """Fit and test on the same segment, for each segment (thesis self-verification).

    Arguments as in :func:`cross_validation`; returns one report per segment.
    """
    segments = list(segments)
    if not segments:
        raise DataError("segments is empty")
    return [validation_report(fit(segment)(segment), segment.tau, segment.qd, speed_threshold,
                              exclude, joint_names) for segment in segments]
