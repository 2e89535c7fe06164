"""Joint friction models as regressor columns (linear in their coefficients).

Every model is ``tau_f = sum_c f_c * column_c(v)`` per joint, with ``v = qd`` [rad/s] and the
shape constants (dead band, arctan sharpness, Stribeck velocity, reversal lead) fixed in advance, so the
coefficients ``f_c`` join the inertial parameters in one linear least-squares problem.

The models themselves (``none``, ``coulomb_viscous``, ``coulomb_viscous_lead``, ``stribeck_cbrt``, ``arctan``,
``polynomial``: their columns, coefficient names and units) are the registry
:mod:`robot_dynid.model.friction_models`, one module per model; ``sgn`` is the sign function, ``sgn(0) = 0``.

For every model all columns are zero where ``|v| < dead_band`` (0 disables the band).

Drift of the coefficients (each base coefficient ``c`` gets a second column):

- ``drift="temperature"``: ``c + c_dT (T - T_ref)``, column ``column_c * (T - T_ref)``,
  coefficient ``c_dT`` in the unit of ``c`` per kelvin; ``T`` [deg C] per sample and joint.
- ``drift="time"``: ``c + c_cold exp(-t / t_w)``, column ``column_c * exp(-t / t_w)``,
  ``t`` [s] elapsed since the robot started cold, ``t_w = warmup_time_constant`` [s];
  ``c_cold`` is the extra friction of a cold robot (thesis: friction settles after
  25-50 min of running). With ``warmup_time_constant_2 = t_2 > 0`` the excess is the thesis's double
  exponential ``c_cold exp(-t / t_w) + c_cold2 exp(-t / t_2)`` (a third column per base coefficient,
  coefficient ``c_cold2``); 0 (default) keeps one exponential.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model import friction_models

__all__ = ["FRICTION_MODEL_NAMES", "DRIFT_MODES", "MAX_REVERSAL_LEAD", "FRICTION_SIDES", "SECOND_COLD_SUFFIX",
           "FrictionModel", "friction_model"]

logger = logging.getLogger(__name__)

#: The package's own friction models (:mod:`robot_dynid.model.friction_models`; models added with its ``register``
#: are valid too).
FRICTION_MODEL_NAMES = friction_models.names()
DRIFT_MODES = ("none", "temperature", "time")
#: Largest ``reversal_lead`` [s]: a friction that flips a tenth of a second ahead of the velocity is not friction.
MAX_REVERSAL_LEAD = 0.1
#: Where a friction row acts: on the joint, on the motor (through the transmission), or both.
FRICTION_SIDES = ("joint", "motor", "both")

_DRIFT_SUFFIX = {"none": None, "temperature": "_dT", "time": "_cold"}
_AXES = ("samples", "joints")
#: Suffix of the second cold-start excess coefficients (``warmup_time_constant_2 > 0``).
SECOND_COLD_SUFFIX = "_cold2"


def _check_positive(name: str, value: float, allow_zero: bool = False) -> None:
    validators.positive(value, f"friction constant {name}", DynIdError, allow_zero=allow_zero)


@dataclass(frozen=True)
class FrictionModel:
    """A joint friction model with fixed shape constants; see the module docstring.

    Parameters
    ----------
    name : str
        A registered model (:func:`robot_dynid.model.friction_models.names`).
    dead_band : float
        Speed [rad/s] below which all friction columns are zero (>= 0).
    sign_sharpness : float
        ``k`` [s/rad] of the arctan model's smooth sign ``(2/pi) atan(k v)`` (> 0).
    stribeck_velocity : float
        ``vs`` [rad/s] of the arctan model's transition ``(2/pi) atan(v / vs)`` (> 0).
    reversal_lead : float
        ``tau_r`` [s] of the ``coulomb_viscous_lead`` model's sign ``sgn(v + tau_r a)`` (>= 0, at most
        :data:`MAX_REVERSAL_LEAD`); the default is MuJoCo's lead with its default solver settings.
    drift : str
        ``"none"``, ``"temperature"`` (coefficients linear in temperature) or ``"time"``
        (coefficients with an exponentially decaying cold-start excess).
    reference_temperature : float
        ``T_ref`` [deg C] of the temperature drift.
    warmup_time_constant : float
        ``t_w`` [s] of the time drift (> 0).
    warmup_time_constant_2 : float
        ``t_2`` [s] of the time drift's second exponential (> 0), or 0 (default): one exponential.
    """

    name: str = "none"
    dead_band: float = 0.0
    sign_sharpness: float = 100.0
    stribeck_velocity: float = 0.1
    reversal_lead: float = 0.0095
    drift: str = "none"
    reference_temperature: float = 20.0
    warmup_time_constant: float = 1200.0
    warmup_time_constant_2: float = 0.0

    def __post_init__(self) -> None:
        validators.text(self.name, "friction model", DynIdError, friction_models.names())
        validators.text(self.drift, "friction drift", DynIdError, DRIFT_MODES)
        if self.drift != "none" and self.name == "none":
            raise DynIdError(
                f"friction drift {self.drift!r} needs a friction model, got name 'none'")
        for field in ("dead_band", "sign_sharpness", "stribeck_velocity", "reversal_lead",
                      "reference_temperature", "warmup_time_constant", "warmup_time_constant_2"):
            value = getattr(self, field)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
                raise DynIdError(f"friction constant {field} must be a number, got {value!r}")
            object.__setattr__(self, field, float(value))
        _check_positive("dead_band", self.dead_band, allow_zero=True)
        _check_positive("sign_sharpness", self.sign_sharpness)
        _check_positive("stribeck_velocity", self.stribeck_velocity)
        _check_positive("warmup_time_constant", self.warmup_time_constant)
        _check_positive("warmup_time_constant_2", self.warmup_time_constant_2, allow_zero=True)
        if self.warmup_time_constant_2 > 0.0 and self.drift != "time":
            raise DynIdError(f"friction constant warmup_time_constant_2 needs drift 'time', got {self.drift!r}")
        validators.in_range(self.reversal_lead, "friction constant reversal_lead", DynIdError, "s", 0.0,
                            MAX_REVERSAL_LEAD)
        validators.number(self.reference_temperature, "friction constant reference_temperature", DynIdError)

    @property
    def shape(self) -> friction_models.FrictionShape:
        """The model's registry entry (columns, coefficient units and bounds, fast paths)."""
        return friction_models.shape(self.name)

    @property
    def base_coefficient_names(self) -> tuple[str, ...]:
        """Coefficient names per joint without the drift coefficients."""
        return self.shape.coefficient_names

    @property
    def coefficient_names(self) -> tuple[str, ...]:
        """Coefficient names per joint (no joint index), drift coefficients after the base ones."""
        base = self.base_coefficient_names
        suffix = _DRIFT_SUFFIX[self.drift]
        if suffix is None:
            return base
        names = base + tuple(name + suffix for name in base)
        if self.warmup_time_constant_2 > 0.0:
            names += tuple(name + SECOND_COLD_SUFFIX for name in base)
        return names

    def coefficient_unit(self, coefficient: str) -> str:
        """The SI unit of one of :attr:`coefficient_names` (no joint index): its base coefficient's, per kelvin
        for a temperature drift coefficient (``_dT``), the same for a cold-start excess (``_cold``, ``_cold2``)."""
        for suffix, per in ((SECOND_COLD_SUFFIX, ""), ("_dT", "/K"), ("_cold", "")):
            if coefficient.endswith(suffix) and coefficient in self.coefficient_names:
                return self.shape.unit(coefficient[:-len(suffix)]) + per
        return self.shape.unit(coefficient)

    @property
    def n_coefficients(self) -> int:
        """Number of coefficients per joint, drift coefficients included."""
        return len(self.coefficient_names)

    @property
    def needs_temperature(self) -> bool:
        return self.drift == "temperature"

    @property
    def needs_elapsed(self) -> bool:
        return self.drift == "time"

    def columns(self, qd, temperature=None, elapsed=None, velocity_scale=None, qdd=None) -> np.ndarray:
        """Regressor columns of the friction coefficients.

        Parameters
        ----------
        qd : array_like, shape (N, n)
            Joint velocities [rad/s] (or motor velocities: see ``velocity_scale``).
        temperature : array_like, shape (N, n), optional
            Joint temperatures [deg C]; required when ``drift == "temperature"``.
        elapsed : array_like, shape (N,), optional
            Running time since the cold start [s]; required when ``drift == "time"``.
        velocity_scale : array_like, shape (n,), optional
            Per column of ``qd``, the factor from the speed constants' velocity to that column's:
            a motor's gear ratio when ``qd`` holds motor velocities, so that ``dead_band``,
            ``sign_sharpness`` and ``stribeck_velocity``, given on the joint side, keep their
            meaning (``dead_band * r``, ``sign_sharpness / r``, ``stribeck_velocity * r``).

        Returns
        -------
        ndarray, shape (N, n, n_coefficients)
            Entry ``[k, j, c]`` multiplies coefficient ``c`` of joint ``j`` in joint ``j``'s
            torque [N m per coefficient unit].
        """
        v = validators.array(qd, "qd", ndim=2, axes=_AXES, unit="rad/s")
        scale = 1.0 if velocity_scale is None else np.asarray(velocity_scale, dtype=float)
        a = np.zeros_like(v) if qdd is None else validators.array(qdd, "qdd", shape=v.shape, axes=_AXES, finite=False)
        if self.drift == "temperature":
            self._check_temperature(temperature, v.shape)
        elif self.drift == "time":
            self._check_elapsed(elapsed, v.shape[0])
        return self.trusted_columns(v, a, scale, temperature, elapsed)

    def trusted_columns(self, v: np.ndarray, a: np.ndarray, scale, temperature=None, elapsed=None,
                        out: np.ndarray | None = None) -> np.ndarray:
        """:meth:`columns` without its checks (the same arithmetic, bit for bit), optionally into ``out``.

        ``v``, ``a`` (N, n) float64 velocities and accelerations, finite; ``scale`` 1.0 or (n,) float64 (as
        ``velocity_scale``); ``temperature`` (N, n) [deg C] and ``elapsed`` (N,) [s] where the drift needs
        them, checked; ``out`` (N, n, n_coefficients) float64 to write into (every entry) or None.
        """
        base = self.shape.columns(self, v, scale, a)
        if self.drift == "temperature":
            factor = np.asarray(temperature, dtype=float) - self.reference_temperature
        elif self.drift == "time":
            factor = np.exp(-np.asarray(elapsed, dtype=float) / self.warmup_time_constant)[:, None]
        else:
            factor = None
        if factor is not None:
            drift = [column * factor for column in base]
            if self.drift == "time" and self.warmup_time_constant_2 > 0.0:
                second = np.exp(-np.asarray(elapsed, dtype=float) / self.warmup_time_constant_2)[:, None]
                drift += [column * second for column in base]
            base = base + drift
        result = np.empty(v.shape + (len(base),)) if out is None else out
        for index, column in enumerate(base):
            result[..., index] = column
        if self.dead_band > 0.0 and base:
            result[np.abs(v) < self.dead_band * scale] = 0.0
        return result

    def _check_temperature(self, temperature, shape: tuple[int, int]) -> None:
        if temperature is None:
            raise DataError("friction drift 'temperature' needs temperature (N, n) [deg C], "
                            "got None")
        validators.array(temperature, "temperature", shape=shape, axes=_AXES, unit="deg C")

    def _check_elapsed(self, elapsed, n_samples: int) -> None:
        if elapsed is None:
            raise DataError("friction drift 'time' needs elapsed (N,) [s], got None")
        validators.array(elapsed, "elapsed", shape=(n_samples,), axes=("samples",), minimum=0.0, unit="s")

    def torque(self, coefficients, qd, temperature=None, elapsed=None, qdd=None) -> np.ndarray:
        """Friction torque for given coefficients.

        Parameters
        ----------
        coefficients : array_like, shape (n, n_coefficients)
            Coefficients per joint, in the order of :attr:`coefficient_names`.
        qd, temperature, elapsed, qdd
            As in :meth:`columns`.

        Returns
        -------
        ndarray, shape (N, n)
            Friction torque [N m].
        """
        columns = self.columns(qd, temperature, elapsed, qdd=qdd)
        coefficients = validators.array(coefficients, "coefficients", shape=(columns.shape[1], self.n_coefficients),
                                        axes=("joints", "coefficients"), columns=self.coefficient_names, finite=False)
        return np.einsum("kjc,jc->kj", columns, coefficients)

    def to_dict(self) -> dict:
        """Plain dict of the fields (YAML/JSON friendly); inverse of :meth:`from_dict`. ``reversal_lead``
        only for the models that use it (:attr:`FrictionShape.constants`), ``warmup_time_constant_2`` only when
        not 0 (files of the other models read as before they existed)."""
        data = dataclasses.asdict(self)
        if "reversal_lead" not in self.shape.constants:
            del data["reversal_lead"]
        if self.warmup_time_constant_2 == 0.0:
            del data["warmup_time_constant_2"]
        return data

    @classmethod
    def from_dict(cls, data: dict) -> "FrictionModel":
        """Build from a dict as written by :meth:`to_dict`; unknown keys are rejected."""
        if not isinstance(data, dict):
            raise DynIdError(f"friction model must be a mapping, got {type(data).__name__}")
        data = dict(data)
        name = data.pop("name", "none")
        return friction_model(name, **data)


def friction_model(name: str, **constants) -> FrictionModel:
    """Validated :class:`FrictionModel` by name.

    Parameters
    ----------
    name : str
        A registered model (:func:`robot_dynid.model.friction_models.names`).
    **constants
        Any other field of :class:`FrictionModel` (``dead_band``, ``drift``, ...).

    Raises
    ------
    DynIdError
        Unknown name or constant, or a constant out of range.
    """
    allowed = tuple(field.name for field in dataclasses.fields(FrictionModel)
                    if field.name != "name")
    unknown = sorted(set(constants) - set(allowed))
    if unknown:
        raise DynIdError(f"unknown friction constant(s) {unknown}; expected some of {allowed}")
    return FrictionModel(name=name, **constants)
