"""The identification options: one table, from which the command line's arguments, the identifier node's
parameter descriptors and the core's defaults and checks are made.

Each :class:`Option` states a name (the core's and the node parameter's; the command line spells it
``--dead-band``), a type, a default, its choices or interval, its unit and a help text. The faces build on it:
:func:`robot_dynid.cli.options.add_option_arguments` (argparse type, choices, default, help with the unit),
the identifier node (:mod:`robot_dynid.nodes.identifier`: description with the unit, a range, read-only) and
:func:`robot_dynid.estimation.identification.settings_from_options` (every value checked by
:meth:`Option.check`, in :mod:`robot_dynid.validators`' wording, naming the option as the caller knows it).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.estimators import ESTIMATORS, METHODS
from robot_dynid.model.friction import (DRIFT_MODES, FRICTION_MODEL_NAMES, FRICTION_SIDES, MAX_REVERSAL_LEAD,
                                        FrictionModel)

__all__ = ["PRIOR_MODES", "MAX_SIGN_SHARPNESS", "MAX_STRIBECK_VELOCITY", "Option", "DEFAULT_PRIOR_WEIGHT", "OPTIONS",
           "OPTION_DEFAULTS"]

PRIOR_MODES = ("two_step", "regularised")
"""How a consistent fit uses the robot description's inertial data (``prior_mode`` also takes ``none``)."""
MAX_SIGN_SHARPNESS = 1e6
"""[s/rad] largest ``sign_sharpness``: beyond it the arctan sign is a step at any recorded speed."""
MAX_STRIBECK_VELOCITY = 100.0
"""[rad/s] largest ``stribeck_velocity``: above every joint speed a robot reaches."""


@dataclasses.dataclass(frozen=True)
class Option:
    """One identification option.

    Attributes
    ----------
    name : str
        The option's name: a key of :func:`~robot_dynid.estimation.identification.settings_from_options`, the
        identifier node's parameter; the command line's ``--name-with-dashes`` unless ``flag`` says otherwise.
    kind : type
        ``bool``, ``str`` or ``float``.
    default
        Its value when not given; None (``float`` and ``str`` options only): not set, as ``none`` says.
    help : str
        What it does (one line; no unit or interval, which :meth:`describe` adds).
    unit : str or None
        SI unit of a number (``1``: dimensionless).
    choices : tuple of str or None
        The values a ``str`` option takes.
    minimum, maximum : float or None
        Interval of a ``float`` option (None: unbounded on that side); ``minimum`` is excluded without
        ``allow_minimum``, ``maximum`` always included.
    words : tuple of str
        Texts a ``float`` option takes besides numbers (``auto``).
    none : str or None
        What the value None means (the option then takes None; an empty string is None on the node).
    flag : str or None
        The command line's spelling when it is not ``--name-with-dashes`` (a ``bool`` option whose default is
        True is turned off by its flag).
    node : bool
        The identifier node declares it as a parameter (options that need recordings, not a stream, do not).
    choice_help : dict or None
        What each choice of a ``str`` option does, said after ``help`` for the choices a caller allows.
    """

    name: str
    kind: type
    default: Any
    help: str
    unit: str | None = None
    choices: tuple[str, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    allow_minimum: bool = True
    words: tuple[str, ...] = ()
    none: str | None = None
    flag: str | None = None
    node: bool = True
    choice_help: dict[str, str] | None = None

    @property
    def cli_flag(self) -> str:
        """The option on the command line: ``--dead-band``."""
        return self.flag or "--" + self.name.replace("_", "-")

    @property
    def bounded(self) -> bool:
        """A number with an interval."""
        return self.kind is float and (self.minimum is not None or self.maximum is not None)

    def bounds(self) -> tuple[float, float] | None:
        """The closed interval (low, high) around a number option's interval (+-inf: unbounded on that side; an
        open end is its bound, refused by :meth:`check`), None for other options: a node parameter's range."""
        if not self.bounded:
            return None
        return (-math.inf if self.minimum is None else self.minimum, math.inf if self.maximum is None else self.maximum)

    def rule(self) -> str:
        """The values it takes, as the checks word them: ``in (0, 1]``, ``>= 0``, ``one of [...]``, ``''``."""
        if self.choices is not None:
            return f"one of {list(self.choices)}"
        if not self.bounded:
            return ""
        if self.maximum is None and self.minimum == 0.0:
            text = ">= 0" if self.allow_minimum else "> 0"
        else:
            low = "-inf" if self.minimum is None else f"{self.minimum:g}"
            high = "inf" if self.maximum is None else f"{self.maximum:g}"
            opening = "[" if self.allow_minimum and self.minimum is not None else "("
            text = f"in {opening}{low}, {high}{']' if self.maximum is not None else ')'}"
        return text + "".join(f" or {word}" for word in self.words)

    def describe(self, choices: bool = True, allowed: tuple[str, ...] | None = None) -> str:
        """The help text (and what each of the ``allowed`` choices does, default all), then the values it takes
        with the unit (the choices only with ``choices``), then what None means: ``RLS forgetting factor ...; in
        (0, 1] [1]``."""
        rule = "" if self.choices is not None and not choices else self.rule()
        allowed = self.choices if allowed is None else allowed
        described = self.choice_help or {}
        helps = [f"{choice}: {described[choice]}" for choice in allowed or () if choice in described]
        parts = [self.help] + helps + ([rule + (f" [{self.unit}]" if self.unit else "")] if rule else [])
        return "; ".join(parts + ([self.none] if self.none else []))

    def check(self, value: Any, field: str | None = None, error: type[Exception] = DynIdError) -> Any:
        """``value`` checked against the option's type, choices or interval and converted (a number to float;
        on the node, '' to None where None is allowed); ``error`` names ``field`` (default: the name)."""
        field = field or self.name
        if self.none is not None and value in (None, ""):
            return None
        if self.kind is bool:
            return validators.flag(value, field, error)
        if self.kind is str:
            return validators.text(value, field, error, self.choices)
        if value in self.words:
            return value
        if self.maximum is None and self.minimum == 0.0:
            unit = f"{self.unit} (or {', '.join(self.words)})" if self.words else self.unit
            return validators.positive(value, field, error, unit, allow_zero=self.allow_minimum)
        if self.bounded:
            return validators.in_range(value, field, error, self.unit, self.minimum, self.maximum, self.allow_minimum)
        return validators.number(value, field, error)


#: Regularised prior mode: weight of ``||(pi - pi_0) / scale||^2`` against the residual divided by the noise
#: variance, i.e. a Gaussian prior of std 0.1 link scales (10 % of M, M L, M L^2).
DEFAULT_PRIOR_WEIGHT = 100.0

_FRICTION = FrictionModel()
OPTIONS = {option.name: option for option in (
    Option("friction", str, "coulomb_viscous", "friction model, as regressor columns per joint",
           choices=FRICTION_MODEL_NAMES),
    Option("friction_drift", str, "none", "friction coefficients that drift with joint temperature [deg C] or "
           "running time [s]", choices=DRIFT_MODES),
    Option("dead_band", float, _FRICTION.dead_band, "speed below which every friction column is zero, so that "
           "velocity noise around rest does not flip the Coulomb sign; below every joint's velocity limit",
           unit="rad/s", minimum=0.0),
    Option("sign_sharpness", float, _FRICTION.sign_sharpness, "arctan friction: k of its smoothed Coulomb sign "
           "(2/pi) atan(k v)", unit="s/rad", minimum=0.0, maximum=MAX_SIGN_SHARPNESS, allow_minimum=False),
    Option("stribeck_velocity", float, _FRICTION.stribeck_velocity, "arctan friction: vs of its Stribeck "
           "transition", unit="rad/s", minimum=0.0, maximum=MAX_STRIBECK_VELOCITY, allow_minimum=False),
    Option("reversal_lead", float, _FRICTION.reversal_lead, "coulomb_viscous_lead friction: tau_r of its Coulomb "
           "sign sgn(qd + tau_r qdd); the default is MuJoCo's lead (docs/simulation.md)", unit="s", minimum=0.0,
           maximum=MAX_REVERSAL_LEAD),
    Option("min_speed", float, 0.0, "leave out of the fit each joint's equations of the samples where that joint "
           "moves slower: at rest and through a velocity reversal the torque holds stiction, which no friction model "
           "here represents, and a fit over it takes Coulomb friction too low and viscous friction too high; 0: keep "
           "every equation", unit="rad/s", minimum=0.0),
    Option("armature", bool, False, "add a rotor inertia per joint, Ia_j qdd_j [kg m^2] (or per motor with a "
           "transmission: Ia_m qddm, mapped to the joints by T^T)"),
    Option("friction_side", str, "auto", "where friction and armature act: on the joints' velocities, on the "
           "motors' (qdm = T qd, the robot's transmission; torques T^T tau_m) or both; auto: motor with a "
           "transmission, else joint", choices=("auto",) + FRICTION_SIDES),
    Option("offset", bool, False, "add a constant torque offset per joint [N m]"),
    Option("method", str, "ols", "the estimator", choices=METHODS,
           choice_help={name: estimator.summary for name, estimator in ESTIMATORS.items()}),
    Option("forgetting", float, 1.0, "RLS forgetting factor mu (method rls); memory about 1 / (1 - mu) samples, "
           "1 weighs all samples equally", unit="1", minimum=0.0, maximum=1.0, allow_minimum=False),
    Option("lowpass", float, None, "cutoff of the zero-phase Butterworth low-pass that filters the torques and "
           "every regressor column alike (parallel filtering; needs uniform stamps: --resample); 0: no filter",
           unit="Hz", minimum=0.0, none="not given: no filter", node=False),
    Option("check_torque_scale", bool, True, "check the recorded torques [N m] against the gravity torque the "
           "robot description's inertial data predict (with a model's payload, or what a payload being identified "
           "could add) at slow samples where it is large: a recording more than 3 times off on a joint is refused "
           "(motor currents [A] passed as torques, a gear ratio applied twice); turn it off for a description whose "
           "inertial data are what is wrong", flag="--no-torque-check"),
    Option("file_offsets", bool, False, "estimate a torque offset per recording and joint [N m] (sensors re-zeroed "
           "between recordings); reported, not part of the model", node=False),
    Option("consistent", bool, False, "physically consistent fit (ols or wls; needs cvxpy): every link's "
           "pseudo-inertia positive semidefinite, Coulomb and viscous friction and armature >= 0; the model then "
           "holds standard parameters (links: mass, centre of mass, inertia) for export-urdf"),
    Option("bounds_file", str, None, "bounds of the consistent fit (YAML: link mass ranges [kg], total mass [kg], "
           "centre-of-mass boxes [m] in the link frames, the margin; see docs/estimation.md)",
           none="'' or not given: none", flag="--bounds"),
    Option("prior_mode", str, "two_step", "how the robot description's inertial data (URDF <inertial>, DH "
           "inertial:) enter a consistent fit: two_step: the fit closest to them among those within 1 % of the "
           "best consistent residual; regularised: a Gaussian prior of 10 % of each link's scales; none: ignored, "
           "a small regulariser makes the standard parameters unique", choices=PRIOR_MODES + ("none",)),
    Option("prior_weight", float, None, "prior_mode regularised: the prior's weight (a Gaussian prior of std "
           "1/sqrt(WEIGHT) link scales: mass, mass x length, mass x length^2); auto: the one of 0.1, 1, 10, ..., "
           "1e6 with the least cross-validated torque error (over the recordings, else the cycles, else 5 blocks "
           "of samples)", unit="1", minimum=0.0, allow_minimum=False, words=("auto",),
           none=f"not given: {DEFAULT_PRIOR_WEIGHT:g}", node=False),
)}
"""Every identification option by name (:class:`Option`), in the order the faces list them."""

OPTION_DEFAULTS = {name: option.default for name, option in OPTIONS.items()}
"""Each option's default (:attr:`Option.default`)."""
