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

Velocity at rest (:func:`rest_mask`)
    Quantised or noisy positions make velocities derived at rest flip sign at random, and with
    them every Coulomb friction column. A joint whose speed falls below :data:`REST_NOISE_FACTOR`
    times the noise of its velocity (estimated from the data) is at rest, and stays at rest while
    the noise keeps it below twice that (hysteresis); at rest its velocity is set to 0 (friction
    columns are then 0: static friction is not modelled), whether velocities were recorded or derived.

Low-pass filtering (``lowpass`` [Hz]) is done by identification (parallel filtering of torques and
regressor columns) and, in validation, on measured and predicted torques alike.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Mapping

import numpy as np
from scipy import signal

from robot_dynid import validators
from robot_dynid.errors import DataError

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
REST_NOISE_FACTOR = 4.0
"""A joint is at rest below this many velocity noise standard deviations, until twice that."""
MOVING_FRACTION = 0.05
"""Joints whose acceleration RMS is below this fraction of the largest joint's do not choose the window
(a joint held still has no acceleration signal to keep above its noise)."""
QD_SOURCES = ("recorded", "positions")
QDD_SOURCES = ("velocities", "positions")


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
    zero_velocity_at_rest : bool
        Set the velocity of a joint at rest to 0 (module docstring).
    lowpass : float or None
        [Hz] zero-phase low-pass of torques (and regressor columns) in identification; None: none.
    accelerations_from_positions : bool
        Derive accelerations from the positions even where velocities are recorded (as the identifier
        node does online).
    """

    resample: float | None = None
    derive: bool = False
    derivative_window: float | None = None
    zero_velocity_at_rest: bool = True
    lowpass: float | None = None
    accelerations_from_positions: bool = False

    def __post_init__(self):
        for name, unit, maximum in (("resample", "Hz", None), ("derivative_window", "s", MAX_GIVEN_WINDOW),
                                    ("lowpass", "Hz", None)):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, validators.in_range(value, name, DataError, unit, 0.0, maximum,
                                                                   allow_minimum=False))
        for name in ("derive", "zero_velocity_at_rest", "accelerations_from_positions"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise DataError(f"{name} must be true or false, got {getattr(self, name)!r}")

    def to_dict(self) -> dict:
        return {"resample_hz": self.resample, "derive": bool(self.derive),
                "derivative_window_s": self.derivative_window,
                "zero_velocity_at_rest": bool(self.zero_velocity_at_rest),
                "lowpass_hz": self.lowpass, "accelerations_from_positions": bool(self.accelerations_from_positions)}

    @classmethod
    def from_dict(cls, data: Any, where: str = "conditioning") -> "Conditioning":
        """The inverse of :meth:`to_dict`; DataError naming the key for anything else."""
        keys = ("resample_hz", "derive", "derivative_window_s", "zero_velocity_at_rest", "lowpass_hz",
                "accelerations_from_positions")
        validators.known_keys(data, where, keys, (), DataError)
        try:
            return cls(data["resample_hz"], data["derive"], data["derivative_window_s"],
                       data["zero_velocity_at_rest"], data["lowpass_hz"], data["accelerations_from_positions"])
        except DataError as error:
            raise DataError(f"{where}: {error}") from None

    def describe(self) -> str:
        """One line: ``resampled at 200 Hz, derivatives over 0.05 s, velocity 0 at rest, low-pass 20 Hz``."""
        parts = [f"resampled at {self.resample:g} Hz" if self.resample else "recorded stamps",
                 "velocities derived from positions" if self.derive else "recorded velocities where given",
                 *(["accelerations from positions"] if self.accelerations_from_positions and not self.derive else []),
                 f"derivatives over {self.derivative_window:g} s" if self.derivative_window
                 else "derivative window by rate and noise",
                 "velocity 0 at rest" if self.zero_velocity_at_rest else "velocity as measured at rest"]
        if self.lowpass:
            parts.append(f"low-pass {self.lowpass:g} Hz")
        return ", ".join(parts)


def noise_std(values, axis: int = 0) -> np.ndarray:
    """White-noise standard deviation of each column of ``values`` (N, n) sampled uniformly enough,
    from its fourth differences: a smooth signal has almost none at arm rates, white noise of std
    ``s`` has ``sqrt(70) s``; robust (median absolute deviation). Zero for fewer than 5 samples."""
    values = np.asarray(values, dtype=float)
    if values.shape[axis] < 5:
        return np.zeros(np.delete(values.shape, axis))
    fourth = np.diff(values, n=4, axis=axis)
    deviation = np.median(np.abs(fourth - np.median(fourth, axis=axis, keepdims=True)), axis=axis)
    return 1.4826 * deviation / math.sqrt(70.0)


def derivative_gain(window: int, polyorder: int, order: int, step: float) -> float:
    """Standard deviation of the ``order``-th derivative that unit white noise gives through a centred
    local polynomial fit of ``window`` samples spaced ``step`` [s] (Savitzky-Golay coefficients' norm)."""
    coefficients = signal.savgol_coeffs(window, polyorder, deriv=order, delta=step, use="dot")
    return float(np.linalg.norm(coefficients))


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
        how = "chosen by rate and noise" if self.chosen else "given"
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


def derivative_plan(time, q, qd=None, window_seconds: float | None = None) -> DerivativePlan:
    """The derivative fit for positions ``q`` (N, n) [rad] and, when recorded, velocities ``qd``
    (N, n) [rad/s] at stamps ``time`` (N,) [s] (module docstring). ``window_seconds`` given: that
    window (at least :data:`MIN_WINDOW_SAMPLES`)."""
    time = np.asarray(time, dtype=float)
    step = float(np.median(np.diff(time))) if time.size > 1 else 1.0
    from_velocities = qd is not None
    source = np.asarray(qd if from_velocities else q, dtype=float)
    polyorder, order = (2, 1) if from_velocities else (3, 2)
    noise = noise_std(source)
    longest = max(MIN_WINDOW_SAMPLES, _odd(MAX_DERIVATIVE_WINDOW / step))
    longest = min(longest, source.shape[0] if source.shape[0] % 2 else source.shape[0] - 1)
    if longest < MIN_WINDOW_SAMPLES:
        raise DataError(f"{source.shape[0]} sample(s): derivatives need a window of {MIN_WINDOW_SAMPLES}")
    smooth = signal.savgol_filter(source, longest, polyorder, deriv=order, delta=step, axis=0)
    rms = np.sqrt(np.mean(smooth**2, axis=0))
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


def rest_mask(qd, velocity_noise, factor: float = REST_NOISE_FACTOR) -> np.ndarray:
    """Per sample and joint, whether the joint is at rest (module docstring).

    With ``e = factor * velocity_noise``: a run of samples whose speed stays at most ``2 e`` is a rest
    when it holds a sample at most ``e``, from its first such sample to its last (hysteresis: noise
    between ``e`` and ``2 e`` inside a rest does not end it; the rising and falling speed at the ends
    of a motion is not counted as rest beyond ``e``).

    Parameters
    ----------
    qd : array_like, shape (N, n)
        [rad/s].
    velocity_noise : array_like, shape (n,)
        [rad/s] noise standard deviation of ``qd`` per joint.

    Returns
    -------
    ndarray of bool, shape (N, n)
    """
    speed = np.abs(np.asarray(qd, dtype=float))
    enter = factor * np.asarray(velocity_noise, dtype=float)
    at_rest = np.zeros(speed.shape, dtype=bool)
    for joint in range(speed.shape[1]):
        near = speed[:, joint] <= 2.0 * enter[joint]
        edges = np.flatnonzero(np.diff(np.concatenate([[False], near, [False]]).astype(np.int8)))
        below = np.flatnonzero(speed[:, joint] <= enter[joint])
        for start, stop in zip(edges[0::2], edges[1::2]):       # runs [start, stop) of "near"
            inside = below[np.searchsorted(below, start):np.searchsorted(below, stop)]
            if inside.size:
                at_rest[inside[0]:inside[-1] + 1, joint] = True
    return at_rest


def describe_rest(mask, joint_names) -> str:
    """``at rest (velocity 0): j1 12 %, j2 30 %`` for joints with any rest sample; '' otherwise."""
    fractions = np.mean(np.asarray(mask, dtype=bool), axis=0)
    parts = [f"{name} {100 * fraction:.2g} %" for name, fraction in zip(joint_names, fractions) if fraction > 0.0]
    return f"at rest (velocity 0): {', '.join(parts)}" if parts else ""


def conditioning_from_provenance(provenance: Mapping) -> Conditioning | None:
    """The :class:`Conditioning` a model's provenance records, or None (models identified before it was
    recorded); DataError naming the key for a malformed record."""
    record = provenance.get("conditioning") if isinstance(provenance, Mapping) else None
    if record is None:
        return None
    if not isinstance(record, Mapping) or "settings" not in record:
        raise DataError("provenance.conditioning must be a mapping with 'settings'")
    return Conditioning.from_dict(record["settings"], "provenance.conditioning.settings")
