"""Which clock a recording is differentiated in: its stamps, or the nominal grid they jitter about.

Stamps are often receive times: a driver samples its encoders on a uniform clock and the logging PC stamps each
message when it arrives, late by a varying delay. Fitting derivatives in such stamps puts the delay's jitter into
every velocity and acceleration (a joint at speed ``v`` looks ``v e`` off its true position at a stamp ``e`` off its
instant). Where the stamps are a uniform grid plus jitter and missing samples (every stamp within
:data:`MAX_GRID_DEVIATION` steps of a grid ``t0 + k h``, ``k`` counting the periods of each step, so lost samples
keep their place), both clocks are tried: a local cubic through the positions fits better in the clock the samples
were taken on (measured instants stamped exactly fit their stamps; receive times fit the grid). The grid is used
when its fit residual is below :data:`GRID_PREFERENCE` of the stamps' on the joints that move; otherwise the stamps
are. Real gaps stay gaps (the grid counts their periods; derivatives restart after them).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from robot_dynid.recordings.signal_processing import local_polynomial_fit, median_step
from robot_dynid.stored_columns import column_extremes, float_values, is_stored

__all__ = ["MIN_JITTER", "MAX_GRID_DEVIATION", "GRID_PREFERENCE", "FIT_WINDOW", "MAX_COMPARED", "TimeBase",
           "nominal_grid", "grid_line", "choose_time_base"]

MIN_JITTER = 1e-3
"""[steps] stamps within this of their grid are a grid already: nothing to choose."""
MAX_GRID_DEVIATION = 0.4
"""[steps] farther than this from the grid, a stamp is not a jittered grid point (an irregular clock)."""
GRID_PREFERENCE = 0.8
"""The grid is used where the positions fit it at most this fraction as badly as the stamps (RMS residual)."""
FIT_WINDOW = 9
"""[samples] the local cubic of the comparison."""
MAX_COMPARED = 20_000
"""Rows compared at most (evenly spread): the choice does not need every sample of a long recording."""


@dataclasses.dataclass(frozen=True)
class TimeBase:
    """The clock chosen for a recording (module docstring).

    Attributes
    ----------
    kind : {"stamps", "grid"}
    time : ndarray, shape (N,)
        [s] the stamps, or the grid times of the samples.
    deviation_rms, deviation_max : float
        [s] RMS and largest distance of the stamps from the grid (nan when the stamps are no jittered grid).
    residual_ratio : float
        Fit residual in the grid over that in the stamps (median over moving joints; nan when not compared).
    """

    kind: str
    time: np.ndarray
    deviation_rms: float = float("nan")
    deviation_max: float = float("nan")
    residual_ratio: float = float("nan")

    def describe(self) -> str:
        if self.kind == "grid":
            return (f"derivatives on the nominal grid: the stamps jitter about it by {self.deviation_rms * 1e3:.3g} ms "
                    f"RMS (at most {self.deviation_max * 1e3:.3g} ms) and the positions fit the grid better "
                    f"(residual {self.residual_ratio:.2g} of the stamps'): receive times")
        if np.isfinite(self.residual_ratio):
            return (f"derivatives on the recorded stamps: the positions fit them as well as a grid "
                    f"(grid residual {self.residual_ratio:.2g} of the stamps'): measured instants")
        return "derivatives on the recorded stamps"

    def to_dict(self) -> dict:
        def number(value):
            return None if not np.isfinite(value) else float(value)
        return {"kind": self.kind, "deviation_rms_s": number(self.deviation_rms),
                "deviation_max_s": number(self.deviation_max), "residual_ratio": number(self.residual_ratio),
                "note": self.describe()}


def nominal_grid(time) -> tuple[np.ndarray, float] | None:
    """``(grid times (N,) [s], step h [s])`` of the uniform grid that stamps ``time`` (N,) [s] jitter about, with
    each sample at ``t0 + k h`` (``k`` the periods counted by rounding each step to the median, then to the fitted
    step), fitted by least squares (:func:`_line_fit`); None with fewer than :data:`FIT_WINDOW` stamps or a stamp
    farther than :data:`MAX_GRID_DEVIATION` steps from it. Computed :data:`_FIT_BLOCK` stamps at a time: the grid
    is the only array of N values it makes."""
    time = np.asarray(time, dtype=float)
    if time.size < FIT_WINDOW:
        return None
    slope, counted = median_step(time), None
    for _ in range(3):      # the median of jittered steps is a few 0.1 % off: count a long gap's periods again
        if counted is not None and all(np.array_equal(now, before) for (_, now), (_, before) in
                                       zip(_periods(time, slope), _periods(time, counted))):
            break           # the same periods fit the same line again
        counted = slope
        slope, intercept = _line_fit(time, counted)
    grid = np.empty_like(time)
    largest = 0.0
    for rows, k in _counts(time, counted):
        grid[rows] = time[0] + intercept + slope * k
        largest = max(largest, float(np.max(np.abs(time[rows] - grid[rows]))))
    if largest > MAX_GRID_DEVIATION * slope:
        return None
    return grid, float(slope)


_FIT_BLOCK = 65536
"""Stamps [1] per block of :func:`nominal_grid`'s work: its temporaries are a few arrays of this length."""


def _periods(time, step: float):
    """``(rows, periods)`` block by block: the periods (at least 1) of ``step`` [s] each step of ``time`` (N,) [s]
    into the rows ``rows`` (a slice) spans, ``time[rows] - time[rows.start - 1]`` (0 for the first row)."""
    for start in range(0, time.size, _FIT_BLOCK):
        rows = slice(start, min(start + _FIT_BLOCK, time.size))
        steps = np.diff(time[max(start - 1, 0):rows.stop])
        periods = np.maximum(np.rint(steps / step), 1.0)
        yield rows, (np.concatenate(([0.0], periods)) if start == 0 else periods)


def _counts(time, step: float):
    """``(rows, k)`` block by block: the grid index ``k`` of each stamp of ``time`` (N,) [s] in ``rows``, its
    periods of ``step`` [s] counted from the first (:func:`_periods`; whole numbers, exact in float64)."""
    offset = 0.0
    for rows, periods in _periods(time, step):
        k = np.cumsum(periods)
        k += offset
        offset = float(k[-1])
        yield rows, k


def _line_fit(time, step: float) -> tuple[float, float]:
    """:func:`grid_line` of the stamps ``time`` (N,) [s] from the first at their grid indices (:func:`_counts` of
    ``step``)."""
    return grid_line(lambda: ((k, time[rows] - time[0]) for rows, k in _counts(time, step)), time.size)


def grid_line(blocks, size: int) -> tuple[float, float]:
    """``(slope [s], intercept [s])`` of the least-squares line ``relative ~ intercept + slope k`` through ``size``
    stamps ``relative`` [s] at grid indices ``k``, which ``blocks()`` yields block by block as ``(k, relative)``
    pairs of arrays (called twice: its temporaries are one block's): centred sums of products, each block's added
    exactly (math.fsum) across the blocks."""
    sums = [(float(np.sum(k)), float(np.sum(relative))) for k, relative in blocks()]
    k_mean = math.fsum(k for k, _ in sums) / size
    relative_mean = math.fsum(relative for _, relative in sums) / size
    products, squares = [], []
    for k, relative in blocks():
        k = k - k_mean
        products.append(float(np.dot(k, relative - relative_mean)))
        squares.append(float(np.dot(k, k)))
    slope = math.fsum(products) / math.fsum(squares)
    return slope, relative_mean - slope * k_mean


def _fit_residual(q, time, rows) -> np.ndarray:
    """RMS per joint of positions ``q`` at ``rows`` minus the local cubic through their :data:`FIT_WINDOW`
    neighbours in clock ``time``."""
    if is_stored(q):    # only the rows' windows are read: the same samples, step and fits (rows are interior)
        starts = np.clip(rows - FIT_WINDOW // 2, 0, time.size - FIT_WINDOW)
        window_rows = (starts[:, None] + np.arange(FIT_WINDOW)).ravel()
        local_rows = np.arange(rows.size) * FIT_WINDOW + (rows - starts)
        q, time, rows, step = q[window_rows], time[window_rows], local_rows, median_step(time)
    else:
        step = None
    fitted = local_polynomial_fit(q, time, FIT_WINDOW, 3, rows=rows, step=step)[0]
    return np.sqrt(np.mean((q[rows] - fitted) ** 2, axis=0))


def choose_time_base(time, q) -> TimeBase:
    """The clock to differentiate positions ``q`` (N, n) [rad] stamped ``time`` (N,) [s] in (module docstring)."""
    time = np.asarray(time, dtype=float)
    q = float_values(q)
    fitted = nominal_grid(time)
    if fitted is None:
        return TimeBase("stamps", time)
    grid, step = fitted
    squares, largest = [], 0.0
    for start in range(0, time.size, _FIT_BLOCK):     # the stamps' distances from the grid, a block at a time
        deviation = time[start:start + _FIT_BLOCK] - grid[start:start + _FIT_BLOCK]
        squares.append(float(np.dot(deviation, deviation)))
        largest = max(largest, float(np.max(np.abs(deviation))))
    rms = math.sqrt(math.fsum(squares) / time.size)
    if largest <= MIN_JITTER * step:
        return TimeBase("stamps", time, rms, largest)
    rows = np.unique(np.linspace(FIT_WINDOW, time.size - FIT_WINDOW - 1, min(MAX_COMPARED, time.size)).astype(int))
    if rows.size == 0:
        return TimeBase("stamps", time, rms, largest)
    in_stamps, in_grid = _fit_residual(q, time, rows), _fit_residual(q, grid, rows)
    lowest, highest = column_extremes(q)
    spread = highest - lowest
    moving = spread >= 0.05 * spread.max() if spread.max() > 0.0 else np.zeros(spread.shape, bool)
    if not moving.any() or not np.all(in_stamps[moving] > 0.0):
        return TimeBase("stamps", time, rms, largest)
    ratio = float(np.median(in_grid[moving] / in_stamps[moving]))
    return TimeBase("grid" if ratio <= GRID_PREFERENCE else "stamps", grid if ratio <= GRID_PREFERENCE else time,
                    rms, largest, ratio)
