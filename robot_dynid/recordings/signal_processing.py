"""Signal conditioning before identification: filtering, differentiation, torque, resampling.

- :func:`lowpass_filter`: zero-phase Butterworth low-pass (``scipy.signal.butter`` as
  second-order sections, run forward and backward by ``sosfiltfilt``). The forward-backward
  pass squares the magnitude response (attenuation 1/2, i.e. -6 dB, at the cutoff, twice the
  roll-off of ``order``) and cancels the phase, so filtered torque stays aligned in time with
  positions differentiated by :func:`differentiate`.
- :func:`differentiate`: velocities and accelerations from sampled positions by local
  polynomial least squares in time: a polynomial of degree ``polyorder`` is fitted to the
  ``window`` samples around each sample, in the samples' own time stamps, and its derivatives
  at that sample's time are returned. The window is centred (zero phase, no lag); near the ends
  the first / last ``window`` samples are used. Stamps need not be uniform (drivers jitter,
  messages get lost): on a uniform grid this is Savitzky-Golay filtering (``mode="interp"``),
  which is what runs there, as a convolution.
- :func:`resample_uniform`: samples onto a uniform grid (cubic spline or linear interpolation),
  never across gaps.
- :func:`resample_streams`: asynchronous streams linearly interpolated onto common stamps.
- :func:`gap_steps`: the one time-gap rule: a step longer than ``factor`` median steps ``h`` is a
  gap. The factor is :data:`GAP_STEPS` (a sample missing at the median rate) unless a use names its
  own: :data:`STAGE_GAP_STEPS` for stages and plotted lines, :func:`derivative_gap_steps` for
  derivative runs.
"""
from __future__ import annotations

import functools
import logging
import math
from dataclasses import dataclass

import numpy as np

from robot_dynid import _online_kernel, stored_columns, validators
from robot_dynid.errors import DataError

__all__ = ["UNIFORM_SAMPLING_TOLERANCE", "lowpass_filter", "sample_interval", "Derivatives", "median_step", "GAP_STEPS",
           "STAGE_GAP_STEPS", "derivative_gap_steps", "gap_threshold", "gap_steps", "gap_breaks", "gap_starts",
           "window_samples_for", "local_polynomial_fit", "SAVGOL_UNIFORMITY", "savitzky_golay_weights",
           "savitzky_golay", "differentiate", "DERIVATIVE_PIECE", "derivative_pieces",
           "piece_derivatives", "centre_derivative", "first_non_increasing", "check_strictly_increasing",
           "interpolate", "ResampledStreams", "resample_streams", "UniformSamples", "resample_uniform"]

logger = logging.getLogger(__name__)

UNIFORM_SAMPLING_TOLERANCE = 0.01
"""Default largest allowed deviation of a sampling interval from the median, relative."""


def lowpass_filter(x, cutoff: float, sample_rate: float, order: int = 4,
                   axis: int = 0) -> np.ndarray:
    """Zero-phase Butterworth low-pass filter.

    Parameters
    ----------
    x : array_like, shape (N, ...) (samples along ``axis``)
        Uniformly sampled signal, any unit.
    cutoff : float
        Cutoff frequency [Hz] of the single-pass filter, 0 < cutoff < sample_rate / 2.
    sample_rate : float
        Sampling rate [Hz].
    order : int
        Butterworth order of one pass (the forward-backward result has twice the roll-off).
    axis : int
        Sample axis.

    Returns
    -------
    ndarray, shape of ``x``
        Filtered signal, same unit, no phase shift.
    """
    x = validators.array(x, "x", min_length=1)
    sample_rate = validators.positive(sample_rate, "sample_rate", DataError, "Hz")
    cutoff = validators.positive(cutoff, "cutoff", DataError, "Hz")
    order = validators.count(order, "order", DataError, 1)
    nyquist = 0.5 * sample_rate
    if cutoff >= nyquist:
        raise DataError(f"cutoff must be below the Nyquist frequency {nyquist:g} Hz "
                        f"(sample_rate / 2), got {cutoff:g} Hz")
    from scipy import signal                          # here, as every scipy import: a command starts faster
    sos = signal.butter(order, cutoff, btype="low", fs=sample_rate, output="sos")
    # sosfiltfilt's default odd-extension pad length
    pad_length = 3 * (2 * len(sos) + 1 - min(int(np.sum(sos[:, 2] == 0)),
                                             int(np.sum(sos[:, 5] == 0))))
    n_samples = x.shape[axis]
    if n_samples <= pad_length:
        raise DataError(f"x has {n_samples} samples along axis {axis}; an order-{order} "
                        f"zero-phase filter needs more than {pad_length}")
    return signal.sosfiltfilt(sos, x, axis=axis)


def sample_interval(time, tolerance: float = UNIFORM_SAMPLING_TOLERANCE) -> float:
    """Sampling interval [s] of uniformly sampled stamps, checked (filters need one).

    Parameters
    ----------
    time : array_like, shape (N,)
        Strictly increasing time stamps [s], N >= 2.
    tolerance : float
        Largest allowed ``|dt_k - median(dt)| / median(dt)``.
    """
    time = _check_time(time)
    step = median_step(time)
    deviation = float(np.max(np.abs(np.diff(time) - step)) / step)
    if deviation > tolerance:
        raise DataError(f"time is not uniformly sampled: a step deviates {deviation:.3g} from "
                        f"the median {step:.6g} s (tolerance {tolerance:g}); resample first")
    return step


@dataclass(frozen=True)
class Derivatives:
    """Local polynomial estimates, each of the shape of the input positions (N, n).

    ``q`` [rad] smoothed positions, ``qd`` [rad/s], ``qdd`` [rad/s^2] (None where not asked for: ``orders`` of
    :func:`differentiate`); ``window`` in samples; ``uniform``: the stamps were uniform and the Savitzky-Golay
    convolution was used.
    """

    q: np.ndarray | None
    qd: np.ndarray | None
    qdd: np.ndarray | None
    window: int
    polyorder: int
    uniform: bool = True


def median_step(time) -> float:
    """Median sampling interval [s] of strictly increasing stamps (N,), N >= 2."""
    return float(np.median(np.diff(np.asarray(time, dtype=float))))


GAP_STEPS = 1.5
"""[1] a step longer than this many median steps is a gap: at least one sample is missing at the
median rate (stamp quality, identification's low-pass runs)."""
STAGE_GAP_STEPS = 5.0
"""[1] the gap factor of stage detection and plotted lines: a few lost samples (a loaded publisher)
neither split a stage nor break a line; a pause of several periods does."""


def derivative_gap_steps(window: int) -> float:
    """[1] the gap factor of derivative runs of ``window`` samples: half the window,
    ``max(window // 2, 1)``, so that a local fit around a sample next to a gap would have nothing
    on one side."""
    return float(max(window // 2, 1))


def gap_threshold(step: float, factor: float = GAP_STEPS) -> float:
    """[s] the longest step that is not a gap, ``factor * step``, at a median step ``step`` [s]."""
    return factor * step


def gap_steps(time, factor: float = GAP_STEPS) -> np.ndarray:
    """Which steps ``time[i + 1] - time[i]`` of stamps ``time`` (N,) [s] are gaps (N - 1,) bool:
    longer than :func:`gap_threshold` of the median step."""
    steps = np.diff(np.asarray(time, dtype=float))
    if steps.size == 0:
        return np.zeros(0, dtype=bool)
    return steps > gap_threshold(float(np.median(steps)), factor)


def gap_breaks(time, factor: float = GAP_STEPS) -> np.ndarray:
    """Indices ``i`` (ascending) of the samples that follow a gap (:func:`gap_steps`): the starts of
    the contiguous runs after the first."""
    return np.flatnonzero(gap_steps(time, factor)) + 1


def gap_starts(time, window: int) -> np.ndarray:
    """Indices ``i`` where the step ``time[i + 1] - time[i]`` is a gap for a derivative window of
    ``window`` samples (:func:`derivative_gap_steps`)."""
    return np.flatnonzero(gap_steps(time, derivative_gap_steps(window)))


def window_samples_for(window_seconds: float, step: float) -> int:
    """Odd number of samples nearest to ``window_seconds`` [s] at a sampling interval ``step`` [s]."""
    return 2 * int(round(0.5 * (window_seconds / step - 1.0))) + 1


_FIT_CHUNK = 8192  # rows per block of the non-uniform fit: bounds its temporaries to a few MB


def local_polynomial_fit(q, time, window: int, polyorder: int, rows=None, step: float | None = None) -> np.ndarray:
    """Value, first and second derivative at ``time[rows]`` of the degree-``polyorder``
    polynomial fitted by least squares to the ``window`` samples around each row.

    The window of row ``i`` is samples ``i - window // 2 .. i + window // 2``, shifted inwards
    at the ends; the fit is in the stamps' own time, so they may be non-uniform.

    Parameters
    ----------
    q : ndarray, shape (N, m)
    time : ndarray, shape (N,)
        Strictly increasing [s], N >= window.
    rows : array_like of int, optional
        Increasing rows to evaluate; default all.
    step : float, optional
        [s] the scale of the local times (``window // 2`` steps); default the median step of ``time`` (a piece
        of a longer run takes the run's, to give the same numbers).

    Returns
    -------
    ndarray, shape (3, len(rows), m)
        q, dq/dt, d2q/dt2 at the rows.
    """
    n_samples = time.size
    rows = np.arange(n_samples) if rows is None else np.asarray(rows, dtype=np.int64)
    half = window // 2
    scale = half * (median_step(time) if step is None else step)   # local times (t - t_i) / scale in about [-1, 1]
    # windows[k] is samples k .. k + window - 1, a view: (N - window + 1, window) and (.., m, window)
    time_windows = np.lib.stride_tricks.sliding_window_view(time, window)
    q_windows = np.lib.stride_tricks.sliding_window_view(q, window, axis=0)
    result = np.empty((3, rows.size, q.shape[1]))
    for first in range(0, rows.size, _FIT_CHUNK):
        block = rows[first:first + _FIT_CHUNK]
        start = np.clip(block - half, 0, n_samples - window)
        s = (time_windows[start] - time[block, None]) / scale              # (b, window)
        vandermonde = np.empty(s.shape + (polyorder + 1,))
        vandermonde[..., 0] = 1.0
        for power in range(1, polyorder + 1):
            vandermonde[..., power] = vandermonde[..., power - 1] * s
        transposed = vandermonde.transpose(0, 2, 1)                        # (b, p + 1, window)
        coefficients = np.linalg.solve(transposed @ vandermonde,
                                       transposed @ q_windows[start].transpose(0, 2, 1))
        result[0, first:first + block.size] = coefficients[:, 0]
        result[1, first:first + block.size] = coefficients[:, 1] / scale
        result[2, first:first + block.size] = 2.0 * coefficients[:, 2] / scale**2
    return result


SAVGOL_UNIFORMITY = 1e-3
"""Stamps whose steps all lie within this fraction of their median are differentiated by the
Savitzky-Golay convolution (the same fit as on the stamps themselves, to about this fraction)."""


@functools.lru_cache(maxsize=64)
def _fit_operator(window: int, polyorder: int, order: int, positions: tuple) -> np.ndarray:
    """(len(positions), window): the ``order``-th derivative at sample ``positions`` (0 .. window - 1, unit step)
    of the degree-``polyorder`` least-squares polynomial through ``window`` consecutive samples."""
    half = 0.5 * (window - 1)
    scale = max(half, 1.0)      # local coordinates in [-1, 1]: a well-conditioned Vandermonde
    fit = np.linalg.pinv(np.vander((np.arange(window) - half) / scale, polyorder + 1, increasing=True))
    s = (np.asarray(positions, dtype=float) - half) / scale
    powers = np.arange(polyorder + 1)
    falling = np.array([math.perm(int(j), order) for j in powers], dtype=float)     # j! / (j - order)!
    derivative = falling * s[:, None] ** np.maximum(powers - order, 0)
    operator = derivative @ fit / scale**order
    operator.flags.writeable = False
    return operator


def savitzky_golay_weights(window: int, polyorder: int, order: int = 0, delta: float = 1.0) -> np.ndarray:
    """(window,) weights of the ``order``-th derivative at a window's centre sample: the dot product with the
    window's samples in time order (``scipy.signal.savgol_coeffs(..., use="dot")``), samples ``delta`` apart."""
    return _fit_operator(window, polyorder, order, (window // 2,))[0] / delta**order


def savitzky_golay(x, window: int, polyorder: int, order: int = 0, delta: float = 1.0) -> np.ndarray:
    """Savitzky-Golay filter of ``x`` (N, ...) along its first axis: the ``order``-th derivative of the local
    least-squares polynomial of degree ``polyorder`` over ``window`` samples (odd, at most N) spaced ``delta``,
    at each sample; the first and last ``window // 2`` samples from the polynomial of the first and last window
    (``scipy.signal.savgol_filter``'s ``mode="interp"``, without importing scipy.signal: 1 s of a command's
    start)."""
    from scipy.ndimage import correlate1d
    x = np.asarray(x, dtype=float)
    half, n = window // 2, x.shape[0]
    result = correlate1d(x, savitzky_golay_weights(window, polyorder, order, delta), axis=0, mode="constant")
    if half:
        columns, out = x.reshape(n, -1), result.reshape(n, -1)
        out[:half] = _fit_operator(window, polyorder, order, tuple(range(half))) @ columns[:window] / delta**order
        out[n - half:] = (_fit_operator(window, polyorder, order, tuple(range(window - half, window)))
                          @ columns[n - window:] / delta**order)
    return result


def _still_windows(values, window: int) -> np.ndarray:
    """(N, m) True where the ``window`` samples a local fit of ``values`` (N, m) uses at that sample (centred; the
    first or last ``window`` near the ends) are all equal: the fit is a constant, its derivatives exactly 0. Column
    by column: the filters' temporaries are one column each. A window of two or more samples is all equal only
    where neighbouring samples are, so a column with no two equal neighbours (noisy signals) is all False without
    the filters."""
    from scipy.ndimage import maximum_filter1d, minimum_filter1d
    n, half = values.shape[0], window // 2
    still = np.empty(values.shape, dtype=bool)
    for j in range(values.shape[1]):
        if window >= 2 and not np.any(values[1:, j] == values[:-1, j]):
            still[:, j] = False
            continue
        column = np.ascontiguousarray(values[:, j])
        still[:, j] = maximum_filter1d(column, window) == minimum_filter1d(column, window)
    if half:
        still[:half] = np.all(values[:window] == values[0], axis=0)
        still[n - half:] = np.all(values[n - window:] == values[n - 1], axis=0)
    return still


def differentiate(q, time, window_samples: int | None = None,
                  window_seconds: float | None = None, polyorder: int = 3, orders=(0, 1, 2)) -> Derivatives:
    """Velocities and accelerations from positions by local polynomial least squares in time.

    Parameters
    ----------
    q : array_like, shape (N, n) or (N,)
        Positions [rad] (or any unit; derivatives per second).
    time : array_like, shape (N,)
        Time stamps [s], strictly increasing; uniform or not (see the module docstring).
    window_samples : int, optional
        Odd window length in samples, ``polyorder < window_samples <= N``.
    window_seconds : float, optional
        Window length [s], rounded to the nearest odd number of median sampling intervals.
        Give exactly one of ``window_samples`` and ``window_seconds``.
    polyorder : int
        Degree of the local polynomial, >= 2 (accelerations need the second derivative).
    orders : sequence of int
        Which of the smoothed positions (0), velocities (1) and accelerations (2) to compute; the others are None
        in the result (on uniform stamps each is one convolution, of the positions' size).

    Returns
    -------
    Derivatives
    """
    orders = tuple(orders)
    if not orders or not set(orders) <= {0, 1, 2}:
        raise DataError(f"orders must be some of 0, 1, 2 (positions, velocities, accelerations), got {orders}")
    stored = stored_columns.is_stored(q)
    q = q if stored else validators.array(q, "q", ndim=(1, 2))
    time = _check_time(time)
    if time.size != q.shape[0]:
        raise DataError(f"time has {time.size} samples, q has {q.shape[0]}")
    polyorder = validators.count(polyorder, "polyorder", DataError, 2)
    if (window_samples is None) == (window_seconds is None):
        raise DataError("give exactly one of window_samples and window_seconds")
    step = median_step(time)
    if window_seconds is not None:
        window_seconds = validators.positive(window_seconds, "window_seconds", DataError, "s")
        window = window_samples_for(window_seconds, step)
        source = f"window_seconds = {window_seconds:g} s ({window} samples at {step:g} s)"
    else:
        window = validators.count(window_samples, "window_samples", DataError, 1)
        if window % 2 == 0:
            raise DataError(f"window_samples must be odd, got {window}")
        source = f"window_samples = {window}"
    if window <= polyorder:
        raise DataError(f"{source} must exceed polyorder = {polyorder}")
    if window > q.shape[0]:
        raise DataError(f"{source} exceeds the {q.shape[0]} samples of q")
    # the largest |steps - step|, from the extreme steps (subtracting a number keeps their order)
    steps = np.diff(time)
    uniform = bool(max(steps.max() - step, step - steps.min()) <= SAVGOL_UNIFORMITY * step)
    del steps
    n_samples, columns = q.shape[0], q if stored else q.reshape(q.shape[0], -1)
    # a stored column's derivatives are stored, written a piece at a time
    values = {order: stored_columns.RowsWriter(columns.shape, stored) for order in orders}
    for start, stop, first, last in derivative_pieces(n_samples, window, DERIVATIVE_PIECE):
        fitted = piece_derivatives(np.asarray(columns[first:last]), time[first:last], window, polyorder, orders, step,
                                   uniform)
        for order, piece in fitted.items():
            values[order].put(start, stop, piece[start - first:stop - first])
    results = {order: writer.result() for order, writer in values.items()}
    q_, qd, qdd = (None if order not in results else results[order] if stored else results[order].reshape(q.shape)
                   for order in range(3))
    return Derivatives(q=q_, qd=qd, qdd=qdd, window=window, polyorder=polyorder, uniform=uniform)


DERIVATIVE_PIECE = 65_536
"""Rows :func:`differentiate` fits at once: a long run's derivatives come in pieces of this many rows with half a
window on either side (bounded temporaries: a few MB), the same numbers as in one piece."""


def derivative_pieces(n_samples: int, window: int, piece: int = DERIVATIVE_PIECE):
    """Yield ``(start, stop, first, last)``: rows ``start:stop`` of a run of ``n_samples`` come out of the
    derivative fit (``window`` samples, odd, at most ``n_samples``) of rows ``first:last`` alone
    (:func:`piece_derivatives`): every centred window of those rows lies inside them, and a piece reaches the run's
    first or last row only where its rows take the run's edge fits there."""
    half = window // 2
    for start in range(0, n_samples, piece):
        stop = min(start + piece, n_samples)
        first = max(0, min(start - half, stop - window))
        last = min(n_samples, max(stop + half, first + window))
        yield start, stop, first, last


def piece_derivatives(columns, time, window: int, polyorder: int, orders, step: float, uniform: bool) -> dict:
    """``{order: (m, k) values}`` of the local polynomial fit (:func:`differentiate`) of ``columns`` (m, k) at
    stamps ``time`` (m,) [s], with the run's median ``step`` [s] and its ``uniform`` decision: the rows whose
    window lies inside the piece are those of the whole run (:func:`derivative_pieces`); the first and last
    ``window // 2`` rows take the piece's edge fits."""
    if uniform:
        values = {order: savitzky_golay(columns, window, polyorder, order, step) for order in orders}
    else:
        fitted = local_polynomial_fit(columns, time, window, polyorder, step=step)
        values = {order: fitted[order] for order in orders}
    if 1 in values or 2 in values:
        # equal samples (an encoder at rest) fit a constant: derivatives 0, not round-off whose sign a friction
        # model would take for a direction of motion
        still = _still_windows(columns, window)
        for order in (1, 2):
            if order in values:
                values[order][still] = 0.0
    return values


@functools.lru_cache(maxsize=32)
def _centre_coefficients(window: int, polyorder: int, order: int) -> np.ndarray:
    """Savitzky-Golay weights of the ``order``-th derivative at a window's centre, unit step."""
    return savitzky_golay_weights(window, polyorder, order)


def centre_derivative(q, time, polyorder: int = 3, order: int = 2, out: np.ndarray | None = None) -> np.ndarray:
    """The ``order``-th derivative at the centre sample of one odd window ``q`` (w, m), ``time``
    (w,) [s], by the local polynomial fit of :func:`differentiate` (online use: one sample at a
    time). Uniform stamps use cached Savitzky-Golay weights (compiled: ``_online_kernel``), others
    the fit in their own time. ``out``: a C-contiguous float64 (m,) array to write the result into
    (float64 ``q`` and ``time`` of any strides are then used as they are)."""
    if out is None:
        q, time = np.asarray(q, dtype=float), np.asarray(time, dtype=float)
    window = len(time)
    result = np.empty(q.shape[1]) if out is None else out
    if _online_kernel.centre_derivative(q, time, _centre_coefficients(window, polyorder, order), SAVGOL_UNIFORMITY,
                                        order, result):
        return result
    scale = 0.5 * (time[-1] - time[0])                  # local times s = (t - t_c) / scale in [-1, 1]
    vandermonde = np.vander((time - time[window // 2]) / scale, polyorder + 1, increasing=True)
    coefficients = np.linalg.solve(vandermonde.T @ vandermonde, vandermonde.T @ q)
    result[...] = math.factorial(order) * coefficients[order] / scale**order
    return result


def first_non_increasing(time: np.ndarray) -> int | None:
    """Index ``i`` of the first sample with ``time[i] <= time[i - 1]`` (their difference not positive), None if there
    is none."""
    if np.all(time[1:] > time[:-1]):        # every difference positive: found without an array of them
        return None
    bad = np.flatnonzero(np.diff(time) <= 0.0)
    return int(bad[0]) + 1 if bad.size else None


def check_strictly_increasing(time: np.ndarray) -> None:
    """Raise :class:`DataError` naming the first sample of ``time`` (N,) [s] not after its
    predecessor."""
    offending = first_non_increasing(time)
    if offending is not None:
        raise DataError(f"time must be strictly increasing: time[{offending}] = "
                        f"{float(time[offending])!r} s <= time[{offending - 1}] = "
                        f"{float(time[offending - 1])!r} s")


def _check_time(time) -> np.ndarray:
    time = validators.array(time, "time", shape=(None,), axes=("samples",), min_length=2, unit="s")
    check_strictly_increasing(time)
    return time


def interpolate(x, xp, values, outside: str = "nan") -> np.ndarray:
    """``values`` (M, ...) given at increasing ``xp`` (M,), linearly interpolated at ``x`` (K,) ->
    (K, ...); every column on its own, its NaN entries skipped. Beyond ``xp`` the values are NaN
    (``outside="nan"``) or the edge values held (``"hold"``); a column with no finite value is NaN."""
    values = np.asarray(values, dtype=float)
    flat = values.reshape(values.shape[0], -1)
    fill = {"left": np.nan, "right": np.nan} if outside == "nan" else {}
    result = np.full((np.size(x), flat.shape[1]), np.nan)
    for column in range(flat.shape[1]):
        valid = np.isfinite(flat[:, column])
        if valid.any():
            result[:, column] = np.interp(x, xp[valid], flat[valid, column], **fill)
    return result.reshape((np.size(x),) + values.shape[1:])


@dataclass(frozen=True)
class ResampledStreams:
    """Streams interpolated onto common stamps.

    ``time`` (K,) [s] the kept stamps, ``values`` name -> (K, ...) in each stream's unit,
    ``overlap`` (start, end) [s] the time range all streams cover, ``n_outside`` the number
    of requested stamps dropped for lying outside it.
    """

    time: np.ndarray
    values: dict
    overlap: tuple[float, float]
    n_outside: int


def resample_streams(streams: dict, stamps) -> ResampledStreams:
    """Linear interpolation of asynchronous streams onto common stamps, without extrapolation.

    Parameters
    ----------
    streams : dict
        name -> (time (M,) [s] strictly increasing, values (M,) or (M, ...)).
    stamps : array_like, shape (K,)
        Requested common stamps [s], increasing. Stamps outside the range covered by every
        stream are dropped and counted.

    Returns
    -------
    ResampledStreams
    """
    if not streams:
        raise DataError("streams is empty")
    stamps = validators.array(stamps, "stamps", shape=(None,), axes=("samples",), unit="s")
    if np.any(np.diff(stamps) < 0.0):
        raise DataError("stamps must be increasing")
    checked = {}
    for name, stream in streams.items():
        if len(stream) != 2:
            raise DataError(f"stream {name!r} must be a (time, values) pair")
        time = validators.array(stream[0], f"stream {name!r} time", shape=(None,), axes=("samples",), min_length=2,
                                unit="s")
        if np.any(np.diff(time) <= 0.0):
            raise DataError(f"stream {name!r} time must be strictly increasing")
        values = validators.array(stream[1], f"stream {name!r} values", min_length=1)
        if values.shape[0] != time.size:
            raise DataError(f"stream {name!r} values must have {time.size} samples along "
                            f"axis 0, got shape {values.shape}")
        checked[name] = (time, values)
    start = max(time[0] for time, _ in checked.values())
    end = min(time[-1] for time, _ in checked.values())
    if start > end:
        raise DataError(f"streams {sorted(checked)} do not overlap in time "
                        f"(latest start {start:g} s > earliest end {end:g} s)")
    inside = (stamps >= start) & (stamps <= end)
    kept = stamps[inside]
    n_outside = int(stamps.size - kept.size)
    if n_outside:
        logger.info("resample_streams: %d of %d stamps outside the overlap [%g, %g] s dropped",
                    n_outside, stamps.size, start, end)
    values = {name: interpolate(kept, time, samples) for name, (time, samples) in checked.items()}
    return ResampledStreams(time=kept, values=values, overlap=(float(start), float(end)),
                            n_outside=n_outside)


@dataclass(frozen=True)
class UniformSamples:
    """Samples on a uniform grid (:func:`resample_uniform`).

    ``time`` (K,) [s]; ``values`` name -> (K, ...) in each input's unit; ``source`` (K,) index of
    the last input sample at or before each output sample (to carry labels over); ``n_lost``
    input samples in runs too short to resample (fewer than 2 samples between gaps).
    """

    time: np.ndarray
    values: dict
    source: np.ndarray
    n_lost: int


def resample_uniform(time, rate: float, cubic=None, linear=None, breaks=()) -> UniformSamples:
    """Samples onto the uniform grid ``t_r + k / rate`` of every run between ``breaks``.

    A run starts at one of ``breaks`` (indices of samples that follow a gap) or at 0; its grid
    starts at its first stamp ``t_r`` and ends at or before its last: gaps are never bridged.

    Parameters
    ----------
    time : array_like, shape (N,)
        Strictly increasing stamps [s].
    rate : float
        Output rate [Hz] (> 0).
    cubic : dict, optional
        name -> (N, ...) values interpolated by a not-a-knot cubic spline through the samples
        (positions: their derivatives stay smooth).
    linear : dict, optional
        name -> (N, ...) values interpolated linearly (velocities, torques, temperatures).
    breaks : sequence of int
        Indices of the first sample after each gap.
    """
    time = _check_time(time)
    rate = validators.positive(rate, "rate", DataError, "Hz")
    inputs = {**{name: ("cubic", np.asarray(v, float)) for name, v in (cubic or {}).items()},
              **{name: ("linear", np.asarray(v, float)) for name, v in (linear or {}).items()}}
    for name, (_, values) in inputs.items():
        if values.shape[:1] != time.shape:
            raise DataError(f"{name} has {values.shape[:1]} samples along axis 0, time {time.size}")
    times, sources = [], []
    pieces: dict[str, list] = {name: [] for name in inputs}
    n_lost = 0
    for run in np.split(np.arange(time.size), np.asarray(breaks, dtype=np.int64)):
        if run.size < 2:
            n_lost += run.size
            continue
        local = time[run] - time[run[0]]               # run-relative: absolute ROS times lose digits
        grid = np.arange(int(np.floor(local[-1] * rate * (1.0 + 1e-12))) + 1) / rate
        times.append(time[run[0]] + grid)
        # a grid point on a stamp (up to rounding) takes that stamp's sample
        sources.append(run[0] + np.searchsorted(local, grid + 1e-9 / rate, side="right") - 1)
        for name, (kind, values) in inputs.items():
            if kind == "cubic":
                from scipy.interpolate import CubicSpline
                pieces[name].append(CubicSpline(local, values[run], axis=0)(grid))
            else:
                # "hold": the grid ends on the run's last stamp, up to rounding
                pieces[name].append(interpolate(grid, local, values[run], "hold"))
    if not times:
        raise DataError(f"no run of 2 or more samples between gaps to resample ({time.size} samples)")
    return UniformSamples(np.concatenate(times), {name: np.concatenate(parts) for name, parts in pieces.items()},
                          np.concatenate(sources), n_lost)
