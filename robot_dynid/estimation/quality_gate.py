"""The quality gate a candidate model passes before it is served or stored (identifier node, fleet).

A candidate is judged on the last ``holdout_fraction`` of its samples, held out of its fit: it is rejected when
its hold-out RSD, ``sqrt(sum r^2 / sum tau^2)`` over the held-out samples and joints, is not below
``max_holdout_rsd``, or when the condition number of its scaled base regressor is not below ``max_condition``
(poorly excited data).
"""
from __future__ import annotations

import math

from robot_dynid import validators
from robot_dynid.errors import DynIdError

__all__ = ["GATE_DEFAULTS", "GATE_RANGES", "gate_range", "gate_interval", "check_gate_bound", "gate_rejection"]

#: The gate's defaults: [1] each.
GATE_DEFAULTS = {"max_holdout_rsd": 0.5, "max_condition": 1000.0, "holdout_fraction": 0.2}
#: The intervals the gate's values are taken from, low end excluded: a hold-out RSD bound in (0, 1] (RSD 1: the
#: model explains none of the torque), a condition-number bound in (1, 1e12], the hold-out fraction in (0, 1), its
#: high end excluded too (with no held-out sample every candidate is rejected, with no sample left nothing is
#: fitted). The identifier node's parameters, the fleet's options and the streaming identifier's settings all check
#: them here.
GATE_RANGES = {"max_holdout_rsd": (0.0, 1.0), "max_condition": (1.0, 1e12), "holdout_fraction": (0.0, 1.0)}
_HIGH_END_EXCLUDED = ("holdout_fraction",)


def gate_range(name: str) -> dict:
    """The interval of the gate's value ``name`` (a key of :data:`GATE_RANGES`) as the keyword arguments of
    :func:`robot_dynid.validators.in_range`: ``minimum``, ``maximum``, ``allow_minimum``, ``allow_maximum``."""
    low, high = GATE_RANGES[name]
    return {"minimum": low, "maximum": high, "allow_minimum": False, "allow_maximum": name not in _HIGH_END_EXCLUDED}


def gate_interval(name: str) -> str:
    """The interval of the gate's value ``name`` as help texts show it: ``"(0, 1]"``, ``"(1, 1e12]"``, ``"(0, 1)"``."""
    interval = gate_range(name)
    closing = "]" if interval["allow_maximum"] else ")"
    return f"({interval['minimum']:g}, {interval['maximum']:g}{closing}".replace("e+", "e")


def check_gate_bound(name: str, value, field: str | None = None, error: type[Exception] = DynIdError) -> float:
    """``value`` of the quality gate's ``name`` (a bound or the hold-out fraction, a key of :data:`GATE_RANGES`) [1],
    checked against its interval; ``error`` naming ``field`` (default ``name``) otherwise."""
    return validators.in_range(value, field or name, error, "1", **gate_range(name))


def gate_rejection(holdout_rms: float, holdout_rsd: float, condition: float, max_holdout_rsd: float,
                   max_condition: float) -> str:
    """Why a candidate model fails the quality gate, '' when it passes (its parameters are finite:
    :func:`~robot_dynid.estimation.identification.model_from_accumulator` makes no other): its hold-out
    RMS residual [N m] must be finite, its hold-out RSD [1] below ``max_holdout_rsd`` and the condition
    number [1] of its scaled base regressor below ``max_condition``."""
    if not math.isfinite(holdout_rms):
        return ("no finite hold-out RMS residual (no held-out samples yet)" if math.isnan(holdout_rms)
                else f"hold-out RMS residual is {holdout_rms}")
    if not holdout_rsd < max_holdout_rsd:
        return f"hold-out RSD {holdout_rsd:.3g} is not below max_holdout_rsd = {max_holdout_rsd:g}"
    if not condition < max_condition:
        return f"condition number {condition:.4g} is not below max_condition = {max_condition:g} (poorly excited data)"
    return ""
