"""Several models of one structure compared parameter by parameter (``robot-dynid compare``, fleets).

:func:`compare_models`: each base parameter's difference to the first model in units of the combined
standard deviation ``z = (b - a) / sqrt(s_a^2 + s_b^2)``, significant when ``|z|`` exceeds the
two-sided normal quantile of the level.
"""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.covariance import combined_dof, describe

if TYPE_CHECKING:                   # annotations only: pinocchio, which it imports, costs compare --help 0.1 s
    from robot_dynid.model.dynamic_model import DynamicModel

__all__ = ["DEFAULT_SIGNIFICANCE", "ModelComparison", "compare_models"]

DEFAULT_SIGNIFICANCE = 0.05
"""Two-sided significance level per parameter [1]."""


@dataclasses.dataclass(frozen=True)
class ModelComparison:
    """Several models' base parameters against the first one's.

    Attributes
    ----------
    labels : tuple of str
        One per model (m,), the first the reference.
    names : tuple of str
        Base parameter names (r,).
    values, std : ndarray, shape (m, r)
    z : ndarray, shape (m - 1, r)
        The normal deviate of the difference's two-sided p-value: ``t`` itself where no model has degrees of
        freedom (module docstring); +-inf where both std are 0 and the values differ, 0 where they agree.
    t : ndarray, shape (m - 1, r)
        ``(value_i - value_0) / sqrt(std_i^2 + std_0^2)``.
    dof : ndarray, shape (m - 1, r)
        Welch-Satterthwaite degrees of freedom of each difference (inf: normal).
    std_methods : tuple of str
        Each model's std method, with its blocks (:func:`~robot_dynid.estimation.covariance.describe`).
    payloads : tuple of str
        Each model's payload in words (``"none"``, ``"2.8 kg at 'tool0', centre of mass [0, 0, 0.08] m"``): where they
        differ, the last link's parameter differences include the payloads' (:attr:`payload_note`).
    significant : ndarray of bool, shape (m - 1, r)
        ``|z| > critical``.
    level : float
        Two-sided significance level per parameter [1].
    critical : float
        ``Phi^-1(1 - level / 2)``.
    """

    labels: tuple[str, ...]
    names: tuple[str, ...]
    values: np.ndarray
    std: np.ndarray
    z: np.ndarray
    significant: np.ndarray
    level: float
    critical: float
    t: np.ndarray | None = None
    dof: np.ndarray | None = None
    std_methods: tuple[str, ...] = ()
    payloads: tuple[str, ...] = ()

    @property
    def payload_note(self) -> str:
        """'' where every model carries the same payload, else one line naming each model's."""
        if len(set(self.payloads)) <= 1:
            return ""
        return ("the models carry different payloads (" + "; ".join(f"{label}: {payload}" for label, payload in
                                                                    zip(self.labels, self.payloads))
                + "): the differences of the last link's parameters include the payloads' (payload detach gives an arm "
                  "alone)")

    def to_dict(self) -> dict:
        return {
            "models": list(self.labels), "reference": self.labels[0], "level": self.level,
            "critical_z": self.critical, "std_methods": list(self.std_methods), "payloads": list(self.payloads),
            "payload_note": self.payload_note,
            "expected_false_positives": self.level * len(self.names),
            "parameters": [
                {"name": name, "values": self.values[:, k].tolist(), "std": self.std[:, k].tolist(),
                 "differences": [{"model": self.labels[i + 1],
                                  "difference": float(self.values[i + 1, k] - self.values[0, k]),
                                  "combined_std": float(math.hypot(self.std[i + 1, k], self.std[0, k])),
                                  "t": float(self.t[i, k]),
                                  "dof": float(self.dof[i, k]) if math.isfinite(self.dof[i, k]) else None,
                                  "z": float(self.z[i, k]), "significant": bool(self.significant[i, k])}
                                 for i in range(len(self.labels) - 1)],
                 "significant": bool(self.significant[:, k].any())}
                for k, name in enumerate(self.names)],
        }


def compare_models(models: Sequence[DynamicModel], labels: Sequence[str],
                   level: float = DEFAULT_SIGNIFICANCE) -> ModelComparison:
    """Compare base parameters of models of one structure (module docstring).

    Raises
    ------
    DynIdError
        Fewer than two models, a level outside (0, 1), or models whose base parameters differ
        (naming the model and the first difference).
    """
    if len(models) < 2:
        raise DynIdError(f"compare needs at least two models, got {len(models)}")
    level = validators.significance_level(level, DynIdError)
    reference = models[0]
    for label, model in zip(labels[1:], models[1:]):
        if tuple(model.joint_names) != tuple(reference.joint_names):
            raise DynIdError(f"{label}: joints {list(model.joint_names)} differ from {labels[0]}'s "
                             f"{list(reference.joint_names)}")
        if tuple(model.base.names) != tuple(reference.base.names):
            extra = [n for n in model.base.names if n not in reference.base.names]
            lacking = [n for n in reference.base.names if n not in model.base.names]
            raise DynIdError(f"{label}: base parameters differ from {labels[0]}'s (friction {model.friction.name} "
                             f"vs {reference.friction.name}; only in {label}: {extra[:5]}, only in {labels[0]}: "
                             f"{lacking[:5]}); compare models of one structure")
    values = np.array([m.values for m in models])
    std = np.array([m.std for m in models])
    difference = values[1:] - values[0]
    combined = np.hypot(std[1:], std[0])
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(combined > 0.0, difference / np.where(combined > 0.0, combined, 1.0),
                     np.where(difference == 0.0, 0.0, np.sign(difference) * np.inf))
    dof = np.full(t.shape, np.inf)
    for i, model in enumerate(models[1:]):
        welch = combined_dof(std[0], reference.interval_dof, std[i + 1], model.interval_dof)
        if welch is not None:
            dof[i] = welch
    z = t.copy()
    finite = np.isfinite(dof) & np.isfinite(t)
    from scipy.special import ndtri, stdtr      # scipy.stats' distributions' own functions, without its import
    # the normal deviate of Student's two-sided p-value, from the survival functions (no 1 - p round-off):
    # t.sf(x, dof) = stdtr(dof, -x), norm.isf(p) = -ndtri(p)
    z[finite] = -np.sign(t[finite]) * ndtri(stdtr(dof[finite], -np.abs(t[finite])))
    critical = float(ndtri(1.0 - level / 2.0))
    methods = tuple(describe(m.std_method, (m.interval_dof or -1) + 1, _block_duration(m)) for m in models)
    return ModelComparison(tuple(labels), tuple(reference.base.names), values, std, z, np.abs(z) > critical,
                           float(level), critical, t, dof, methods, tuple(_payload_words(m) for m in models))


def _payload_words(model: DynamicModel) -> str:
    payload = model.payload
    if payload is None:
        return "none"
    com = ", ".join(f"{value:.4g}" for value in payload.com)
    return f"{payload.mass:.4g} kg at {payload.frame!r}, centre of mass [{com}] m"


def _block_duration(model: DynamicModel) -> float | None:
    uncertainty = model.metrics.get("uncertainty")
    return uncertainty.get("block_duration") if isinstance(uncertainty, dict) else None
