"""Signal conditioning before identification: filtering, differentiation, torque, resampling.

- :func:`lowpass_filter`: zero-phase Butterworth low-pass (``scipy.signal.butter`` as
  second-order sections, run forward and backward by ``sosfiltfilt``). The forward-backward
  pass squares the magnitude response (attenuation 1/2, i.e. -6 dB, at the cutoff, twice the
  roll-off of ``order``) and cancels the phase, so filtered torque stays aligned in time with
  positions differentiated by :func:`differentiate`.
- :func:`differentiate`: velocities and accelerations from sampled positions by
  Savitzky-Golay filtering: a polynomial of degree ``polyorder`` is fitted by least squares
  to each window of ``window`` samples centred on the sample, and its derivatives at the
  centre are returned. The window is symmetric, so the estimates have no lag (zero phase);
  near the ends scipy fits one polynomial to the first / last window (``mode="interp"``).
  Needs uniformly sampled data.
- :func:`current_to_torque`: joint torque from motor current.
- :func:`resample_streams`: asynchronous streams linearly interpolated onto common stamps.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np
from scipy import signal

from robot_dynid.errors import DataError

logger = logging.getLogger(__name__)

UNIFORM_SAMPLING_TOLERANCE = 0.01
"""Default largest allowed deviation of a sampling interval from the median, relative."""


def _check_samples(name: str, values, axis: int = 0) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    if values.ndim == 0:
        raise DataError(f"{name} must be an array of samples, got a scalar")
    if not np.all(np.isfinite(values)):
        raise DataError(f"{name} contains non-finite values")
    return values


def _check_positive(name: str, value: float, unit: str) -> float:
    value = float(value)
    if not np.isfinite(value) or value <= 0.0:
        raise DataError(f"{name} must be finite and > 0 [{unit}], got {value!r}")
    return value


def _check_order(name: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise DataError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


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
    x = _check_samples("x", x)
    sample_rate = _check_positive("sample_rate", sample_rate, "Hz")
    cutoff = _check_positive("cutoff", cutoff, "Hz")
    order = _check_order("order", order, 1)
    nyquist = 0.5 * sample_rate
    if cutoff >= nyquist:
        raise DataError(f"cutoff must be below the Nyquist frequency {nyquist:g} Hz "
                        f"(sample_rate / 2), got {cutoff:g} Hz")
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
    """Sampling interval [s] of uniformly sampled stamps, checked.

    Parameters
    ----------
    time : array_like, shape (N,)
        Strictly increasing time stamps [s], N >= 2.
    tolerance : float
        Largest allowed ``|dt_k - median(dt)| / median(dt)``.
    """
    time = _check_samples("time", time)
    if time.ndim != 1 or time.size < 2:
        raise DataError(f"time must have shape (N,) with N >= 2, got {time.shape}")
    steps = np.diff(time)
    if np.any(steps <= 0.0):
        k = int(np.flatnonzero(steps <= 0.0)[0])
        raise DataError(f"time must be strictly increasing; time[{k + 1}] = {time[k + 1]!r} "
                        f"<= time[{k}] = {time[k]!r}")
    step = float(np.median(steps))
    deviation = float(np.max(np.abs(steps - step)) / step)
    if deviation > tolerance:
        raise DataError(f"time is not uniformly sampled: a step deviates {deviation:.3g} from "
                        f"the median {step:.6g} s (tolerance {tolerance:g}); resample first")
    return step


@dataclass(frozen=True)
class Derivatives:
    """Savitzky-Golay estimates, each of the shape of the input positions (N, n).

    ``q`` [rad] smoothed positions, ``qd`` [rad/s], ``qdd`` [rad/s^2]; ``window`` in samples.
    """

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    window: int
    polyorder: int


def differentiate(q, time, window_samples: int | None = None,
                  window_seconds: float | None = None, polyorder: int = 3,
                  tolerance: float = UNIFORM_SAMPLING_TOLERANCE) -> Derivatives:
    """Velocities and accelerations from positions by Savitzky-Golay differentiation.

    Parameters
    ----------
    q : array_like, shape (N, n) or (N,)
        Uniformly sampled positions [rad] (or any unit; derivatives per second).
    time : array_like, shape (N,)
        Time stamps [s], uniform within ``tolerance`` (see :func:`sample_interval`).
    window_samples : int, optional
        Odd window length in samples, ``polyorder < window_samples <= N``.
    window_seconds : float, optional
        Window length [s], rounded to the nearest odd number of samples. Give exactly one
        of ``window_samples`` and ``window_seconds``.
    polyorder : int
        Degree of the local polynomial, >= 2 (accelerations need the second derivative).
    tolerance : float
        Sampling uniformity tolerance.

    Returns
    -------
    Derivatives
    """
    q = _check_samples("q", q)
    if q.ndim not in (1, 2):
        raise DataError(f"q must have shape (N, n) or (N,), got {q.shape}")
    step = sample_interval(time, tolerance)
    if len(time) != q.shape[0]:
        raise DataError(f"time has {len(time)} samples, q has {q.shape[0]}")
    polyorder = _check_order("polyorder", polyorder, 2)
    if (window_samples is None) == (window_seconds is None):
        raise DataError("give exactly one of window_samples and window_seconds")
    if window_seconds is not None:
        window_seconds = _check_positive("window_seconds", window_seconds, "s")
        window = 2 * int(round(0.5 * (window_seconds / step - 1.0))) + 1
        source = f"window_seconds = {window_seconds:g} s ({window} samples at {step:g} s)"
    else:
        window = _check_order("window_samples", window_samples, 1)
        if window % 2 == 0:
            raise DataError(f"window_samples must be odd, got {window}")
        source = f"window_samples = {window}"
    if window <= polyorder:
        raise DataError(f"{source} must exceed polyorder = {polyorder}")
    if window > q.shape[0]:
        raise DataError(f"{source} exceeds the {q.shape[0]} samples of q")

    def derivative(order: int) -> np.ndarray:
        return signal.savgol_filter(q, window, polyorder, deriv=order, delta=step, axis=0)

    return Derivatives(q=derivative(0), qd=derivative(1), qdd=derivative(2), window=window,
                       polyorder=polyorder)


def _per_joint(name: str, value, n_joints: int, unit: str,
               upper: float | None = None) -> np.ndarray:
    value = np.broadcast_to(np.asarray(value, dtype=float), (n_joints,)) \
        if np.ndim(value) == 0 else np.asarray(value, dtype=float)
    if value.shape != (n_joints,):
        raise DataError(f"{name} must have shape ({n_joints},) (one per joint), got {value.shape}")
    invalid = ~np.isfinite(value) | (value <= 0.0)
    if upper is not None:
        invalid |= value > upper
    bad = np.flatnonzero(invalid)
    if bad.size:
        j = int(bad[0])
        bound = "> 0" if upper is None else f"in (0, {upper:g}]"
        raise DataError(f"{name} of joint {j + 1} must be {bound} [{unit}], got {value[j]!r}")
    return value


def current_to_torque(current, torque_constant, gear_ratio, efficiency=None) -> np.ndarray:
    """Joint torque from motor current, ``tau = i k_t r eta``.

    Parameters
    ----------
    current : array_like, shape (N, n)
        Motor current [A].
    torque_constant : array_like, shape (n,) or float
        Motor torque constant k_t [N m/A] (motor side).
    gear_ratio : array_like, shape (n,) or float
        Reduction r = motor speed / joint speed (> 0; use the sign of k_t for direction).
    efficiency : array_like, shape (n,) or float, optional
        Gear efficiency eta in (0, 1]; 1 by default. Applied as a plain factor (a motoring
        efficiency; friction models identify the rest).

    Returns
    -------
    ndarray, shape (N, n)
        Joint torque [N m].
    """
    current = _check_samples("current", current)
    if current.ndim != 2:
        raise DataError(f"current must have shape (N, n), got {current.shape}")
    n_joints = current.shape[1]
    torque_constant = np.asarray(torque_constant, dtype=float)
    if np.ndim(torque_constant) == 0:
        torque_constant = np.full(n_joints, float(torque_constant))
    if torque_constant.shape != (n_joints,) or np.any(~np.isfinite(torque_constant)) \
            or np.any(torque_constant == 0.0):
        raise DataError(f"torque_constant must be ({n_joints},) finite and non-zero [N m/A], "
                        f"got {torque_constant!r}")
    gear_ratio = _per_joint("gear_ratio", gear_ratio, n_joints, "-")
    factor = torque_constant * gear_ratio
    if efficiency is not None:
        factor = factor * _per_joint("efficiency", efficiency, n_joints, "-", upper=1.0)
    return current * factor


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
    stamps = _check_samples("stamps", stamps)
    if stamps.ndim != 1 or np.any(np.diff(stamps) < 0.0):
        raise DataError(f"stamps must be an increasing (K,) array, got shape {stamps.shape}")
    checked = {}
    for name, stream in streams.items():
        if len(stream) != 2:
            raise DataError(f"stream {name!r} must be a (time, values) pair")
        time = _check_samples(f"stream {name!r} time", stream[0])
        values = _check_samples(f"stream {name!r} values", stream[1])
        if time.ndim != 1 or time.size < 2 or np.any(np.diff(time) <= 0.0):
            raise DataError(f"stream {name!r} time must be strictly increasing with >= 2 "
                            f"samples, got shape {time.shape}")
        if values.shape[:1] != time.shape:
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
    values = {}
    for name, (time, samples) in checked.items():
        flat = samples.reshape(time.size, -1)
        interpolated = np.column_stack([np.interp(kept, time, flat[:, c])
                                        for c in range(flat.shape[1])])
        values[name] = interpolated.reshape((kept.size,) + samples.shape[1:])
    return ResampledStreams(time=kept, values=values, overlap=(float(start), float(end)),
                            n_outside=n_outside)
