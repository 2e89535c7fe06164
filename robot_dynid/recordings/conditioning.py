"""How recorded joint signals are conditioned before identification and validation, and the record of it.

A model is only as comparable as the data it is judged on: a held-out residual computed on raw
positions differentiated one way and a training residual computed on resampled, low-pass filtered
data differentiated another are not the same number. :class:`Conditioning` is what was done, kept
in a model's provenance (``provenance.conditioning``) so that ``validate``, ``predict`` and
``report`` condition held-out data the same way by default.

Derivatives (:func:`derivative_plan`)
    JointState has no accelerations and many drivers no velocities. Where velocities are recorded
    (and ``derive`` is off) accelerations come from them, ``qdd = d/dt qd`` (a local quadratic fit,
    first derivative); otherwise both come from the positions (a local cubic fit). The window is
    given (``derivative_window`` [s]) or chosen by rate and noise: the shortest window, from
    :data:`MIN_WINDOW_SAMPLES` samples to :data:`MAX_DERIVATIVE_WINDOW`, whose acceleration noise
    ``sigma * ||c||`` (``sigma`` the white noise of the differentiated signal, :func:`noise_std`;
    ``c`` the fit's derivative coefficients) is at most :data:`ACCELERATION_NOISE_FRACTION` of the
    acceleration's RMS on every joint that moves; where no window reaches it, the longest, and the
    fraction reached is reported.

Velocity at rest (:func:`stationary_mask`)
    A joint is at rest where the spread of its positions stays within what their noise alone spreads them
    (:data:`REST_BAND_MARGIN`; the noise estimated from the data, :func:`noise_std`; at least one encoder count)
    for at least :data:`REST_DWELL` seconds: standing still, never a moving joint passing through zero velocity
    (a reversal) or creeping slowly. Velocities derived from quantised or noisy positions flip sign at random
    there, and with them every Coulomb friction column; ``velocity_at_rest``: ``"auto"`` (default) sets derived
    velocities to 0 at rest and uses recorded ones as measured (a driver's velocity at standstill is what the
    drive saw; on real arms zeroing it lost held-out accuracy, docs/real_robots.md), ``"zero"`` sets both to 0
    at rest, ``"measured"`` neither.

Low-pass filtering (``lowpass`` [Hz]) is done by identification (parallel filtering of torques and
regressor columns) and, in validation, on measured and predicted torques alike.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError
from robot_dynid.recordings.signal_processing import median_step, savitzky_golay, savitzky_golay_weights
from robot_dynid.stored_columns import float_values

__all__ = ["ACCELERATION_NOISE_FRACTION", "MIN_WINDOW_SAMPLES", "MAX_DERIVATIVE_WINDOW", "MAX_GIVEN_WINDOW",
           "REST_DWELL", "REST_BAND_MARGIN", "VELOCITY_AT_REST", "MOVING_FRACTION",
           "Conditioning", "REST_TEXT", "ESTIMATE_SAMPLES", "ESTIMATE_BLOCKS", "spread_blocks", "noise_std",
           "derivative_gain", "DerivativePlan", "derivative_plan", "stationary_mask", "REST_PIECE", "rest_bands",
           "describe_rest", "conditioning_from_provenance"]

ACCELERATION_NOISE_FRACTION = 0.1
"""The automatic derivative window keeps the acceleration noise [rad/s^2] below this fraction of the
acceleration's RMS (per joint that moves)."""
MIN_WINDOW_SAMPLES = 7
"""Fewest samples of a derivative window (a cubic fit needs 5; 7 keeps the noise down)."""
MAX_DERIVATIVE_WINDOW = 0.2
"""[s] longest automatic window: longer fits smooth the motion itself (a cubic over 0.2 s follows
motions up to a few Hz)."""
MAX_GIVEN_WINDOW = 2.0
"""[s] longest ``derivative_window`` a user may give."""
REST_DWELL = 0.2
"""[s] shortest stationary stretch that is a rest (:func:`stationary_mask`): a reversal's turn takes less with any
real acceleration, a motion through zero velocity spends no time there."""
REST_BAND_MARGIN = 1.5
"""A joint stands still while the spread of its positions over the dwell stays within ``2 sigma (sqrt(2 ln N) +
REST_BAND_MARGIN)`` (``sigma`` the position noise, ``N`` the samples of the dwell: the range N samples of white
noise reach, with margin), at least one encoder count."""
VELOCITY_AT_REST = ("auto", "zero", "measured")
"""What a joint at rest gets: ``auto`` derived velocities 0, recorded as measured; ``zero`` both 0; ``measured``
neither."""
MOVING_FRACTION = 0.05
"""Joints whose acceleration RMS is below this fraction of the largest joint's do not choose the window
(a joint held still has no acceleration signal to keep above its noise)."""


@dataclasses.dataclass(frozen=True)
class Conditioning:
    """What is done to a recording before its equations are formed.

    Attributes
    ----------
    resample : float or None
        [Hz] put the samples on a uniform grid first; None: the recorded stamps.
    derive : bool
        Derive velocities from the positions even where they are recorded.
    derivative_window : float or None
        [s] window of the derivative fits; None: chosen by rate and noise (module docstring).
    velocity_at_rest : {"auto", "zero", "measured"}
        Which velocities of a joint at rest (standing still for :data:`REST_DWELL`) are set to 0: derived ones
        (auto), all (zero), none (measured); module docstring.
    lowpass : float or None
        [Hz] zero-phase low-pass of torques (and regressor columns) in identification; None: none.
    accelerations_from_positions : bool
        Derive accelerations from the positions even where velocities are recorded (as the identifier
        node does online).
    """

    resample: float | None = None
    derive: bool = False
    derivative_window: float | None = None
    velocity_at_rest: str = "auto"
    lowpass: float | None = None
    accelerations_from_positions: bool = False

    def __post_init__(self):
        for name, unit, maximum in (("resample", "Hz", None), ("derivative_window", "s", MAX_GIVEN_WINDOW),
                                    ("lowpass", "Hz", None)):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validators.in_range(value, name, DataError, unit, 0.0, maximum,
                                                                   allow_minimum=False))
        for name in ("derive", "accelerations_from_positions"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise DataError(f"{name} must be true or false, got {getattr(self, name)!r}")
        validators.text(self.velocity_at_rest, "velocity_at_rest", DataError, VELOCITY_AT_REST)

    def zeroes(self, recorded: bool) -> bool:
        """Whether velocities of a joint at rest are set to 0, for ``recorded`` (else derived) velocities."""
        return self.velocity_at_rest == "zero" or (self.velocity_at_rest == "auto" and not recorded)

    def to_dict(self) -> dict:
        return {"resample_hz": self.resample, "derive": bool(self.derive),
                "derivative_window_s": self.derivative_window,
                "velocity_at_rest": self.velocity_at_rest,
                "lowpass_hz": self.lowpass, "accelerations_from_positions": bool(self.accelerations_from_positions)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "conditioning") -> "Conditioning":
        """The inverse of :meth:`to_dict`; DataError naming the key for anything else. Models written before
        ``velocity_at_rest`` carry ``zero_velocity_at_rest`` (true: ``zero``, false: ``measured``)."""
        data = dict(data) if isinstance(data, Mapping) else data
        if isinstance(data, dict) and "zero_velocity_at_rest" in data and "velocity_at_rest" not in data:
            old = data.pop("zero_velocity_at_rest")
            data["velocity_at_rest"] = {True: "zero", False: "measured"}.get(old, old)
        keys = ("resample_hz", "derive", "derivative_window_s", "velocity_at_rest", "lowpass_hz",
                "accelerations_from_positions")
        validators.known_keys(data, where, keys, (), DataError)
        try:
            return cls(data["resample_hz"], data["derive"], data["derivative_window_s"],
                       data["velocity_at_rest"], data["lowpass_hz"], data["accelerations_from_positions"])
        except DataError as error:
            raise DataError(f"{where}: {error}") from None

    def describe(self) -> str:
        """One line: ``resampled at 200 Hz, derivatives over 0.05 s, velocity 0 at rest, low-pass 20 Hz``."""
        parts = [f"resampled at {self.resample:g} Hz" if self.resample else "recorded stamps",
                 "velocities derived from positions" if self.derive else "recorded velocities where given",
                 *(["accelerations from positions"] if self.accelerations_from_positions and not self.derive else []),
                 f"derivatives over {self.derivative_window:g} s" if self.derivative_window
                 else "derivative window by rate and noise",
                 REST_TEXT[self.velocity_at_rest]]
        if self.lowpass:
            parts.append(f"low-pass {self.lowpass:g} Hz")
        return ", ".join(parts)


REST_TEXT = {"auto": f"derived velocities 0 where a joint stands still for {REST_DWELL:g} s (recorded as measured)",
             "zero": f"velocity 0 where a joint stands still for {REST_DWELL:g} s",
             "measured": "velocity as measured at rest"}


ESTIMATE_SAMPLES = 200_000
"""Samples a recording-wide noise or RMS estimate is taken from: all of them up to this many, else
:data:`ESTIMATE_BLOCKS` contiguous blocks spread evenly over the recording (an hour at 1 kHz: 18 times less work;
on an hour whose noise doubles halfway the estimates are within 1 % of the whole recording's, test_conditioning)."""
ESTIMATE_BLOCKS = 100


def spread_blocks(values: np.ndarray, samples: int | None = None, overlap: int = 0) -> np.ndarray:
    """(blocks, length, ...) contiguous excerpts of ``values`` (N, ...): one block of all N samples when
    ``N <= samples + overlap`` (default :data:`ESTIMATE_SAMPLES`), else :data:`ESTIMATE_BLOCKS` blocks of
    ``samples / ESTIMATE_BLOCKS + overlap`` samples spread evenly from the first sample to the last (``overlap``: what
    a filter loses at each block's ends)."""
    samples = ESTIMATE_SAMPLES if samples is None else samples
    n = values.shape[0]
    if n <= samples + overlap:
        return values[None]
    length = samples // ESTIMATE_BLOCKS + overlap
    starts = np.linspace(0, n - length, ESTIMATE_BLOCKS).astype(np.int64)
    return values[starts[:, None] + np.arange(length)]


def noise_std(values, axis: int = 0) -> np.ndarray:
    """White-noise standard deviation of each column of ``values`` (N, n) sampled uniformly enough,
    from its fourth differences: a smooth signal has almost none at arm rates, white noise of std
    ``s`` has ``sqrt(70) s``; robust (median absolute deviation), over :func:`spread_blocks` of a long
    recording. Zero for fewer than 5 samples."""
    values = float_values(values) if axis == 0 else np.moveaxis(np.asarray(values, dtype=float), axis, 0)
    if values.shape[0] < 5:
        return np.zeros(values.shape[1:])
    fourth = np.diff(spread_blocks(values, overlap=4), n=4, axis=1).reshape((-1,) + values.shape[1:])
    deviation = np.median(np.abs(fourth - np.median(fourth, axis=0, keepdims=True)), axis=0)
    return 1.4826 * deviation / math.sqrt(70.0)


def derivative_gain(window: int, polyorder: int, order: int, step: float) -> float:
    """Standard deviation of the ``order``-th derivative that unit white noise gives through a centred
    local polynomial fit of ``window`` samples spaced ``step`` [s] (Savitzky-Golay coefficients' norm)."""
    return float(np.linalg.norm(savitzky_golay_weights(window, polyorder, order, step)))


@dataclasses.dataclass(frozen=True)
class DerivativePlan:
    """How a recording's derivatives are formed.

    Attributes
    ----------
    qd_source : {"recorded", "positions"}
    qdd_source : {"velocities", "positions"}
    window : int
        Odd number of samples of the fits.
    step : float
        [s] median sampling interval.
    chosen : bool
        Whether the window was chosen by rate and noise (else given).
    how : str
        How a given window was chosen, where a layer above chose it ('' : given by the user).
    acceleration_noise : ndarray, shape (n,)
        [rad/s^2] expected acceleration noise per joint with this window.
    acceleration_rms : ndarray, shape (n,)
        [rad/s^2] RMS of the accelerations (their signal).
    velocity_noise : ndarray, shape (n,)
        [rad/s] noise of the velocities used (recorded, or derived with this window).
    """

    qd_source: str
    qdd_source: str
    window: int
    step: float
    chosen: bool
    acceleration_noise: np.ndarray
    acceleration_rms: np.ndarray
    velocity_noise: np.ndarray
    how: str = ""

    @property
    def window_seconds(self) -> float:
        return self.window * self.step

    @property
    def noise_fraction(self) -> np.ndarray:
        """Acceleration noise over its RMS per joint (inf where the joint does not accelerate)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.acceleration_rms > 0.0, self.acceleration_noise / self.acceleration_rms, np.inf)

    def describe(self, joint_names) -> str:
        source = ("accelerations from the recorded velocities (local quadratic fit)" if self.qdd_source == "velocities"
                  else "velocities and accelerations from the positions (local cubic fit)")
        how = "chosen by rate and noise" if self.chosen else self.how or "given"
        fractions = self.noise_fraction
        moving = np.isfinite(fractions)
        worst = (f"; acceleration noise at most {100 * float(np.max(fractions[moving])):.2g} % of its RMS "
                 f"({joint_names[int(np.flatnonzero(moving)[np.argmax(fractions[moving])])]})") if moving.any() else ""
        return (f"{source} over {self.window} samples = {self.window_seconds:.3g} s ({how}, "
                f"{1.0 / self.step:.4g} Hz){worst}")

    def to_dict(self, joint_names) -> dict:
        return {"qd": self.qd_source, "qdd": self.qdd_source, "window_samples": int(self.window),
                "window_s": float(self.window_seconds), "chosen": bool(self.chosen),
                "acceleration_noise": dict(zip(joint_names, map(float, self.acceleration_noise))),
                "acceleration_rms": dict(zip(joint_names, map(float, self.acceleration_rms))),
                "velocity_noise": dict(zip(joint_names, map(float, self.velocity_noise)))}


def _odd(samples: float) -> int:
    samples = max(int(round(samples)), 1)
    return samples if samples % 2 else samples + 1


def _smoothed_rms(source, window: int, polyorder: int, order: int, step: float) -> np.ndarray:
    """(n,) RMS of the ``order``-th derivative of ``source`` (N, n) smoothed over ``window`` samples: at every
    sample, or over the :func:`spread_blocks` of a long source (their interiors)."""
    if source.shape[0] <= ESTIMATE_SAMPLES:
        return np.sqrt(np.mean(savitzky_golay(source, window, polyorder, order, step)**2, axis=0))
    from scipy.ndimage import correlate1d
    blocks = spread_blocks(source, overlap=window - 1)
    smooth = correlate1d(blocks, savitzky_golay_weights(window, polyorder, order, step), axis=1, mode="constant")
    half = window // 2
    return np.sqrt(np.mean(smooth[:, half:blocks.shape[1] - half] ** 2, axis=(0, 1)))


def derivative_plan(time, q, qd=None, window_seconds: float | None = None,
                    estimates: dict | None = None) -> DerivativePlan:
    """The derivative fit for positions ``q`` (N, n) [rad] and, when recorded, velocities ``qd``
    (N, n) [rad/s] at stamps ``time`` (N,) [s] (module docstring). ``window_seconds`` given: that
    window (at least :data:`MIN_WINDOW_SAMPLES`). ``estimates``: a dict the caller keeps for plans of the same
    samples (several windows tried on one recording): their noise and motion estimates, which do not depend on
    the window, are computed once into it."""
    time = np.asarray(time, dtype=float)
    step = median_step(time) if time.size > 1 else 1.0
    from_velocities = qd is not None
    source = float_values(qd if from_velocities else q)
    polyorder, order = (2, 1) if from_velocities else (3, 2)
    longest = max(MIN_WINDOW_SAMPLES, _odd(MAX_DERIVATIVE_WINDOW / step))
    longest = min(longest, source.shape[0] if source.shape[0] % 2 else source.shape[0] - 1)
    if longest < MIN_WINDOW_SAMPLES:
        raise DataError(f"{source.shape[0]} sample(s): derivatives need a window of {MIN_WINDOW_SAMPLES}")
    estimates = {} if estimates is None else estimates
    if from_velocities not in estimates:
        estimates[from_velocities] = (noise_std(source), _smoothed_rms(source, longest, polyorder, order, step))
    noise, rms = estimates[from_velocities]
    moving = rms >= MOVING_FRACTION * rms.max() if rms.max() > 0.0 else np.zeros(rms.shape, bool)
    if window_seconds is not None:
        window = max(MIN_WINDOW_SAMPLES, _odd(window_seconds / step))
        if window > source.shape[0]:
            raise DataError(f"a derivative window of {window_seconds:g} s is {window} samples, more than the "
                            f"{source.shape[0]} recorded")
    else:
        window = longest
        for candidate in range(MIN_WINDOW_SAMPLES, longest + 1, 2):
            gain = derivative_gain(candidate, polyorder, order, step)
            if np.all(noise[moving] * gain <= ACCELERATION_NOISE_FRACTION * rms[moving]):
                window = candidate
                break
    gain = derivative_gain(window, polyorder, order, step)
    velocity_noise = noise if from_velocities else noise * derivative_gain(window, 3, 1, step)
    return DerivativePlan("recorded" if from_velocities else "positions",
                          "velocities" if from_velocities else "positions", window, step, window_seconds is None,
                          noise * gain, rms, velocity_noise)


def stationary_mask(time, q, dwell: float = REST_DWELL) -> np.ndarray:
    """Per sample and joint, whether the joint stands still (module docstring): the sample lies in a stretch of at
    least ``dwell`` [s] whose positions stay within ``band`` of each other, ``band = 2 sigma (sqrt(2 ln N) +``
    :data:`REST_BAND_MARGIN` ``)`` with ``sigma`` the joint's position noise (:func:`noise_std`) and ``N`` the
    samples of the dwell, at least its smallest position step (one encoder count). Piece by piece
    (:data:`REST_PIECE` rows with the stretches that reach into them): the same mask, temporaries of a piece.

    Parameters
    ----------
    time : array_like, shape (N,)
        [s], increasing.
    q : array_like, shape (N, n)
        [rad] (or [m]).

    Returns
    -------
    ndarray of bool, shape (N, n)
    """
    time = np.asarray(time, dtype=float)
    q = float_values(q)
    still = np.zeros(q.shape, dtype=bool)
    if q.shape[0] < 2:
        return still
    width = max(2, int(math.ceil(dwell / median_step(time))) + 1)           # samples spanning the dwell
    if width > q.shape[0]:
        return still
    bands = rest_bands(q, width)
    n = q.shape[0]
    for start in range(0, n, REST_PIECE):
        stop = min(start + REST_PIECE, n)
        first, last = max(0, start - width + 1), min(n, stop + width - 1)    # the stretches over rows start:stop
        still[start:stop] = _still_stretches(time[first:last], q[first:last], width, bands, dwell)[
            start - first:stop - first]
    return still


REST_PIECE = 65_536
"""Rows :func:`stationary_mask` judges at once."""


def rest_bands(q, width: int) -> np.ndarray:
    """(n,) [rad] the position band of a stretch of ``width`` samples at rest, per joint of ``q`` (N, n)
    (:func:`stationary_mask`): the noise's spread over ``width`` samples, at least the smallest position step."""
    spread = 2.0 * (math.sqrt(2.0 * math.log(width)) + REST_BAND_MARGIN)
    counts = np.full(q.shape[1], np.inf)
    for start in range(0, q.shape[0] - 1, REST_PIECE):       # the smallest nonzero step, piece by piece
        steps = np.abs(np.diff(np.asarray(q[start:start + REST_PIECE + 1]), axis=0))
        steps[steps == 0.0] = np.inf
        counts = np.minimum(counts, steps.min(axis=0))
    counts[~np.isfinite(counts)] = 0.0
    return np.maximum(spread * noise_std(q), counts) * (1.0 + 1e-9)


def _still_stretches(time, q, width: int, bands, dwell: float) -> np.ndarray:
    """(m, n) whether each row of ``q`` (m, n) lies in a stretch of ``width`` of its rows within ``bands`` whose
    stamps span ``dwell`` [s] (only stretches inside these rows count)."""
    still = np.zeros(q.shape, dtype=bool)
    if q.shape[0] < width:
        return still
    q = np.asarray(q)
    for joint in range(q.shape[1]):
        windows = np.lib.stride_tricks.sliding_window_view(q[:, joint], width)
        starts = np.flatnonzero(windows.max(axis=1) - windows.min(axis=1) <= bands[joint])
        # a stretch counts only where its stamps span the dwell (not across a gap of lost samples)
        starts = starts[time[starts + width - 1] - time[starts] >= dwell * (1.0 - 1e-9)]
        if starts.size:
            cover = np.zeros(q.shape[0] + 1, dtype=np.int64)
            np.add.at(cover, starts, 1)
            np.add.at(cover, starts + width, -1)
            still[:, joint] = np.cumsum(cover[:-1]) > 0
    return still


def describe_rest(mask, joint_names) -> str:
    """``standing still (velocity 0): j1 12 %, j2 30 %`` for joints with any rest sample; '' otherwise."""
    fractions = np.mean(np.asarray(mask, dtype=bool), axis=0)
    parts = [f"{name} {100 * fraction:.2g} %" for name, fraction in zip(joint_names, fractions) if fraction > 0.0]
    return (f"standing still for {REST_DWELL:g} s or more (velocity 0): {', '.join(parts)}") if parts else ""


def conditioning_from_provenance(provenance: Mapping) -> Conditioning | None:
    """The :class:`Conditioning` a model's provenance records, or None (models identified before it was
    recorded); DataError naming the key for a malformed record."""
    record = provenance.get("conditioning") if isinstance(provenance, Mapping) else None
    if record is None:
        return None
    if not isinstance(record, Mapping) or "settings" not in record:
        raise DataError("provenance.conditioning must be a mapping with 'settings'")
    return Conditioning.from_dict(record["settings"], "provenance.conditioning.settings")
