"""Least-squares estimators of the parameters of ``tau = Y(q, qd, qdd) @ theta``.

- :func:`ols`: ordinary least squares in memory, ``theta = argmin ||W theta - tau||``.
- :func:`wls`: weighted least squares, each joint's rows weighted by ``1 / sigma_j^2`` with
  ``sigma_j`` estimated from a first OLS pass: ``theta = (W^T S^-1 W)^-1 W^T S^-1 tau``.
- :class:`LeastSquaresAccumulator`: the same two estimators with bounded memory, from per-joint
  Gram matrices accumulated chunk by chunk.
- :class:`QRAccumulator`: per-joint triangular factors of the same problem, chunk by chunk (for
  problems too ill-conditioned for the Gram matrices: ``GRAM_CONDITION_LIMIT`` of
  :mod:`~robot_dynid.estimation.physical_consistency`).
- :class:`RecursiveLeastSquares`: recursive least squares with a forgetting factor.
- :class:`BatchLeastSquares`: OLS or WLS as an estimator object, like :class:`RecursiveLeastSquares`
  (settings in ``__init__``, ``fit(Y, tau)`` returns it with ``theta_``).

:data:`ESTIMATORS` is the registry every caller (the identification pipeline, the stream, the model
file, the command line, the nodes, the cylinders) reads the methods from and builds its estimator
with (:func:`build_estimator`): a new method is registered here, with its factory and options.

``Y`` batches are (N, n, p); stacked, ``W`` is (N n, p) sample-major (row ``k n + j`` is sample
k, joint j). Columns are scaled to unit Euclidean norm before solving, ``W_s = W D^-1`` with
``D = diag(||w_c||)``; the condition number reported is that of ``W_s``. A problem is declared
rank deficient when a singular value of ``W_s`` is below ``rank_tolerance`` times the largest.

Noise model (Gautier): the residual of joint j has standard deviation
``sigma_j^2 = ||r_j||^2 / (N - p_j)``, ``p_j`` the number of parameters whose column is not
identically zero in joint j's rows. Every fit reports three covariances
(:mod:`~robot_dynid.estimation.covariance`): ``white`` (OLS ``sigma^2 (W^T W)^-1`` with
``sigma^2 = ||r||^2 / (N n - p)``; WLS ``(W^T S^-1 W)^-1`` with ``S`` the diagonal of the first-pass
``sigma_j^2``), ``per_joint`` (a sandwich with each joint's own residual variance) and ``block``
(a jackknife over time blocks, robust to correlated residuals and model error). The result's
``covariance`` and ``std`` are the ``block`` one where the samples came with stamps (``phase``) and
make enough blocks, else the ``per_joint`` one; ``uncertainty`` holds all three.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import numpy as np

from robot_dynid import _online_kernel, validators
from robot_dynid.errors import DataError, DynIdError, IdentificationError
from robot_dynid.estimation.covariance import BlockEquations, Uncertainty, fit_uncertainty

__all__ = ["RANK_TOLERANCE", "LeastSquaresResult", "column_scales", "scaled_singular_values", "scaled_condition_number",
           "check_overdetermined", "ols", "wls", "normal_sums", "LeastSquaresAccumulator", "QRAccumulator",
           "RecursiveLeastSquares", "BatchLeastSquares", "ESTIMATOR_SETTINGS", "Estimator", "ESTIMATORS", "METHODS",
           "BATCH_METHODS", "METHOD_NAMES", "RECURSIVE_METHOD", "estimator", "build_estimator"]

logger = logging.getLogger(__name__)

RANK_TOLERANCE = 1e-7
"""Default ratio ``s_min / s_max`` of the scaled regressor's singular values below which a
problem is rank deficient (the Gram path resolves ratios down to about 1e-8)."""

_NULL_SPACE_COMPONENT = 1e-4


def _solve_positive_definite(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """``matrix^-1 rhs`` for a symmetric positive definite ``matrix`` (m, m), ``rhs`` (m, k):
    LAPACK ``dposv`` (Cholesky); ``numpy.linalg.solve`` (LU) when the factorisation fails."""
    from scipy.linalg import lapack                   # here: scipy.linalg costs a command's start 0.2 s
    _, solution, info = lapack.dposv(matrix, rhs)
    return solution if info == 0 else np.linalg.solve(matrix, rhs)


@dataclass(frozen=True)
class LeastSquaresResult:
    """Estimate of ``theta`` with its uncertainty and fit diagnostics.

    Attributes
    ----------
    theta : ndarray, shape (p,)
        Estimated parameters (units of the regressor columns).
    covariance : ndarray, shape (p, p)
        Parameter covariance: ``uncertainty.covariance`` (``block``, else ``per_joint``).
    std : ndarray, shape (p,)
        Standard deviation of each parameter, ``sqrt(diag(covariance))``.
    relative_std : ndarray, shape (p,)
        ``std / |theta|`` [fraction], ``inf`` where ``theta == 0``.
    noise_std : ndarray, shape (n,)
        ``sigma_j`` [N m] per joint: from the residuals for OLS, the first-pass values used as
        weights for WLS.
    residual_rms : ndarray, shape (n,)
        RMS of the residual ``tau - Y theta`` per joint [N m].
    condition_number : float
        Condition number of the column-scaled (and, for WLS, weighted) regressor.
    n_samples : int
        N, samples (each with n joint equations).
    dof : int
        Degrees of freedom ``N n - p``.
    method : str
        ``"ols"`` or ``"wls"``.
    uncertainty : Uncertainty
        The three covariances (:mod:`~robot_dynid.estimation.covariance`): which one ``covariance`` is
        (``std_method``), the ``white`` and ``per_joint`` std beside it, the blocks.
    """

    theta: np.ndarray
    covariance: np.ndarray
    std: np.ndarray
    relative_std: np.ndarray
    noise_std: np.ndarray
    residual_rms: np.ndarray
    condition_number: float
    n_samples: int
    dof: int
    method: str
    uncertainty: Uncertainty

    @property
    def std_method(self) -> str:
        """Which covariance ``covariance`` is (:data:`~robot_dynid.estimation.covariance.STD_METHODS`)."""
        return self.uncertainty.std_method

    def to_dict(self) -> dict:
        """Plain lists and numbers (YAML/JSON friendly)."""
        return {
            "method": self.method,
            "theta": self.theta.tolist(),
            "std": self.std.tolist(),
            "std_method": self.std_method,
            "white_std": self.uncertainty.white_std.tolist(),
            "per_joint_std": self.uncertainty.per_joint_std.tolist(),
            "relative_std": self.relative_std.tolist(),
            "covariance": self.covariance.tolist(),
            "noise_std": self.noise_std.tolist(),
            "residual_rms": self.residual_rms.tolist(),
            "condition_number": float(self.condition_number),
            "n_samples": int(self.n_samples),
            "dof": int(self.dof),
        }


def column_scales(squared_norms: np.ndarray) -> np.ndarray:
    """Column scale factors ``||w_c||`` from squared column norms; 1 for zero columns.

    Parameters
    ----------
    squared_norms : ndarray, shape (p,)
        ``sum_rows W[:, c]^2``.

    Returns
    -------
    ndarray, shape (p,)
        Divisors that give the columns unit norm (zero columns stay zero).
    """
    scales = np.sqrt(np.asarray(squared_norms, dtype=float))
    scales[scales == 0.0] = 1.0
    return scales


def scaled_singular_values(W) -> np.ndarray:
    """Singular values of ``W`` with its columns scaled to unit norm, largest first.

    Parameters
    ----------
    W : array_like, shape (M, p)
        Stacked regressor.
    """
    W = np.asarray(W, dtype=float)
    return np.linalg.svd(W / column_scales(np.sum(W**2, axis=0)), compute_uv=False)


def scaled_condition_number(W) -> float:
    """Condition number ``s_max / s_min`` of ``W`` with unit-norm columns.

    Parameters
    ----------
    W : array_like, shape (M, p)
        Stacked regressor (M >= p rows).

    Returns
    -------
    float
        ``inf`` when numerically singular (``s_min <= max(M, p) eps s_max``, as numpy's
        ``matrix_rank``) or when M < p.
    """
    W = np.asarray(W, dtype=float)
    singular_values = scaled_singular_values(W)
    if (W.shape[0] < W.shape[1] or singular_values.size == 0
            or singular_values[-1] <= max(W.shape) * np.finfo(float).eps * singular_values[0]):
        return float("inf")
    return float(singular_values[0] / singular_values[-1])


def _check_regression_data(Y, tau, n_joints: int | None = None,
                           n_parameters: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    Y = validators.array(Y, "Y", shape=(None, n_joints, n_parameters), axes=("samples", "joints", "parameters"))
    tau = validators.array(tau, "tau", shape=Y.shape[:2], axes=("samples", "joints"), unit="N m")
    return Y, tau


def _describe_parameters(indices, parameter_names) -> str:
    indices = [int(i) for i in indices]
    if parameter_names is None:
        return f"indices {indices}"
    return f"indices {indices} ({', '.join(parameter_names[i] for i in indices)})"


def _check_rank(singular_values, right_vectors, rank_tolerance, parameter_names) -> None:
    """Raise IdentificationError naming the parameters in the numerical null space."""
    deficient = singular_values < rank_tolerance * singular_values[0]
    if singular_values[0] == 0.0:
        deficient[:] = True
    if not np.any(deficient):
        return
    null_space = np.abs(right_vectors[:, deficient])
    involved = np.flatnonzero(np.any(null_space > _NULL_SPACE_COMPONENT, axis=1))
    rank = int(np.sum(~deficient))
    parameters = _describe_parameters(involved, parameter_names)
    raise IdentificationError(
        f"regressor is rank deficient (rank {rank} of {singular_values.size} after column "
        f"scaling, tolerance {rank_tolerance:g}): parameters {parameters} are not "
        "identifiable separately from this data; excite more or use base parameters")


def _check_names(parameter_names, n_parameters):
    if parameter_names is None:
        return None
    parameter_names = tuple(parameter_names)
    if len(parameter_names) != n_parameters:
        raise DynIdError(f"parameter_names has {len(parameter_names)} entries, "
                         f"expected p = {n_parameters}")
    return parameter_names


def _noise_dof(equations, active_per_joint: np.ndarray) -> np.ndarray:
    """Per joint: its equations (samples, or those left in, (n,)) less the parameters acting on it."""
    equations = np.broadcast_to(equations, active_per_joint.shape)
    dof = equations - active_per_joint
    bad = np.flatnonzero(dof <= 0)
    if bad.size:
        j = int(bad[0])
        raise IdentificationError(
            f"joint {j + 1}: {int(equations[j])} samples for {int(active_per_joint[j])} parameters "
            "acting on it; need more samples than parameters")
    return dof


def _weights_from_noise(noise_std: np.ndarray) -> np.ndarray:
    """Per-joint weights ``1 / sigma_j^2``, floored where a joint fits exactly."""
    largest = float(np.max(noise_std))
    if largest == 0.0:
        logger.warning("every joint fits exactly; WLS falls back to equal weights")
        return np.ones_like(noise_std)
    floor = 1e-6 * largest
    if np.any(noise_std < floor):
        logger.warning("joints %s fit almost exactly; their sigma is floored at %g N m",
                       (np.flatnonzero(noise_std < floor) + 1).tolist(), floor)
    return 1.0 / np.maximum(noise_std, floor) ** 2


@dataclass(frozen=True)
class _ScaledDecomposition:
    """``W_w D^-1 = U diag(s) V^T`` (weighted, column-scaled regressor): scales D, s, V."""

    scales: np.ndarray
    singular_values: np.ndarray
    right_vectors: np.ndarray

    def inverse_gram(self) -> np.ndarray:
        """``(W_w^T W_w)^-1`` in the unscaled parameters."""
        scaled = (self.right_vectors / self.singular_values**2) @ self.right_vectors.T
        return scaled / np.outer(self.scales, self.scales)

    def gram(self) -> np.ndarray:
        """``W_w^T W_w`` in the unscaled parameters."""
        scaled = (self.right_vectors * self.singular_values**2) @ self.right_vectors.T
        return scaled * np.outer(self.scales, self.scales)


@dataclass(frozen=True)
class _CovarianceData:
    """What the covariances beyond ``white`` need: per-joint Gram matrices ``grams`` (n, p, p) and the block
    equations (or None)."""

    grams: np.ndarray
    blocks: BlockEquations | None
    rank_tolerance: float


def _make_result(theta, decomposition, covariance_factor, noise_std, residual_ss, n_samples,
                 method, joint_weights, joint_variances, data: _CovarianceData, equations=None) -> LeastSquaresResult:
    n_parameters = theta.size
    equations = np.broadcast_to(n_samples if equations is None else equations, noise_std.shape)
    inverse = decomposition.inverse_gram()
    white = covariance_factor * inverse
    white = 0.5 * (white + white.T)
    uncertainty = fit_uncertainty(white, inverse, decomposition.gram(), theta, joint_weights, joint_variances,
                                  data.grams, data.blocks, n_samples, data.rank_tolerance)
    covariance = uncertainty.covariance
    std = uncertainty.std
    with np.errstate(divide="ignore"):
        relative_std = np.where(theta == 0.0, np.inf, std / np.abs(theta))
    singular_values = decomposition.singular_values
    result = LeastSquaresResult(
        theta=theta,
        covariance=covariance,
        std=std,
        relative_std=relative_std,
        noise_std=noise_std,
        residual_rms=np.sqrt(residual_ss / equations),
        condition_number=float(singular_values[0] / singular_values[-1]),
        n_samples=int(n_samples),
        dof=int(np.sum(equations) - n_parameters),
        method=method,
        uncertainty=uncertainty,
    )
    logger.debug("%s: %d samples, %d parameters, condition number %.3g, residual rms %s",
                 method, n_samples, n_parameters, result.condition_number,
                 np.array2string(result.residual_rms, precision=4))
    return result


def check_overdetermined(n_samples: int, n_joints: int, n_parameters: int) -> None:
    """IdentificationError unless ``n_samples * n_joints`` equations outnumber ``n_parameters`` unknowns."""
    if n_samples * n_joints <= n_parameters:
        raise IdentificationError(
            f"{n_samples} samples x {n_joints} joints = {n_samples * n_joints} equations for "
            f"{n_parameters} parameters; need more equations than parameters")


def _dense_fit(Y, tau, joint_weights, rank_tolerance, parameter_names):
    """Weighted, column-scaled lstsq. Returns theta, decomposition, per-joint SSR."""
    n_samples, n_joints, n_parameters = Y.shape
    row_weights = np.sqrt(joint_weights)
    W = (Y * row_weights[None, :, None]).reshape(n_samples * n_joints, n_parameters)
    target = (tau * row_weights[None, :]).reshape(-1)
    scales = column_scales(np.sum(W**2, axis=0))
    left, singular_values, right_t = np.linalg.svd(W / scales, full_matrices=False)
    decomposition = _ScaledDecomposition(scales, singular_values, right_t.T)
    _check_rank(singular_values, decomposition.right_vectors, rank_tolerance, parameter_names)
    # theta = D^-1 V diag(1/s) U^T y  (the minimum-norm lstsq solution of the scaled system)
    theta = (decomposition.right_vectors @ ((left.T @ target) / singular_values)) / scales
    residual = tau - np.einsum("kjp,p->kj", Y, theta)
    return theta, decomposition, np.sum(residual**2, axis=0)


def _solve(fit, method, n_samples, active_per_joint, data: _CovarianceData, iterations=1,
           equations=None) -> LeastSquaresResult:
    """OLS or WLS through ``fit(joint_weights) -> (theta, decomposition, residual_ss)``.

    WLS re-estimates ``sigma_j`` from the previous pass's residuals ``iterations`` times (the
    first pass is OLS). The ``per_joint`` and ``block`` covariances use the final residuals' per-joint
    variances ``s_j^2 = ||r_j||^2 / (N_j - p_j)`` and the final weights, ``N_j`` joint j's ``equations`` (n,)
    (default: every sample's).
    """
    n_joints = active_per_joint.size
    equations = np.broadcast_to(n_samples if equations is None else equations, (n_joints,))
    noise_dof = _noise_dof(equations, active_per_joint)
    theta, decomposition, residual_ss = fit(np.ones(n_joints))
    noise_std = np.sqrt(residual_ss / noise_dof)
    if method == "ols":
        sigma2 = float(np.sum(residual_ss)) / (np.sum(equations) - theta.size)
        return _make_result(theta, decomposition, sigma2, noise_std, residual_ss, n_samples, "ols",
                            np.ones(n_joints), noise_std**2, data, equations)
    for _ in range(iterations):
        weights = _weights_from_noise(noise_std)
        theta, decomposition, residual_ss = fit(weights)
        noise_std = np.sqrt(residual_ss / noise_dof)
    return _make_result(theta, decomposition, 1.0, 1.0 / np.sqrt(weights), residual_ss,
                        n_samples, "wls", weights, noise_std**2, data, equations)


def _check_count(name: str, value) -> int:
    return validators.count(value, name, DynIdError)


def _fit_in_memory(Y, tau, method, parameter_names, rank_tolerance,
                   iterations=1, phase=None) -> LeastSquaresResult:
    Y, tau = _check_regression_data(Y, tau)
    n_samples, n_joints, n_parameters = Y.shape
    parameter_names = _check_names(parameter_names, n_parameters)
    check_overdetermined(n_samples, n_joints, n_parameters)
    active_per_joint = np.count_nonzero(np.any(Y != 0.0, axis=0), axis=1)
    grams = np.array([Y[:, j, :].T @ Y[:, j, :] for j in range(n_joints)])
    blocks = None
    if phase is not None:
        phase = validators.array(phase, "phase", shape=(n_samples,), axes=("samples",), unit="s")
        blocks = LeastSquaresAccumulator(n_joints, n_parameters).add(Y, tau, phase).blocks_
    return _solve(lambda weights: _dense_fit(Y, tau, weights, rank_tolerance, parameter_names),
                  method, n_samples, active_per_joint, _CovarianceData(grams, blocks, rank_tolerance),
                  _check_count("iterations", iterations))


def ols(Y, tau, parameter_names=None,
        rank_tolerance: float = RANK_TOLERANCE, phase=None) -> LeastSquaresResult:
    """Ordinary least squares, in memory, by SVD of the column-scaled regressor.

    Parameters
    ----------
    Y : array_like, shape (N, n, p)
        Regressor batch.
    tau : array_like, shape (N, n)
        Measured joint torques [N m].
    parameter_names : sequence of str, length p, optional
        Used in error messages only.
    rank_tolerance : float
        Relative singular-value threshold of the scaled regressor for rank deficiency.
    phase : array_like, shape (N,), optional
        [s] each sample's time since the start of its run
        (:func:`~robot_dynid.estimation.covariance.phase_times`): the time blocks of the robust
        covariance; without it the ``per_joint`` covariance is reported.

    Returns
    -------
    LeastSquaresResult
        ``covariance``: the ``block`` covariance (with ``phase``) or the ``per_joint`` one
        ``A^-1 (sum_j s_j^2 G_j) A^-1``; ``uncertainty.white_std`` from ``sigma^2 (W^T W)^-1``,
        ``sigma^2 = ||r||^2 / (N n - p)``.

    Raises
    ------
    IdentificationError
        Rank deficiency (naming the parameters involved) or too few samples.
    """
    return _fit_in_memory(Y, tau, "ols", parameter_names, rank_tolerance, phase=phase)


def wls(Y, tau, parameter_names=None, rank_tolerance: float = RANK_TOLERANCE,
        iterations: int = 1, phase=None) -> LeastSquaresResult:
    """Weighted least squares with per-joint noise levels from a first OLS pass.

    ``theta = (W^T S^-1 W)^-1 W^T S^-1 tau``, ``S = diag(sigma_j^2)`` repeated per sample,
    ``sigma_j^2 = ||r_j^OLS||^2 / (N - p_j)``; ``white`` covariance ``(W^T S^-1 W)^-1``, the
    ``per_joint`` and ``block`` ones (reported, as in :func:`ols`) with the same weights.

    With ``iterations == 1`` this is the 3-DOF paper's method. The OLS residual of a quiet
    joint also carries the parameter error caused by noisy joints, so its ``sigma_j`` is
    overestimated and the reported covariance is conservative; ``iterations > 1``
    re-estimates ``sigma_j`` from the previous WLS residuals (iteratively re-weighted LS),
    which removes most of that bias. The result's ``noise_std`` holds the sigma_j used as
    weights in the final pass. Other arguments and errors as in :func:`ols`.
    """
    return _fit_in_memory(Y, tau, "wls", parameter_names, rank_tolerance, iterations, phase)


def normal_sums(Y: np.ndarray, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per-joint normal equations of a chunk ``Y`` (N, n, p), ``tau`` (N, n) [N m]: ``gram`` (n, p, p) with
    ``Y_j^T Y_j``, ``moment`` (n, p) with ``Y_j^T tau_j`` and the torques' squares summed (n,) [N^2 m^2]."""
    n, p = Y.shape[1], Y.shape[2]
    gram, moment = np.empty((n, p, p)), np.empty((n, p))
    for j in range(n):  # one BLAS product per joint (BENCHMARKS.md: einsum is far slower)
        rows = Y[:, j, :]
        gram[j] = rows.T @ rows
        moment[j] = tau[:, j] @ rows
    return gram, moment, np.sum(tau**2, axis=0)


class LeastSquaresAccumulator:
    """OLS / WLS with bounded memory: per-joint sufficient statistics, added chunk by chunk.

    For each joint j it keeps ``G_j = W_j^T W_j`` (p, p), ``b_j = W_j^T tau_j`` (p,),
    ``c_j = tau_j^T tau_j`` and the sample count, where ``W_j`` (N, p) are joint j's rows.
    WLS then needs no second pass: ``W^T S^-1 W = sum_j G_j / sigma_j^2``. The solve scales
    the Gram matrix to unit diagonal and uses its symmetric eigendecomposition; the condition
    number reported is ``sqrt(cond(scaled Gram))`` = that of the scaled regressor.

    Samples added with their ``phase`` [s] (time since the start of their run,
    :func:`~robot_dynid.estimation.covariance.phase_times`) are also summed per time block
    (``blocks_``, :class:`~robot_dynid.estimation.covariance.BlockEquations`): the robust ``block``
    covariance of :meth:`solve` comes from them.

    Memory is O(n p^2) (times at most :data:`~robot_dynid.estimation.covariance.MAX_BLOCKS` with
    blocks), independent of the number of samples. Residual sums of squares come
    from ``c_j - 2 theta^T b_j + theta^T G_j theta`` and lose relative precision when the fit
    is nearly exact (the residual below about 1e-6 of the torque).

    Parameters
    ----------
    n_joints : int
        n.
    n_parameters : int
        p.
    blocks : bool
        Keep the time blocks of samples added with a phase (False: only the totals, e.g. for
        cross-validation folds).
    """

    def __init__(self, n_joints: int, n_parameters: int, blocks: bool = True) -> None:
        self.n_joints = _check_count("n_joints", n_joints)
        self.n_parameters = _check_count("n_parameters", n_parameters)
        self.gram_ = np.zeros((self.n_joints, self.n_parameters, self.n_parameters))
        self.moment_ = np.zeros((self.n_joints, self.n_parameters))
        self.torque_square_sum_ = np.zeros(self.n_joints)
        self.n_samples_ = 0
        self.equations_ = np.zeros(self.n_joints, dtype=np.int64)
        self.blocks_ = BlockEquations(self.n_joints, self.n_parameters) if blocks else None

    @property
    def n_samples(self) -> int:
        """Samples added so far (each with n joint equations)."""
        return self.n_samples_

    def add(self, Y, tau, phase=None, kept=None) -> "LeastSquaresAccumulator":
        """Add a chunk.

        Parameters
        ----------
        Y : array_like, shape (N, n, p)
            Regressor chunk.
        tau : array_like, shape (N, n)
            Torques [N m].
        phase : array_like, shape (N,), optional
            [s] each sample's time since the start of its run: its time block (class docstring).
        kept : array_like of bool, shape (N, n), optional
            The joint equations to add (default all): the others are left out and not counted.
        """
        Y, tau = _check_regression_data(Y, tau, self.n_joints, self.n_parameters)
        if kept is not None:
            kept = np.asarray(kept, dtype=bool)
            if kept.shape != tau.shape:
                raise DataError(f"kept must have the torques' shape {tau.shape}, got {kept.shape}")
            Y, tau = Y * kept[:, :, None], tau * kept
        if phase is None or self.blocks_ is None:
            self._add_rows(Y, tau, None, kept)
            return self
        phase = validators.array(phase, "phase", shape=(Y.shape[0],), axes=("samples",), unit="s")
        for key, start, stop in self.blocks_.runs(phase):
            self._add_rows(Y[start:stop], tau[start:stop], key, None if kept is None else kept[start:stop])
        return self

    def _add_rows(self, Y, tau, key, kept=None):
        self.add_sums(*normal_sums(Y, tau), Y.shape[0], key, None if kept is None else np.count_nonzero(kept, axis=0))

    def add_sums(self, gram, moment, torque_square_sum, count: int, block: int | None = None,
                 equations=None) -> None:
        """Add sums computed elsewhere (the fused kernel's): ``gram`` (n, p, p), ``moment`` (n, p),
        ``torque_square_sum`` (n,) [N^2 m^2] of ``count`` samples, all in time block ``block``
        (an index of ``blocks_``; None: in none); ``equations`` (n,): how many of them each joint's sums hold
        (default ``count``: none left out)."""
        self.gram_ += gram
        self.moment_ += moment
        self.torque_square_sum_ += torque_square_sum
        self.n_samples_ += int(count)
        self.equations_ += int(count) if equations is None else np.asarray(equations, dtype=np.int64)
        if block is not None and self.blocks_ is not None:
            self.blocks_.add(block, gram, moment, torque_square_sum, count)

    def merge(self, other: "LeastSquaresAccumulator") -> "LeastSquaresAccumulator":
        """Add the statistics of another accumulator of the same shape (e.g. another cycle)."""
        if (other.n_joints, other.n_parameters) != (self.n_joints, self.n_parameters):
            raise DataError(f"cannot merge an accumulator of (n, p) = "
                            f"({other.n_joints}, {other.n_parameters}) into "
                            f"({self.n_joints}, {self.n_parameters})")
        self.gram_ += other.gram_
        self.moment_ += other.moment_
        self.torque_square_sum_ += other.torque_square_sum_
        self.n_samples_ += other.n_samples_
        self.equations_ += other.equations_
        if self.blocks_ is not None and other.blocks_ is not None:
            self.blocks_.merge(other.blocks_)
        return self

    def with_fixed(self, free, values) -> "LeastSquaresAccumulator":
        """The normal equations of the parameters ``free`` (indices) with the others held at ``values`` (p,)
        (their torque moved to the measured side), time blocks included."""
        free = np.asarray(free)
        fixed = np.setdiff1d(np.arange(self.n_parameters), free)
        x = np.asarray(values, dtype=float)[fixed]
        reduced = LeastSquaresAccumulator(self.n_joints, free.size, blocks=False)
        reduced.gram_ = self.gram_[:, free][:, :, free].copy()
        reduced.moment_ = self.moment_[:, free] - self.gram_[:, free][:, :, fixed] @ x
        reduced.torque_square_sum_ = (self.torque_square_sum_ - 2.0 * self.moment_[:, fixed] @ x
                                      + np.einsum("p,jpq,q->j", x, self.gram_[:, fixed][:, :, fixed], x))
        reduced.n_samples_ = self.n_samples_
        reduced.equations_ = self.equations_.copy()
        reduced.blocks_ = None if self.blocks_ is None else self.blocks_.with_fixed(free, values)
        return reduced

    def _gram_fit(self, joint_weights, rank_tolerance, parameter_names):
        gram = np.einsum("j,jpq->pq", joint_weights, self.gram_)
        moment = joint_weights @ self.moment_
        scales = column_scales(np.diag(gram).copy())
        scaled_gram = gram / np.outer(scales, scales)
        eigenvalues, eigenvectors = np.linalg.eigh(0.5 * (scaled_gram + scaled_gram.T))
        order = np.argsort(eigenvalues)[::-1]
        singular_values = np.sqrt(np.clip(eigenvalues[order], 0.0, None))
        decomposition = _ScaledDecomposition(scales, singular_values, eigenvectors[:, order])
        _check_rank(singular_values, decomposition.right_vectors, rank_tolerance, parameter_names)
        # theta = D^-1 V diag(1/s^2) V^T D^-1 b   (normal equations of the scaled system)
        theta = decomposition.inverse_gram() @ moment
        return theta, decomposition, self.residual_sum_of_squares(theta)

    def eliminate(self, n_keep: int):
        """Normal equations of the first ``n_keep`` parameters with the others minimised out.

        The other (nuisance) parameters must each appear in one joint's equations only (e.g. a
        torque offset per joint); per joint, with ``G = [[A, B], [B^T, C]]``, ``b = [b1, b2]``,
        the nuisance ``e = C^+ (b2 - B^T x)`` minimises the residual for given ``x``, leaving
        ``A - B C^+ B^T``, ``b1 - B C^+ b2`` and ``c - b2^T C^+ b2``.

        Returns
        -------
        reduced : LeastSquaresAccumulator
            Over ``n_keep`` parameters, same joints and sample count.
        back_substitute : callable
            ``x`` (n_keep,) -> the nuisance parameters (p - n_keep,) that go with it.
        """
        keep = slice(0, n_keep)
        rest = slice(n_keep, self.n_parameters)
        owners = np.count_nonzero(np.diagonal(self.gram_, axis1=1, axis2=2)[:, rest] > 0.0, axis=0)
        if np.any(owners > 1):
            raise DynIdError(f"nuisance parameters {np.flatnonzero(owners > 1) + n_keep} appear in several "
                             "joints' equations; they cannot be eliminated joint by joint")
        reduced = LeastSquaresAccumulator(self.n_joints, n_keep, blocks=False)
        inverses = []
        for j in range(self.n_joints):
            A, B, C = self.gram_[j][keep, keep], self.gram_[j][keep, rest], self.gram_[j][rest, rest]
            b1, b2 = self.moment_[j][keep], self.moment_[j][rest]
            C_inverse = np.linalg.pinv(C)
            inverses.append((B, b2, C_inverse))
            reduced.gram_[j] = A - B @ C_inverse @ B.T
            reduced.moment_[j] = b1 - B @ C_inverse @ b2
            reduced.torque_square_sum_[j] = self.torque_square_sum_[j] - b2 @ C_inverse @ b2
        reduced.n_samples_ = self.n_samples_
        reduced.equations_ = self.equations_.copy()

        def back_substitute(x):
            x = np.asarray(x, dtype=float)
            return sum((C_inverse @ (b2 - B.T @ x) for B, b2, C_inverse in inverses),
                       np.zeros(self.n_parameters - n_keep))

        return reduced, back_substitute

    def residual_sum_of_squares(self, theta) -> np.ndarray:
        """Per-joint ``||tau_j - W_j theta||^2`` [N^2 m^2] of any ``theta`` (p,), no data pass.

        ``c_j - 2 theta^T b_j + theta^T G_j theta``, clipped at 0 (see the class notes on
        precision).
        """
        theta = validators.array(theta, "theta", shape=(self.n_parameters,), axes=("parameters",), finite=False)
        residual_ss = (self.torque_square_sum_ - 2.0 * self.moment_ @ theta
                       + np.einsum("p,jpq,q->j", theta, self.gram_, theta))
        return np.clip(residual_ss, 0.0, None)

    def solve(self, method: str = "ols", parameter_names=None,
              rank_tolerance: float = RANK_TOLERANCE, iterations: int = 1) -> LeastSquaresResult:
        """Solve the accumulated problem; agrees with :func:`ols` / :func:`wls` on the same data (given
        the same phases), covariances included.

        Parameters
        ----------
        method : {"ols", "wls"}
        parameter_names, rank_tolerance
            As in :func:`ols`.
        iterations : int
            WLS re-weighting passes, as in :func:`wls`; no data pass is needed for any.
        """
        if method not in BATCH_METHODS:
            raise DynIdError(f"method must be one of {BATCH_METHODS}, got {method!r}")
        parameter_names = _check_names(parameter_names, self.n_parameters)
        check_overdetermined(self.n_samples_, self.n_joints, self.n_parameters)
        active_per_joint = np.count_nonzero(
            np.diagonal(self.gram_, axis1=1, axis2=2) > 0.0, axis=1)
        return _solve(
            lambda weights: self._gram_fit(weights, rank_tolerance, parameter_names),
            method, self.n_samples_, active_per_joint, _CovarianceData(self.gram_, self.blocks_, rank_tolerance),
            _check_count("iterations", iterations), self.equations_)


class QRAccumulator:
    """Per-joint triangular factors of ``[W_j, tau_j]``, added chunk by chunk (a streaming QR).

    For each joint j an upper-triangular ``F_j`` (p + 1, p + 1) with
    ``F_j^T F_j = [W_j, tau_j]^T [W_j, tau_j]``, updated as ``F_j <- R`` of ``QR([F_j; W_chunk, tau_chunk])``:
    what :class:`LeastSquaresAccumulator` keeps, without squaring the regressor's condition number
    (a solve from ``F`` errs by about ``cond(W) eps``, one from ``G = W^T W`` by ``cond(W)^2 eps``).
    The last ``p - n_keep`` (nuisance) columns are factored first, so that :meth:`factors` can
    minimise them out as :meth:`LeastSquaresAccumulator.eliminate` does. Costs about twice the
    Gram matrices' products.

    Parameters
    ----------
    n_joints, n_parameters : int
        n, p.
    n_keep : int, optional
        Parameters kept by :meth:`factors` (default p).
    """

    def __init__(self, n_joints: int, n_parameters: int, n_keep: int | None = None) -> None:
        self.n_joints = _check_count("n_joints", n_joints)
        self.n_parameters = _check_count("n_parameters", n_parameters)
        self.n_keep = self.n_parameters if n_keep is None else _check_count("n_keep", n_keep)
        if self.n_keep > self.n_parameters:
            raise DynIdError(f"n_keep must be at most n_parameters = {self.n_parameters}, got {self.n_keep}")
        # nuisance columns, then the kept ones, then tau
        self._order = np.r_[np.arange(self.n_keep, self.n_parameters), np.arange(self.n_keep)]
        self.factors_ = np.zeros((self.n_joints, self.n_parameters + 1, self.n_parameters + 1))
        self.n_samples_ = 0

    def add(self, Y, tau) -> "QRAccumulator":
        """Add a chunk: ``Y`` (N, n, p) regressor rows, ``tau`` (N, n) [N m]."""
        Y, tau = _check_regression_data(Y, tau, self.n_joints, self.n_parameters)
        for j in range(self.n_joints):
            stacked = np.vstack([self.factors_[j], np.column_stack([Y[:, j, self._order], tau[:, j]])])
            import scipy.linalg
            triangle = scipy.linalg.qr(stacked, mode="r", check_finite=False)[0]
            self.factors_[j] = 0.0
            rows = min(triangle.shape[0], self.n_parameters + 1)
            self.factors_[j][:rows] = triangle[:rows]
        self.n_samples_ += Y.shape[0]
        return self

    def factors(self) -> np.ndarray:
        """Per joint ``[[R_j, z_j], [0, rho_j]]`` (n, n_keep + 1, n_keep + 1) of the first ``n_keep`` parameters
        with the nuisance ones minimised out: ``min_e ||W_j [x; e] - tau_j||^2 = ||R_j x - z_j||^2 + rho_j^2``."""
        nuisance = self.n_parameters - self.n_keep
        return self.factors_[:, nuisance:, nuisance:].copy()


class RecursiveLeastSquares:
    """Recursive least squares with exponential forgetting (sklearn-style state ``*_``).

    Per update with regressor rows ``Phi`` (m, p), measurement ``y`` (m,), noise covariance
    ``S = diag(noise_variance)`` (identity by default) and forgetting factor ``0 < mu <= 1``::

        K = P Phi^T (mu S + Phi P Phi^T)^-1
        theta += K (y - Phi theta)
        P = (I - K Phi) P / mu

    which for one output is ``K = P phi / (mu + phi^T P phi)``. (The hydraulic paper prints
    ``phi^T P phi - 1`` in the gain and ``P = I - K phi^T P``; both are wrong.) ``P`` is kept
    symmetric. With ``S = I`` and ``mu = 1``, ``P -> (W^T W)^-1`` and the parameter
    covariance is ``sigma^2 P``; with ``S = diag(sigma^2)`` it is ``P`` itself.

    With ``mu < 1``, directions the data do not excite grow by ``1/mu`` per update (wind-up);
    ``covariance_limit`` caps the eigenvalues of ``P``.

    The recursion is compiled (``robot_dynid/_online_kernel.c``, ``theta_`` and ``covariance_``
    updated in place): :meth:`update` checks its inputs, :meth:`update_trusted` does not (for
    rows a caller computed itself), and both run the same arithmetic, bit for bit.

    Parameters
    ----------
    n_parameters : int
        p.
    forgetting : float
        mu in (0, 1].
    initial_covariance : float or array_like, shape (p,) or (p, p)
        P0: scalar times identity, a diagonal, or a symmetric positive definite matrix.
    covariance_limit : float, optional
        Largest allowed eigenvalue of P. Default: none for ``mu == 1``, the largest
        eigenvalue of P0 for ``mu < 1``.
    theta0 : array_like, shape (p,), optional
        Initial estimate (zeros by default).
    """

    def __init__(self, n_parameters: int, forgetting: float = 1.0,
                 initial_covariance=1e6, covariance_limit: float | None = None,
                 theta0=None) -> None:
        self.n_parameters = _check_count("n_parameters", n_parameters)
        forgetting = validators.fraction(forgetting, "forgetting", DynIdError)
        self.forgetting = forgetting
        self._initial_covariance = self._check_covariance(initial_covariance)
        if covariance_limit is None and forgetting < 1.0:
            covariance_limit = float(np.linalg.eigvalsh(self._initial_covariance)[-1])
        if covariance_limit is not None:
            covariance_limit = validators.positive(covariance_limit, "covariance_limit", DynIdError)
        self.covariance_limit = covariance_limit
        self._theta0 = self._check_theta(np.zeros(self.n_parameters) if theta0 is None else theta0,
                                         "theta0")
        self.reset()

    def _check_covariance(self, value) -> np.ndarray:
        p = self.n_parameters
        value = validators.array(value, "initial_covariance", DynIdError, ndim=(0, 1, 2))
        if value.ndim == 0:
            value = np.full(p, float(value))
        if value.ndim == 1:
            value = np.diag(validators.array(value, "initial_covariance", DynIdError, shape=(p,),
                                             axes=("parameters",)))
        validators.array(value, "initial_covariance", DynIdError, shape=(p, p), axes=("parameters", "parameters"))
        if not np.allclose(value, value.T):
            raise DynIdError("initial_covariance must be symmetric")
        if np.linalg.eigvalsh(value)[0] <= 0.0:
            raise DynIdError("initial_covariance must be positive definite")
        return np.array(value, order="C")     # a C-ordered copy: the recursion updates it in place

    def _check_theta(self, value, name: str) -> np.ndarray:
        return validators.array(value, name, DynIdError, shape=(self.n_parameters,), axes=("parameters",), copy=True)

    def reset(self) -> "RecursiveLeastSquares":
        """Back to ``theta0`` and ``P0`` with no updates."""
        self.theta_ = self._theta0.copy()
        self.covariance_ = self._initial_covariance.copy()
        self.n_updates_ = 0
        return self

    def _check_noise(self, noise_variance, n_outputs: int) -> np.ndarray | float:
        """The diagonal of S, (n_outputs,), or 1.0 for ``S = I``."""
        if noise_variance is None:
            return 1.0
        return validators.array(noise_variance, "noise_variance", shape=(n_outputs,), axes=("outputs",),
                                minimum=0.0, allow_minimum=False, broadcast=True)

    def update(self, phi, y, noise_variance=None) -> np.ndarray:
        """One recursive update.

        Parameters
        ----------
        phi : array_like, shape (p,) or (m, p)
            Regressor row(s).
        y : float or array_like, shape (m,)
            Measurement(s), in the unit of ``phi @ theta``.
        noise_variance : float or array_like, shape (m,), optional
            Measurement noise variances (diagonal of S); 1 by default.

        Returns
        -------
        ndarray, shape (p,)
            Updated ``theta_`` (a copy).
        """
        Phi = validators.array(phi, "phi", ndim=(1, 2), finite=False)
        one = Phi.ndim == 1
        Phi = validators.array(Phi, "phi", shape=(self.n_parameters,) if one else (None, self.n_parameters),
                               axes=("parameters",) if one else ("rows", "parameters"))
        Phi = Phi[None] if one else Phi
        y = validators.array(y, "y", ndim=(0, 1), finite=False)
        y = validators.array(y[None] if y.ndim == 0 else y, "y", shape=(Phi.shape[0],), axes=("rows of phi",))
        self._update(Phi, y, self._check_noise(noise_variance, Phi.shape[0]))
        return self.theta_.copy()

    def update_trusted(self, Phi: np.ndarray, y: np.ndarray, noise_variance: np.ndarray | None = None) -> None:
        """:meth:`update` without its checks, for rows the caller computed: ``Phi`` (m, p) and ``y``
        (m,) finite C-contiguous float64 arrays, ``noise_variance`` None or such an (m,) array > 0.
        Same arithmetic as :meth:`update` (bit for bit); ``theta_`` is updated in place and not returned."""
        self._step(Phi, y, noise_variance)

    def _update(self, Phi: np.ndarray, y: np.ndarray, noise) -> None:
        """The recursion for checked ``Phi`` (m, p), ``y`` (m,), ``noise`` (m,) or 1.0: compiled
        (``_online_kernel.rls_update``: ``C = mu S + Phi P Phi^T = L L^T``, ``B = L^-1 Phi P``,
        ``theta += B^T L^-1 (y - Phi theta)``, ``P = (P - B^T B) / mu``, in place), then the
        covariance limit; :meth:`_update_by_solve` when ``C`` is not numerically positive definite.
        """
        self._step(np.ascontiguousarray(Phi, dtype=float), np.ascontiguousarray(y, dtype=float),
                   None if isinstance(noise, float) else np.ascontiguousarray(noise, dtype=float))

    def _step(self, Phi: np.ndarray, y: np.ndarray, noise: np.ndarray | None) -> None:
        """:meth:`_update` on C-contiguous float64 arrays, ``noise`` None for ``S = I``."""
        trace = _online_kernel.rls_update(self.theta_, self.covariance_, Phi, y, noise, self.forgetting)
        if trace is None:
            self._update_by_solve(Phi, y, 1.0 if noise is None else noise)
            return
        if self.covariance_limit is not None and trace > self.covariance_limit:
            self.covariance_ = self._limit_covariance(self.covariance_)
        self.n_updates_ += 1

    def _update_by_solve(self, Phi: np.ndarray, y: np.ndarray, noise) -> None:
        """The recursion in numpy, for an innovation covariance the compiled Cholesky refused.

        With ``A = P Phi^T`` (p, m) and the innovation covariance ``C = mu S + Phi A`` (m, m),
        the gain is ``K^T = C^-1 A^T`` (m, p) and, ``P`` being symmetric, ``K Phi P = A K^T``:
        one (p, m) and one (p, p) product per update; ``C`` is solved by Cholesky (LU if it is
        not numerically positive definite).
        """
        P = self.covariance_
        m = Phi.shape[0]
        mu = self.forgetting
        A = P @ Phi.T
        innovation_covariance = Phi @ A
        innovation_covariance.ravel()[::m + 1] += mu * noise             # + mu S on the diagonal
        # K^T = (mu S + Phi P Phi^T)^-1 Phi P
        if m == 1:
            gain_t = A.T / innovation_covariance[0, 0]
        else:
            gain_t = _solve_positive_definite(innovation_covariance, A.T)
        # theta += K (y - Phi theta)
        self.theta_ = self.theta_ + (y - Phi @ self.theta_) @ gain_t
        # P = (I - K Phi) P / mu = (P - A K^T) / mu, kept symmetric
        update = A @ gain_t
        np.subtract(P, update, out=update)
        P = update + update.T
        P *= 0.5 / mu
        self.covariance_ = self._limit_covariance(P)
        self.n_updates_ += 1

    def _limit_covariance(self, P: np.ndarray) -> np.ndarray:
        if self.covariance_limit is None or np.trace(P) <= self.covariance_limit:
            return P
        eigenvalues, eigenvectors = np.linalg.eigh(P)
        if eigenvalues[-1] <= self.covariance_limit:
            return P
        capped = np.minimum(eigenvalues, self.covariance_limit)
        limited = (eigenvectors * capped) @ eigenvectors.T
        limited += limited.T                # exactly symmetric, as the recursion keeps P
        limited *= 0.5
        return limited

    def update_batch(self, Phi, y, noise_variance=None,
                     return_history: bool = False) -> np.ndarray:
        """The recursion of :meth:`update` for each sample in turn (inputs checked once).

        Parameters
        ----------
        Phi : array_like, shape (N, p) or (N, m, p)
            Regressor rows per sample.
        y : array_like, shape (N,) or (N, m)
            Measurements per sample.
        noise_variance : float or array_like, shape (m,), optional
            As in :meth:`update`, the same for every sample.
        return_history : bool
            Return the estimate after every sample instead of only the last.

        Returns
        -------
        ndarray, shape (p,) or (N, p)
            ``theta_`` after the last sample, or after each sample with ``return_history``.
        """
        Phi = validators.array(Phi, "Phi", ndim=(2, 3), finite=False)
        single = Phi.ndim == 2
        p = self.n_parameters
        Phi = validators.array(Phi, "Phi", shape=(None, p) if single else (None, None, p),
                               axes=("samples", "parameters") if single else ("samples", "rows", "parameters"))
        y = validators.array(y, "y", shape=Phi.shape[:-1], axes=("samples",) if single else ("samples", "rows"))
        Phi, y = (Phi[:, None, :], y[:, None]) if single else (Phi, y)
        noise = self._check_noise(noise_variance, Phi.shape[1])
        noise = None if isinstance(noise, float) else np.ascontiguousarray(noise)
        Phi, y = np.ascontiguousarray(Phi), np.ascontiguousarray(y)
        history = np.empty((Phi.shape[0], self.n_parameters)) if return_history else None
        for k, (phi_k, y_k) in enumerate(zip(Phi, y)):
            self._step(phi_k, y_k, noise)
            if history is not None:
                history[k] = self.theta_
        return history if history is not None else self.theta_.copy()

    def get_state(self) -> dict:
        """State as plain lists (YAML/JSON friendly); restore with :meth:`set_state`."""
        return {
            "n_parameters": self.n_parameters,
            "forgetting": self.forgetting,
            "covariance_limit": self.covariance_limit,
            "theta": self.theta_.tolist(),
            "covariance": self.covariance_.tolist(),
            "n_updates": int(self.n_updates_),
        }

    def set_state(self, state: dict) -> "RecursiveLeastSquares":
        """Restore a state from :meth:`get_state` (same n_parameters required)."""
        missing = sorted({"n_parameters", "forgetting", "theta", "covariance", "n_updates"}
                         - set(state))
        if missing:
            raise DynIdError(f"RLS state is missing keys {missing}")
        if int(state["n_parameters"]) != self.n_parameters:
            raise DynIdError(f"RLS state has n_parameters {state['n_parameters']}, "
                             f"expected {self.n_parameters}")
        theta = self._check_theta(state["theta"], "state theta")
        covariance = self._check_covariance(state["covariance"])
        forgetting = float(state["forgetting"])
        if not 0.0 < forgetting <= 1.0:
            raise DynIdError(f"state forgetting must be in (0, 1], got {forgetting!r}")
        self.forgetting = forgetting
        self.covariance_limit = state.get("covariance_limit")
        self.theta_, self.covariance_ = theta, covariance
        self.n_updates_ = int(state["n_updates"])
        return self

    def fit(self, Phi, y, noise_variance=None) -> "RecursiveLeastSquares":
        """:meth:`reset`, then :meth:`update_batch` over every sample (arguments as there); returns self."""
        self.reset()
        self.update_batch(Phi, y, noise_variance)
        return self

    batch = False
    """Updated sample by sample (the registry's :attr:`Estimator.batch`)."""


class BatchLeastSquares:
    """OLS or WLS as an estimator object (scikit-learn style: settings here, state ``*_`` after :meth:`fit`).

    Parameters
    ----------
    n_parameters : int
        p.
    weighted : bool
        WLS (:func:`wls`) instead of OLS (:func:`ols`).
    parameter_names : sequence of str, length p, optional
        Used in error messages only.
    rank_tolerance : float
        As in :func:`ols`.
    iterations : int
        WLS re-weighting passes, as in :func:`wls`.

    Attributes
    ----------
    result_ : LeastSquaresResult
        After :meth:`fit`.
    theta_ : ndarray, shape (p,)
        ``result_.theta``.
    covariance_ : ndarray, shape (p, p)
        ``result_.covariance``.
    """

    batch = True
    """Solved from all the equations at once (the registry's :attr:`Estimator.batch`)."""

    def __init__(self, n_parameters: int, weighted: bool = False, parameter_names=None,
                 rank_tolerance: float = RANK_TOLERANCE, iterations: int = 1) -> None:
        self.n_parameters = _check_count("n_parameters", n_parameters)
        self.weighted = bool(weighted)
        self.parameter_names = parameter_names
        self.rank_tolerance = rank_tolerance
        self.iterations = _check_count("iterations", iterations)

    @property
    def method(self) -> str:
        """``"wls"`` or ``"ols"``."""
        return "wls" if self.weighted else "ols"

    def solve(self, accumulator: LeastSquaresAccumulator) -> LeastSquaresResult:
        """The estimate from accumulated normal equations (:meth:`LeastSquaresAccumulator.solve`)."""
        return accumulator.solve(self.method, self.parameter_names, self.rank_tolerance, self.iterations)

    def fit(self, Y, tau) -> "BatchLeastSquares":
        """Fit ``tau = Y theta``: ``Y`` (N, n, p) with ``tau`` (N, n), or one output, (N, p) with (N,)."""
        Y, tau = np.asarray(Y, dtype=float), np.asarray(tau, dtype=float)
        if Y.ndim == 2 and tau.ndim == 1:
            Y, tau = Y[:, None, :], tau[:, None]
        Y, tau = _check_regression_data(Y, tau, n_parameters=self.n_parameters)
        self.result_ = _fit_in_memory(Y, tau, self.method, self.parameter_names, self.rank_tolerance,
                                      self.iterations)
        self.theta_, self.covariance_ = self.result_.theta, self.result_.covariance
        return self


ESTIMATOR_SETTINGS = ("parameter_names", "rank_tolerance", "iterations", "forgetting", "initial_covariance",
                      "covariance_limit", "theta0")
"""The settings :func:`build_estimator` takes; each method uses those its :attr:`Estimator.settings` names."""


@dataclass(frozen=True)
class Estimator:
    """A registered estimation method: what it is and how to build it.

    Attributes
    ----------
    name : str
    summary : str
        One line for help texts.
    batch : bool
        Solved from the accumulated normal equations (:meth:`LeastSquaresAccumulator.solve`);
        otherwise updated sample by sample (RLS).
    factory : callable
        ``factory(n_parameters, **settings)`` -> the estimator (:class:`BatchLeastSquares`,
        :class:`RecursiveLeastSquares`), each with ``fit``, ``theta_`` and ``batch``.
    settings : tuple of str
        The :data:`ESTIMATOR_SETTINGS` the factory takes.
    options : tuple of str
        Identification options that apply to it (``forgetting``; ``consistent`` for the batch
        methods, :mod:`robot_dynid.estimation.physical_consistency`).
    weighted : bool
        Rows weighted per joint by ``1 / sigma_j^2`` of a first :attr:`noise_method` pass.
    batch_method : str
        The batch method solved in its place where a batch solve is needed (the noise level and
        condition number of an RLS identification, per-cycle fits): its own name for batch methods.
    noise_method : str
        The method whose residuals give the per-joint noise ``sigma_j``.
    aliases : tuple of str
        Other names it is known by (``"ls"``: the cylinders' name of OLS).
    """

    name: str
    summary: str
    batch: bool
    factory: Callable
    settings: tuple[str, ...]
    options: tuple[str, ...] = ()
    weighted: bool = False
    batch_method: str = ""
    noise_method: str = "ols"
    aliases: tuple[str, ...] = ()

    def fit_values(self, training: LeastSquaresAccumulator) -> np.ndarray:
        """The values ``training``'s equations give by :attr:`batch_method` (what a cross-validation fits per
        fold)."""
        return training.solve(self.batch_method).theta

    def build(self, n_parameters: int, **settings):
        """The estimator of ``n_parameters`` unknowns from ``settings`` (see :func:`build_estimator`)."""
        unknown = sorted(set(settings) - set(ESTIMATOR_SETTINGS))
        if unknown:
            raise DynIdError(f"estimator settings {unknown} are unknown; expected some of {list(ESTIMATOR_SETTINGS)}")
        return self.factory(n_parameters, **{key: value for key, value in settings.items() if key in self.settings})

    def joint_weights(self, noise_std) -> np.ndarray | None:
        """Per-joint row weights ``1 / sigma_j^2`` of noise ``noise_std`` (n,) [N m], or None when unweighted."""
        return 1.0 / np.asarray(noise_std, dtype=float)**2 if self.weighted else None


_BATCH_SETTINGS = ("parameter_names", "rank_tolerance", "iterations")
ESTIMATORS = {estimator.name: estimator for estimator in (
    Estimator("ols", "ordinary least squares", batch=True, factory=BatchLeastSquares, settings=_BATCH_SETTINGS,
              options=("consistent",), batch_method="ols", aliases=("ls",)),
    Estimator("wls", "least squares weighted per joint by 1 / sigma_j^2 (first-pass noise)", batch=True,
              factory=lambda n_parameters, **settings: BatchLeastSquares(n_parameters, weighted=True, **settings),
              settings=_BATCH_SETTINGS, options=("consistent",), weighted=True, batch_method="wls"),
    Estimator("rls", "recursive least squares with a forgetting factor, updated on every sample", batch=False,
              factory=RecursiveLeastSquares,
              settings=("forgetting", "initial_covariance", "covariance_limit", "theta0"),
              options=("forgetting",), batch_method="ols"),
)}
"""The estimation methods, by name (see :class:`Estimator`)."""
METHODS = tuple(ESTIMATORS)
BATCH_METHODS = tuple(name for name, estimator in ESTIMATORS.items() if estimator.batch)
METHOD_NAMES = METHODS + tuple(alias for estimator in ESTIMATORS.values() for alias in estimator.aliases)
"""Every name :func:`estimator` accepts: the methods and their aliases."""
RECURSIVE_METHOD = "rls"
"""The method of the estimators updated sample by sample on a live stream (friction tracking, the online
cylinder identification)."""


def estimator(method: str) -> Estimator:
    """The registry entry of ``method`` (a name or alias of :data:`METHOD_NAMES`).

    Raises
    ------
    DynIdError
        An unknown name (listing the known ones).
    """
    for entry in ESTIMATORS.values():
        if method == entry.name or method in entry.aliases:
            return entry
    raise DynIdError(f"method must be one of {list(METHOD_NAMES)}, got {method!r}")


def build_estimator(method: str, n_parameters: int, **settings):
    """The estimator ``method`` names, of ``n_parameters`` unknowns, built from ``settings``.

    Parameters
    ----------
    method : str
        A name or alias of :data:`METHOD_NAMES`.
    n_parameters : int
        p.
    **settings
        Any of :data:`ESTIMATOR_SETTINGS`: ``parameter_names``, ``rank_tolerance``, ``iterations``
        (batch methods), ``forgetting`` [1] in (0, 1], ``initial_covariance``, ``covariance_limit`` and
        ``theta0`` (RLS); those the method does not take are ignored (an identification's ``forgetting``
        with OLS).

    Returns
    -------
    BatchLeastSquares or RecursiveLeastSquares
        ``fit(Y, tau)`` returns it with ``theta_``; ``batch`` says which.
    """
    return estimator(method).build(n_parameters, **settings)
