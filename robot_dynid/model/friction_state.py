"""Which friction a feed-forward serves: running time since a cold start and joint temperatures.

A friction model that drifts (:class:`~robot_dynid.model.friction.FrictionModel`, ``drift``) needs, besides the
motion, the running time since the robot started cold (``"time"``) or each joint's temperature
(``"temperature"``). This module keeps them for a server (the feedforward node feeds it clock readings,
motion and temperature messages) and says which friction state answers a request:

- ``static``: the model does not drift.
- ``warmup``: time drift at the running time of :class:`WarmupClock`.
- ``temperature``: temperature drift at the joints' latest temperatures, each fresh and finite.
- ``nominal``: temperature drift without a fresh temperature for every joint: the friction at the model's
  reference temperature (its nominal coefficients), never a guess from an old value.

Warm-up rule (:class:`WarmupClock`): the running time ``t`` [s] starts at the cold start. With
``cooling_time_constant = 0`` (no cooling) it grows with the clock whatever the joints do. With
``tau_c = cooling_time_constant > 0`` it grows 1 s per second while the joints move and, while they stand
still, decays toward 0 (cold) as ``t(s + d) = t(s) exp(-d / tau_c)``: a stop as long as ``tau_c`` gives back
63 % of the cold-start excess. ``reset`` sets it (0: cold) after a stop the rule does not cover.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.friction import FrictionModel

__all__ = ["STATIC", "WARMUP", "TEMPERATURE", "NOMINAL", "FRICTION_STATES", "TEMPERATURE_RANGE", "WarmupClock",
           "standing_still", "JointTemperatures", "FrictionState", "friction_state", "NO_DRIFT"]

STATIC, WARMUP, TEMPERATURE, NOMINAL = "static", "warmup", "temperature", "nominal"
#: The friction states, in the order of their codes in FeedforwardStatus and ComputeFeedforward (FRICTION_*).
FRICTION_STATES = (STATIC, WARMUP, TEMPERATURE, NOMINAL)
#: Plausible joint temperatures [deg C]; values outside are refused as sensor faults.
TEMPERATURE_RANGE = (-60.0, 250.0)


class WarmupClock:
    """Running time since a cold start [s] under the cooling rule of the module docstring.

    Parameters
    ----------
    now : float
        Clock reading at construction [s].
    elapsed : float
        Running time at ``now`` [s], >= 0 (``now - cold_start_stamp``; 0 for a cold start now).
    cooling_time_constant : float
        ``tau_c`` [s] >= 0; 0: no cooling, the running time follows the clock.
    """

    def __init__(self, now: float, elapsed: float = 0.0, cooling_time_constant: float = 0.0) -> None:
        self.cooling_time_constant = validators.positive(cooling_time_constant, "cooling_time_constant", DynIdError,
                                                         allow_zero=True)
        self._moving = True
        self.reset(now, elapsed)

    def reset(self, now: float, elapsed: float = 0.0) -> None:
        """Running time ``elapsed`` [s] (>= 0, finite) at ``now`` [s]; DataError otherwise."""
        validators.positive(elapsed, "elapsed", DataError, "s", allow_zero=True)
        self._stamp, self._elapsed = float(now), float(elapsed)

    def elapsed(self, now: float) -> float:
        """Running time [s] at ``now`` (readings before the last one count as the last)."""
        d = max(0.0, float(now) - self._stamp)
        if self._moving or self.cooling_time_constant == 0.0:
            return self._elapsed + d
        return self._elapsed * math.exp(-d / self.cooling_time_constant)

    def motion(self, now: float, moving: bool) -> None:
        """The joints move (True) or stand still (False) from ``now`` [s] on."""
        if bool(moving) != self._moving:
            self._elapsed, self._stamp = self.elapsed(now), max(self._stamp, float(now))
            self._moving = bool(moving)

    @property
    def moving(self) -> bool:
        return self._moving


def standing_still(velocities, threshold: float) -> bool:
    """Whether every joint velocity [rad/s] is below ``threshold`` [rad/s] in magnitude (no velocities: True)."""
    v = np.asarray(velocities, dtype=float)
    return bool(np.all(np.abs(v) < threshold))


class JointTemperatures:
    """The latest temperature of each joint [deg C] and its stamp [s], by joint name.

    Parameters
    ----------
    max_age : float
        Temperatures older than this [s] (by their stamp) are not used, > 0.
    """

    def __init__(self, max_age: float) -> None:
        self.max_age = validators.positive(max_age, "max_temperature_age", DynIdError)
        self._latest: dict[str, tuple[float, float]] = {}

    def update(self, joint: str, value: float, stamp: float, now: float) -> bool:
        """Keep ``value`` [deg C] of ``joint`` stamped ``stamp`` [s] (received at ``now`` [s]) unless the joint's
        temperature in use is stamped later (the newest stamp wins: two sources, or a late message, never turn the
        clock back); whether it was kept.

        Raises DataError naming the joint for a value that is not finite or outside :data:`TEMPERATURE_RANGE`,
        or a stamp more than ``max_age`` ahead of ``now``; the previous value stays.
        """
        low, high = TEMPERATURE_RANGE
        if not math.isfinite(value) or not low <= value <= high:
            raise DataError(f"temperature of joint {joint} is {value!r} deg C: not finite or outside "
                            f"[{low:g}, {high:g}] deg C; not used")
        if not math.isfinite(stamp) or stamp > now + self.max_age:
            raise DataError(f"temperature of joint {joint} is stamped {stamp!r} s, more than max_temperature_age "
                            f"{self.max_age:g} s after now ({now:.9g} s); not used")
        if joint in self._latest and stamp < self._latest[joint][1]:
            return False
        self._latest[joint] = (float(value), float(stamp))
        return True

    def fresh(self, joints, now: float) -> tuple[np.ndarray | None, str]:
        """The temperatures of ``joints`` [deg C] (n,) when each is at most ``max_age`` old at ``now`` [s],
        else None and which joint lacks one (never received, or its age)."""
        values = np.empty(len(joints))
        for index, joint in enumerate(joints):
            if joint not in self._latest:
                return None, f"no temperature received for joint {joint}"
            value, stamp = self._latest[joint]
            age = now - stamp
            if age > self.max_age:
                return None, (f"the temperature of joint {joint} is {age:.3g} s old, more than max_temperature_age "
                              f"{self.max_age:g} s")
            values[index] = value
        return values, ""


@dataclass(frozen=True)
class FrictionState:
    """What a request's friction is computed with.

    Attributes
    ----------
    state : str
        One of :data:`FRICTION_STATES`.
    elapsed : float or None
        Running time since the cold start [s] (``warmup``), else None.
    temperature : ndarray, shape (n,), or None
        Joint temperatures [deg C] in the model's joint order (``temperature``: measured; ``nominal``: the
        reference temperature), else None.
    message : str
        Why ``nominal`` (which joint lacks a fresh temperature); else empty.
    """

    state: str
    elapsed: float | None = None
    temperature: np.ndarray | None = None
    message: str = ""

    @property
    def code(self) -> int:
        """Index in :data:`FRICTION_STATES` (the FRICTION_* constants of the messages)."""
        return FRICTION_STATES.index(self.state)

    def describe(self) -> str:
        """One line for logs and statuses."""
        if self.state == WARMUP:
            return f"warm-up friction at {self.elapsed:.1f} s since the cold start"
        if self.state == TEMPERATURE:
            return f"friction at the joint temperatures {np.round(self.temperature, 2).tolist()} deg C"
        if self.state == NOMINAL:
            return f"nominal friction (reference temperature {float(self.temperature[0]):g} deg C): {self.message}"
        return "friction without drift"


def friction_state(friction: FrictionModel, joints, now: float, clock: WarmupClock | None = None,
                   temperatures: JointTemperatures | None = None) -> FrictionState:
    """The friction state of a model with ``friction`` and joints ``joints`` at ``now`` [s].

    ``clock`` is needed for time drift; ``temperatures`` may be None (none are received): the temperature drift
    is then served nominal.
    """
    if friction.needs_elapsed:
        if clock is None:
            raise DynIdError("a time-drift friction model needs a warm-up clock")
        return FrictionState(WARMUP, elapsed=clock.elapsed(now))
    if friction.needs_temperature:
        values, reason = (None, "no temperature topic is subscribed") if temperatures is None else \
            temperatures.fresh(joints, now)
        if values is None:
            return FrictionState(NOMINAL, temperature=np.full(len(joints), friction.reference_temperature),
                                 message=reason)
        return FrictionState(TEMPERATURE, temperature=values)
    return NO_DRIFT


NO_DRIFT = FrictionState(STATIC)
"""The state of a friction model that drifts neither with time nor with temperature."""
