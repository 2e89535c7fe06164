"""Parameter covariances of least squares that hold on real data: per-joint noise, correlated residuals, model error.

Every batch fit of ``tau = Y theta`` (:mod:`~robot_dynid.estimation.estimators`: OLS, WLS, the accumulators, the
payload fit) reports three covariances of ``theta``; :data:`~robot_dynid.model.dynamic_model.STD_METHODS` names
them, :data:`STD_METHOD_TEXT` says in one line what each assumes (the one wording of the command line, ``--json``,
the node and the HTML pages).
With ``G_j = W_j^T W_j`` joint j's Gram matrix, ``w_j`` its weight (1 for OLS, ``1 / sigma_j^2`` for WLS) and
``A = sum_j w_j G_j``:

- ``white``: one noise variance for every row, white in time, an exact model: ``s^2 A^-1`` (OLS, ``s^2`` the
  pooled residual variance over ``N n - p``) or ``A^-1`` (WLS, whose weights are the noise variances).
- ``per_joint``: each joint's own residual variance ``s_j^2``, white in time (a sandwich):
  ``A^-1 (sum_j w_j^2 s_j^2 G_j) A^-1``. For WLS with ``s_j`` equal to the weights' ``sigma_j`` it is ``A^-1``.
- ``block``: robust to residuals correlated in time and to model error that follows the trajectory: a
  delete-a-block jackknife over contiguous time blocks (cluster-robust "CV3", MacKinnon, Nielsen and Webb 2023,
  "Cluster-robust inference: a guide to empirical practice"; clusters of time as in Bester, Conley and Hansen 2011,
  "Inference with dependent data using cluster covariance estimators"). With each block's weighted Gram matrix
  ``A_b = sum_j w_j G_bj`` and score ``s_b = sum_j w_j (b_bj - G_bj theta)``, leaving block b out moves the
  estimate by ``d_b = -(A - A_b)^-1 s_b`` (exactly: the refit without it), and
  ``V = (B - 1) / B sum_b d_b d_b^T``. Intervals use Student's t with ``B - 1`` degrees of freedom
  (:func:`interval_quantile`). Unlike the plain cluster sandwich ``A^-1 sum_b s_b s_b^T A^-1`` it does not shrink
  when a block is the main source of some direction's information (short blocks of a rich trajectory), which is
  why it was chosen (docs/estimation.md has the coverage study).

Blocks (:class:`BlockEquations`) keep per block and joint the normal equations ``G_bj``, ``b_bj``, ``c_bj``, so
the fused accumulation that never writes ``Y`` keeps working, with bounded memory: a sample's block is
``floor(phase / d)``, ``phase`` [s] the time since the start of its run (:func:`phase_times`: the recording, or its
labelled cycle), and when a block index would reach :data:`MAX_BLOCKS` the duration ``d`` doubles and neighbours
merge, so there are at most :data:`MAX_BLOCKS` blocks of at least :data:`MIN_BLOCK_DURATION` s: memory
``MAX_BLOCKS n (p^2 + p + 2) 8`` bytes (6 joints, 60 parameters: 11 MB). Counting the phase from each labelled
cycle's start puts the same part of a repeated trajectory, in every cycle, into one block: the model error of a
periodic motion is the same each cycle, so blocks must not be whole cycles (that would hide it) and the same
stretch of the period repeated must not count as independent blocks (that would shrink it by the number of
cycles). Recordings given together restart the phase too (their blocks pool the same stretch of each). Fewer than
:data:`MIN_BLOCKS` blocks (a recording shorter than ``MIN_BLOCKS * MIN_BLOCK_DURATION`` s), or samples added without
stamps: the ``per_joint`` covariance is reported instead, with the reason.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.estimation.scalar_minimum import bounded_minimum
from robot_dynid.stored_columns import all_finite, float_values, is_stored, select_rows

__all__ = ["STD_METHOD_TEXT", "MIN_BLOCK_DURATION", "MAX_BLOCKS", "MIN_BLOCKS", "DEFAULT_LEVEL", "describe",
           "NORMAL_QUANTILE", "T_QUANTILES", "interval_quantile", "combined_dof", "PERIOD_TOLERANCE",
           "PERIOD_GRID_RATE", "detect_period", "phase_times",
           "BlockEquations", "per_joint_covariance", "BlockCovariance", "block_covariance", "Uncertainty",
           "fit_uncertainty"]

STD_METHOD_TEXT = {
    "white": "white noise of one size on every joint, exact model",
    "per_joint": "each joint's own noise size, white in time",
    "block": "robust: jackknife over time blocks (correlated residuals, model error)",
}
"""One line per method, the same wherever a std is shown."""
MIN_BLOCK_DURATION = 1.0
"""[s] the shortest block: several correlation times of the residuals of a 100 Hz - 1 kHz arm."""
MAX_BLOCKS = 64
"""Most blocks kept (memory bound); a recording longer than ``MAX_BLOCKS * d`` doubles ``d``."""
MIN_BLOCKS = 5
"""Fewest blocks for the ``block`` covariance (t with 4 degrees of freedom: intervals 2.78 std wide at 95 %);
fewer: ``per_joint``."""
DEFAULT_LEVEL = 0.05
"""Two-sided level of the intervals shown [1] (95 % intervals)."""


def describe(method: str, n_blocks: int = 0, block_duration: float | None = None) -> str:
    """The one-line description of ``method`` (:data:`STD_METHOD_TEXT`) with its blocks, e.g. ``"robust: jackknife
    over time blocks (...); 38 blocks of 16 s, t with 37 dof"``."""
    if method not in STD_METHOD_TEXT:
        raise DynIdError(f"std method must be one of {list(STD_METHOD_TEXT)}, got {method!r}")
    text = STD_METHOD_TEXT[method]
    if method == "block" and n_blocks:
        size = "" if block_duration is None else f" of {block_duration:.3g} s"
        text += f"; {n_blocks} blocks{size}, t with {n_blocks - 1} dof"
    return text


NORMAL_QUANTILE = 1.959963984540054
"""``scipy.special.ndtri(0.975)``: the quantile of the normal 95 % interval."""
T_QUANTILES = (
    12.706204736174694, 4.302652729749462, 3.1824463052837078, 2.7764451051977934, 2.5705818356363146,
    2.4469118511449786, 2.364624251592784, 2.306004135204166, 2.262157162798205, 2.228138851986274,
    2.200985160091639, 2.1788128296672284, 2.1603686564627913, 2.144786687917804, 2.131449545559776,
    2.1199052992212546, 2.1098155778333156, 2.1009220402410382, 2.0930240544083087, 2.085963447265864,
    2.0796138447276795, 2.0738730679040254, 2.0686576104190486, 2.0638985616280245, 2.0595385527532972,
    2.0555294386428735, 2.0518305164802846, 2.0484071417952454, 2.045229642132703, 2.0422724563012378,
    2.039513446396408, 2.0369333434601016, 2.0345152974493383, 2.0322445093177186, 2.030107928250343,
    2.0280940009804502, 2.0261924630291093, 2.0243941639119694, 2.022690920036761, 2.021075390306273,
    2.019540970441376, 2.0180817028184443, 2.016692199227824, 2.0153675744437636, 2.014103388880846,
    2.012895598919429, 2.0117405137297655, 2.010634757624232, 2.0095752371292392, 2.008559112100761,
    2.007583770315836, 2.006646805061688, 2.0057459953178687, 2.0048792881880564, 2.0040447832891455,
    2.003240718847872, 2.002465459291007, 2.0017174841452356, 2.000995378088267, 2.0002978220142604,
    1.999623584994939, 1.9989715170333788, 1.998340542520741,
)
"""``scipy.special.stdtrit(dof, 0.975)`` for dof 1 to ``MAX_BLOCKS - 1``: the quantiles of the t 95 % intervals of a
``block`` std, without scipy.special's 0.2 s import at a command's start. The values of scipy 1.17, Boost's Student t
quantile (test_covariance checks them); scipy 1.11-1.16 inverted cdflib's t distribution, to about 1e-8."""


def interval_quantile(level: float = DEFAULT_LEVEL, dof: int | float | None = None) -> float:
    """The two-sided quantile of an interval ``value +- q std`` at ``level`` [1]: Student's t with ``dof`` degrees of
    freedom (a ``block`` std), the normal one for None or inf; 95 % intervals from :data:`NORMAL_QUANTILE` and
    :data:`T_QUANTILES`."""
    if level == DEFAULT_LEVEL:
        if dof is None or not math.isfinite(dof):
            return NORMAL_QUANTILE
        if float(dof).is_integer() and 1 <= dof <= len(T_QUANTILES):
            return T_QUANTILES[int(dof) - 1]
    from scipy.special import ndtri, stdtrit    # scipy.stats' norm.ppf and t.ppf, without its 1 s import
    if dof is None or not math.isfinite(dof):
        return float(ndtri(1.0 - level / 2.0))
    return float(stdtrit(dof, 1.0 - level / 2.0))


def combined_dof(std_a, dof_a, std_b, dof_b):
    """Welch-Satterthwaite degrees of freedom of ``sqrt(std_a^2 + std_b^2)`` (arrays), dof None meaning infinite;
    None when both are infinite."""
    if dof_a is None and dof_b is None:
        return None
    va, vb = np.asarray(std_a, dtype=float) ** 2, np.asarray(std_b, dtype=float) ** 2
    with np.errstate(divide="ignore", invalid="ignore"):
        denominator = (0.0 if dof_a is None else va**2 / dof_a) + (0.0 if dof_b is None else vb**2 / dof_b)
        dof = np.where(denominator > 0.0, (va + vb) ** 2 / np.where(denominator > 0.0, denominator, 1.0), np.inf)
    return dof


PERIOD_TOLERANCE = 0.02
"""A motion repeats with period T when ``rms(q(t + T) - q(t))`` is below this fraction of ``rms(q - mean q)`` [1]."""
PERIOD_GRID_RATE = 50.0
"""[Hz] the grid positions are interpolated onto to look for a period."""


def detect_period(time, q, min_cycles: float = 2.0, tolerance: float = PERIOD_TOLERANCE) -> float | None:
    """[s] the period of a motion repeated at least ``min_cycles`` times, or None.

    The positions ``q`` (N, n) [rad] at ``time`` (N,) [s] are interpolated onto a uniform grid of
    :data:`PERIOD_GRID_RATE`; the mean square difference of positions a lag apart (over joints, by FFT) is searched
    for the first lag, after the positions moved apart, where it falls below ``tolerance^2`` of their variance; the
    lag of the most whole periods that fit is refined between grid points, and the period kept when positions one
    period apart differ by less than ``tolerance`` of their spread (RMS).
    """
    time = np.asarray(time, dtype=float)
    q = float_values(q) if is_stored(q) else np.asarray(q, dtype=float).reshape(time.size, -1)
    if time.size < 16 or not all_finite(q):
        return None
    duration = float(time[-1] - time[0])
    n_grid = int(duration * PERIOD_GRID_RATE) + 1
    if n_grid < 16:
        return None
    grid = time[0] + np.arange(n_grid) / PERIOD_GRID_RATE
    # only the samples that bracket a grid point (and the first and last) enter the interpolation: the same
    # intervals, so the same values, without a contiguous copy of every column of a long recording
    below = np.searchsorted(time, grid, side="right") - 1
    used = np.zeros(time.size, dtype=bool)
    used[[0, -1]] = True
    used[np.clip(below, 0, time.size - 1)] = True
    used[np.clip(below + 1, 0, time.size - 1)] = True
    used = np.flatnonzero(used)
    x = np.column_stack([np.interp(grid, time[used], column) for column in np.asarray(q[used]).T])
    x -= x.mean(axis=0)
    spread = float(np.sqrt(np.mean(x**2)))
    if not spread > 0.0:
        return None
    # mean square difference of positions k steps apart, d(k) = (sum_t<N-k |x_t|^2 + sum_t>=k |x_t|^2
    # - 2 sum_t x_t . x_t+k) / (N - k), the products by FFT
    size = 1 << int(2 * n_grid - 1).bit_length()
    power = np.sum(np.abs(np.fft.rfft(x, size, axis=0)) ** 2, axis=1)
    products = np.fft.irfft(power, size)[:n_grid]
    squares = np.cumsum(np.sum(x**2, axis=1))
    lags = np.arange(n_grid)
    head = squares[n_grid - 1 - lags]
    tail = squares[-1] - np.r_[0.0, squares[:-1]]
    difference = (head + tail - 2.0 * products) / np.maximum(n_grid - lags, 1) / spread**2
    longest = int((n_grid - 1) / min_cycles) + 2       # lags below it fit min_cycles whole periods, one grid step spare
    apart = np.flatnonzero(difference > 1.0)
    if not apart.size or apart[0] >= longest:
        return None
    close = apart[0] + np.flatnonzero(difference[apart[0]:longest] <= tolerance**2)
    if not close.size:
        return None
    first = close[0]
    while first + 1 < longest and difference[first + 1] < difference[first]:
        first += 1
    # the closest match at the most whole periods that fit, refined between grid points, divided by their number
    cycles = max(1, int(longest // first))
    around = slice(max(cycles * first - cycles, 1), min(cycles * first + cycles + 1, n_grid - 1))
    peak = around.start + int(np.argmin(difference[around]))

    def mismatch(lag: float) -> float:
        count = n_grid - int(np.ceil(lag * PERIOD_GRID_RATE)) - 1
        shifted = np.column_stack([np.interp(grid[:count] + lag, grid, column) for column in x.T])
        return float(np.sqrt(np.mean((shifted - x[:count]) ** 2)))

    best = bounded_minimum(mismatch, (peak - 4) / PERIOD_GRID_RATE, (peak + 4) / PERIOD_GRID_RATE,
                           xatol=1e-4 / PERIOD_GRID_RATE)
    period = best / cycles
    return period if mismatch(period) <= tolerance * spread else None


def phase_times(time, cycle=None, q=None) -> np.ndarray:
    """[s] each sample's time since the start of its run, the phase that picks its time block (module docstring).

    A labelled cycle (``cycle >= 0``) is a run from its first sample; otherwise, with positions ``q`` whose motion
    repeats (:func:`detect_period`), the time modulo the period; else the time since the first sample.

    Parameters
    ----------
    time : array_like, shape (N,)
        [s] stamps.
    cycle : array_like of int, shape (N,), optional
        Cycle index per sample, -1 outside every cycle.
    q : array_like, shape (N, n), optional
        Positions [rad], to find a repeated motion in samples outside labelled cycles.
    """
    time = np.asarray(time, dtype=float)
    if time.size == 0:
        return time.copy()
    phase = time - time[0]
    in_cycle = np.zeros(time.size, dtype=bool)
    if cycle is not None:
        cycle = np.asarray(cycle)
        new_run = np.r_[True, cycle[1:] != cycle[:-1]]
        run = np.cumsum(new_run) - 1
        in_cycle = cycle >= 0
        phase[in_cycle] = (time - time[np.flatnonzero(new_run)][run])[in_cycle]
    if q is not None and not in_cycle.all():
        rest = slice(None) if not in_cycle.any() else ~in_cycle      # no copy of the positions without cycles
        times = time[rest]
        period = detect_period(times, select_rows(float_values(q), rest))
        if period is not None and isinstance(rest, slice):      # phase is times - times[0] already
            np.mod(phase, period, out=phase)
        elif period is not None:
            phase[rest] = np.mod(times - times[0], period)
    return phase


class BlockEquations:
    """Per-block, per-joint normal equations (module docstring): ``gram_`` (B, n, p, p), ``moment_`` (B, n, p),
    ``torque_square_sum_`` (B, n), ``counts_`` (B,) for the blocks of index ``keys_`` (B,), of duration
    ``block_duration`` [s] (``MIN_BLOCK_DURATION`` doubled as often as the longest phase needed).

    Parameters
    ----------
    n_joints, n_parameters : int
    max_blocks : int
        At most this many blocks (the memory bound).
    """

    def __init__(self, n_joints: int, n_parameters: int, max_blocks: int = MAX_BLOCKS) -> None:
        self.n_joints, self.n_parameters, self.max_blocks = n_joints, n_parameters, max_blocks
        self.block_duration = MIN_BLOCK_DURATION
        self._blocks: dict[int, list] = {}

    @property
    def n_blocks(self) -> int:
        return len(self._blocks)

    @property
    def n_samples(self) -> int:
        return int(sum(block[3] for block in self._blocks.values()))

    def _block(self, key: int) -> list:
        if key not in self._blocks:
            n, p = self.n_joints, self.n_parameters
            self._blocks[key] = [np.zeros((n, p, p)), np.zeros((n, p)), np.zeros(n), 0]
        return self._blocks[key]

    def reserve(self, longest_phase: float) -> None:
        """Double the block duration (merging neighbours) until a phase of ``longest_phase`` [s] has a block index
        below ``max_blocks``."""
        while longest_phase >= self.max_blocks * self.block_duration:
            self._coarsen()

    def _coarsen(self) -> None:
        merged: dict[int, list] = {}
        for key in sorted(self._blocks):
            gram, moment, square, count = self._blocks[key]
            if key // 2 in merged:
                target = merged[key // 2]
                target[0] += gram
                target[1] += moment
                target[2] += square
                target[3] += count
            else:
                merged[key // 2] = [gram, moment, square, count]
        self._blocks = merged
        self.block_duration *= 2.0

    def keys(self, phase) -> np.ndarray:
        """Block index (N,) of each phase [s] (after :meth:`reserve` of the largest)."""
        return np.floor(np.asarray(phase, dtype=float) / self.block_duration).astype(np.int64)

    def runs(self, phase):
        """``(key, start, stop)`` of the runs of equal block index of ``phase`` (N,) [s], after reserving room."""
        phase = np.asarray(phase, dtype=float)
        if phase.size == 0:
            return []
        if not np.all(np.isfinite(phase)) or phase.min() < 0.0:
            raise DataError("block phases must be finite times >= 0 [s] since the start of each run")
        self.reserve(float(phase.max()))
        keys = self.keys(phase)
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        stops = np.r_[starts[1:], keys.size]
        return [(int(keys[a]), int(a), int(b)) for a, b in zip(starts, stops)]

    def add(self, key: int, gram, moment, torque_square_sum, count: int) -> None:
        """Add one block's sums (``gram`` (n, p, p), ``moment`` (n, p), ``torque_square_sum`` (n,)) of ``count``
        samples to block ``key``."""
        block = self._block(key)
        block[0] += gram
        block[1] += moment
        block[2] += torque_square_sum
        block[3] += int(count)

    def merge(self, other: "BlockEquations") -> "BlockEquations":
        """Add another's blocks (the finer of the two durations is coarsened to the other's first)."""
        if (other.n_joints, other.n_parameters) != (self.n_joints, self.n_parameters):
            raise DataError("cannot merge block equations of different shapes")
        other_blocks = {key: [array.copy() if isinstance(array, np.ndarray) else array for array in block]
                        for key, block in other._blocks.items()}
        factor = other.block_duration
        while self.block_duration < factor:
            self._coarsen()
        for key, block in other_blocks.items():
            ratio = int(round(self.block_duration / factor))
            self.add(key // ratio, *block)
        while self.n_blocks and max(self._blocks) >= self.max_blocks:
            self._coarsen()
        return self

    def with_fixed(self, free, values) -> "BlockEquations":
        """The block equations of the parameters ``free`` (indices) with the others held at ``values`` (p,):
        ``G[free, free]``, ``b[free] - G[free, fixed] x``, ``c - 2 b[fixed] . x + x . G[fixed, fixed] x``."""
        free = np.asarray(free)
        fixed = np.setdiff1d(np.arange(self.n_parameters), free)
        x = np.asarray(values, dtype=float)[fixed]
        reduced = BlockEquations(self.n_joints, free.size, self.max_blocks)
        reduced.block_duration = self.block_duration
        for key, (gram, moment, square, count) in self._blocks.items():
            reduced._blocks[key] = [gram[:, free][:, :, free].copy(), moment[:, free] - gram[:, free][:, :, fixed] @ x,
                                    square - 2.0 * moment[:, fixed] @ x
                                    + np.einsum("p,jpq,q->j", x, gram[:, fixed][:, :, fixed], x), count]
        return reduced

    def copy(self) -> "BlockEquations":
        duplicate = BlockEquations(self.n_joints, self.n_parameters, self.max_blocks)
        return duplicate.merge(self)

    def arrays(self):
        """``(gram (B, n, p, p), moment (B, n, p), counts (B,))`` of the non-empty blocks, in block order."""
        keys = [key for key in sorted(self._blocks) if self._blocks[key][3] > 0]
        if not keys:
            n, p = self.n_joints, self.n_parameters
            return np.zeros((0, n, p, p)), np.zeros((0, n, p)), np.zeros(0, dtype=int)
        return (np.array([self._blocks[key][0] for key in keys]), np.array([self._blocks[key][1] for key in keys]),
                np.array([self._blocks[key][3] for key in keys]))

    def nbytes(self) -> int:
        return sum(block[0].nbytes + block[1].nbytes + block[2].nbytes + 8 for block in self._blocks.values())


def per_joint_covariance(inverse: np.ndarray, joint_weights, joint_variances, grams) -> np.ndarray:
    """``A^-1 (sum_j w_j^2 s_j^2 G_j) A^-1``: ``inverse`` (p, p) ``A^-1`` of ``A = sum_j w_j G_j``, ``joint_weights``
    ``w_j`` (n,), ``joint_variances`` ``s_j^2`` (n,) [N^2 m^2], ``grams`` (n, p, p)."""
    factors = np.asarray(joint_weights, dtype=float) ** 2 * np.asarray(joint_variances, dtype=float)
    meat = np.einsum("j,jpq->pq", factors, grams)
    covariance = inverse @ meat @ inverse
    return 0.5 * (covariance + covariance.T)


@dataclasses.dataclass(frozen=True)
class BlockCovariance:
    """The ``block`` covariance (p, p) and how it was made: ``n_blocks``, ``block_duration`` [s], ``jackknife``
    (False: the plain cluster sandwich ``B / (B - 1) A^-1 sum_b s_b s_b^T A^-1`` because leaving some block out
    left the problem singular), ``note`` (why, or '')."""

    covariance: np.ndarray
    n_blocks: int
    block_duration: float
    jackknife: bool
    note: str = ""


def block_covariance(weighted_gram: np.ndarray, inverse: np.ndarray, blocks: BlockEquations, theta,
                     joint_weights, rank_tolerance: float = 1e-7, resolved=None) -> BlockCovariance:
    """The delete-a-block jackknife covariance of ``theta`` (module docstring).

    Parameters
    ----------
    weighted_gram : ndarray, shape (p, p)
        ``A = sum_j w_j G_j`` over all samples (the sum over the blocks), plus any prior information (the
        bread of the estimate; a prior is in no block).
    inverse : ndarray, shape (p, p)
        ``A^-1`` (a pseudo-inverse over ``resolved``).
    blocks : BlockEquations
    theta : array_like, shape (p,)
        The estimate.
    joint_weights : array_like, shape (n,)
        ``w_j``.
    rank_tolerance : float
        A leave-one-out system (column-scaled) whose Cholesky factor has a pivot below ``rank_tolerance`` times its
        largest, or none, is singular: the plain cluster sandwich is used instead.
    resolved : tuple (scales (p,), vectors (p, k)), optional
        Only the directions ``vectors`` of the parameters scaled by ``scales`` (``x = scales * theta``) are estimated
        (the others are left to no data, as a pseudo-inverse leaves them): the jackknife works in their span.
    """
    grams, moments, _ = blocks.arrays()
    n_blocks = grams.shape[0]
    weights = np.asarray(joint_weights, dtype=float)
    theta = np.asarray(theta, dtype=float)
    block_grams = np.einsum("j,bjpq->bpq", weights, grams)
    scores = np.einsum("j,bjp->bp", weights, moments) - block_grams @ theta
    if resolved is None:
        scales = np.sqrt(np.clip(np.diag(weighted_gram), 0.0, None))
        scales[scales == 0.0] = 1.0
        basis = np.eye(theta.size)
    else:
        scales, basis = resolved
    outer = np.outer(scales, scales)
    with np.errstate(over="ignore", invalid="ignore"):
        # d_b = -(A - A_b)^-1 s_b by Cholesky in the column-scaled parameters' resolved span; singular when a
        # factor's smallest pivot is below rank_tolerance of its largest (about the root of the eigenvalue ratio)
        left_out = basis.T @ ((weighted_gram[None] - block_grams) / outer) @ basis
        factors, singular = _cholesky_factors(0.5 * (left_out + np.swapaxes(left_out, 1, 2)), rank_tolerance)
        if singular is None:
            projected = (scores / scales) @ basis
            projected = np.linalg.solve(factors, projected[:, :, None])
            projected = np.linalg.solve(np.swapaxes(factors, 1, 2), projected)[:, :, 0]
            shifts = -(projected @ basis.T) / scales
        duration = blocks.block_duration
        if singular is None:
            covariance = (n_blocks - 1) / n_blocks * shifts.T @ shifts
            return BlockCovariance(0.5 * (covariance + covariance.T), n_blocks, duration, True)
        covariance = n_blocks / (n_blocks - 1) * inverse @ (scores.T @ scores) @ inverse
    note = (f"without block {singular + 1} of {n_blocks} the parameters are not identifiable: the block covariance "
            "is the cluster sandwich, not the jackknife")
    return BlockCovariance(0.5 * (covariance + covariance.T), n_blocks, duration, False, note)


def _cholesky_factors(matrices: np.ndarray, rank_tolerance: float) -> tuple[np.ndarray | None, int | None]:
    """The lower Cholesky factors of the symmetric ``matrices`` (B, r, r), and None; or None and the first block
    that is not positive definite, or whose factor's smallest pivot is not above ``rank_tolerance`` of its
    largest (NaN included)."""
    try:
        factors = np.linalg.cholesky(matrices)
    except np.linalg.LinAlgError:
        factors = None
    if factors is not None:
        pivots = np.abs(np.diagonal(factors, axis1=1, axis2=2))
        weak = ~(pivots.min(axis=1) > rank_tolerance * pivots.max(axis=1))
        return (factors, None) if not weak.any() else (None, int(np.argmax(weak)))
    for b, matrix in enumerate(matrices):
        try:
            pivots = np.abs(np.diagonal(np.linalg.cholesky(matrix)))
        except np.linalg.LinAlgError:
            return None, b
        if not pivots.min() > rank_tolerance * pivots.max():
            return None, b
    return None, len(matrices)      # not reached: the stack failed, so one block does


@dataclasses.dataclass(frozen=True)
class Uncertainty:
    """A fit's covariances (module docstring): ``covariance`` (p, p) of ``std_method``, the one reported; the
    ``white_std`` and ``per_joint_std`` (p,) beside it; ``n_blocks`` and ``block_duration`` [s] of a ``block``
    covariance (0, None otherwise); ``note``: why the method is not ``block`` (or how the block one was made)."""

    std_method: str
    covariance: np.ndarray
    white_std: np.ndarray
    per_joint_std: np.ndarray
    n_blocks: int = 0
    block_duration: float | None = None
    note: str = ""

    @property
    def std(self) -> np.ndarray:
        return _std(self.covariance)

    @property
    def interval_dof(self) -> int | None:
        """Degrees of freedom of the t quantile of intervals (``block``: ``B - 1``), None: normal."""
        return self.n_blocks - 1 if self.std_method == "block" else None

    def describe(self) -> str:
        return describe(self.std_method, self.n_blocks, self.block_duration)

    def to_dict(self) -> dict:
        """What a model's ``metrics["uncertainty"]`` holds (plain data)."""
        return {"std_method": self.std_method, "description": self.describe(), "interval_dof": self.interval_dof,
                "n_blocks": int(self.n_blocks), "block_duration": self.block_duration, "note": self.note}

    def take(self, rows) -> "Uncertainty":
        """The uncertainty of the parameters ``rows`` (an index array or slice) only."""
        rows = np.arange(self.white_std.size)[rows]
        return dataclasses.replace(self, covariance=self.covariance[np.ix_(rows, rows)],
                                   white_std=self.white_std[rows], per_joint_std=self.per_joint_std[rows])


def _std(covariance: np.ndarray) -> np.ndarray:
    return np.sqrt(np.clip(np.diag(covariance), 0.0, None))


def fit_uncertainty(white: np.ndarray, inverse: np.ndarray, weighted_gram: np.ndarray, theta, joint_weights,
                    joint_variances, grams, blocks: BlockEquations | None, n_samples: int,
                    rank_tolerance: float = 1e-7, resolved=None) -> Uncertainty:
    """All three covariances of one fit, the ``block`` one reported when its blocks cover every sample and number at
    least :data:`MIN_BLOCKS`, else ``per_joint`` (the note says why).

    Parameters
    ----------
    white : ndarray, shape (p, p)
        The ``white`` covariance.
    inverse, weighted_gram : ndarray, shape (p, p)
        ``A^-1`` and ``A = sum_j w_j G_j``.
    theta : array_like, shape (p,)
    joint_weights, joint_variances : array_like, shape (n,)
        ``w_j`` and the residual variances ``s_j^2`` [N^2 m^2].
    grams : ndarray, shape (n, p, p)
        ``G_j``.
    blocks : BlockEquations or None
    n_samples : int
        Samples of the fit (to check the blocks hold all of them).
    rank_tolerance, resolved
        As in :func:`block_covariance`.
    """
    per_joint = per_joint_covariance(inverse, joint_weights, joint_variances, grams)
    white_std, per_joint_std = _std(white), _std(per_joint)
    if blocks is None or blocks.n_samples == 0:
        return Uncertainty("per_joint", per_joint, white_std, per_joint_std,
                           note="no stamps to form time blocks: per-joint noise, white in time")
    if blocks.n_samples != n_samples:
        return Uncertainty("per_joint", per_joint, white_std, per_joint_std,
                           note=f"{n_samples - blocks.n_samples} of {n_samples} samples came without stamps: no time "
                                "blocks; per-joint noise, white in time")
    if blocks.n_blocks < MIN_BLOCKS:
        return Uncertainty("per_joint", per_joint, white_std, per_joint_std, n_blocks=blocks.n_blocks,
                           block_duration=blocks.block_duration,
                           note=f"only {blocks.n_blocks} time blocks of {blocks.block_duration:g} s (the robust std "
                                f"needs {MIN_BLOCKS}: at least {MIN_BLOCKS * MIN_BLOCK_DURATION:g} s of motion): "
                                "per-joint noise, white in time, which understates correlated residuals")
    robust = block_covariance(weighted_gram, inverse, blocks, theta, joint_weights, rank_tolerance, resolved)
    return Uncertainty("block", robust.covariance, white_std, per_joint_std, robust.n_blocks, robust.block_duration,
                       robust.note)
