"""Change detection over a fleet, with the multiple comparisons controlled.

For every robot, each recording's base parameters are compared with the robot's baseline (its
first identified recording, or a given model) in combined standard deviations,
``z = (b - a) / sqrt(s_a^2 + s_b^2)`` (:func:`~robot_dynid.estimation.comparison.compare_models`), and
turned into two-sided p-values ``p = 2 (1 - Phi(|z|))``. With m such tests over the whole fleet
(every parameter of every compared recording of every robot), about ``level * m`` would exceed
the per-test critical value by chance, so the p-values are corrected together:

- Holm (default; controls the family-wise error rate: an unchanged fleet raises any flag with
  probability at most ``level``): sort ``p_(1) <= ... <= p_(m)``; reject while
  ``p_(k) <= level / (m - k + 1)``. Adjusted: ``max_{j <= k} min(1, (m - j + 1) p_(j))``.
- Benjamini-Hochberg (``bh``; controls the false discovery rate, the expected share of false
  flags among the flags; under no change at all the same as the family-wise rate): reject the k
  smallest for the largest k with ``p_(k) <= k level / m``. Adjusted:
  ``min_{j >= k} min(1, m p_(j) / j)``.

A parameter is flagged where its adjusted p-value is at most ``level``. The friction coefficients
and the parameters marked as wear indicators are summarised per joint (or motor): baseline,
latest, change and whether flagged.

Robots far from the fleet median: for robots whose models share their base parameters, each
parameter's latest values x_i (std s_i) against their median, in two ways that must both hold:
the difference is significant against the estimation noise, ``z_i = (x_i - median) /
sqrt(s_i^2 + s_median^2)`` with ``s_median = sqrt(pi / (2 R)) median(s)`` (the standard error of a
median of R), corrected as above over every robot and parameter; and it exceeds
``spreads`` robust spreads of the fleet, ``1.4826 MAD`` (the median absolute deviation scaled to a
normal standard deviation: real differences between arms, a heavier link, are not outliers
unless one arm stands apart). It needs three robots or more.
"""
from __future__ import annotations

import dataclasses
import math
from typing import Sequence

import numpy as np
from scipy.stats import norm

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.estimation.comparison import compare_models

CORRECTIONS = ("holm", "bh")
CORRECTION_NAMES = {"holm": "Holm (family-wise error rate)", "bh": "Benjamini-Hochberg (false discovery rate)"}
DEFAULT_LEVEL = 0.05
DEFAULT_OUTLIER_SPREADS = 3.5
"""Robust spreads (1.4826 MAD) beyond which a robot is far from the fleet median (Iglewicz and Hoaglin's
cut-off of the modified z-score)."""
MAD_TO_STD = 1.4826


def holm(p, level: float = DEFAULT_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down correction of p-values ``p`` (m,): (adjusted p-values (m,), rejected (m,))."""
    p = _p_values(p, level)
    m = p.size
    order = np.argsort(p, kind="stable")
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return adjusted, adjusted <= level


def benjamini_hochberg(p, level: float = DEFAULT_LEVEL) -> tuple[np.ndarray, np.ndarray]:
    """Benjamini-Hochberg's step-up correction of p-values ``p`` (m,): (adjusted p-values, rejected)."""
    p = _p_values(p, level)
    m = p.size
    order = np.argsort(p, kind="stable")
    scaled = m * p[order] / np.arange(1, m + 1)
    adjusted = np.empty(m)
    adjusted[order] = np.minimum(1.0, np.minimum.accumulate(scaled[::-1])[::-1])
    return adjusted, adjusted <= level


def correct(p, level: float = DEFAULT_LEVEL, method: str = "holm") -> tuple[np.ndarray, np.ndarray]:
    """:func:`holm` or :func:`benjamini_hochberg` by name (:data:`CORRECTIONS`)."""
    validators.text(method, "correction", DynIdError, list(CORRECTIONS))
    return (holm if method == "holm" else benjamini_hochberg)(p, level)


def _p_values(p, level) -> np.ndarray:
    level = validators.significance_level(level, DynIdError)
    p = np.asarray(p, dtype=float).ravel()
    if np.any(~np.isfinite(p)) or np.any((p < 0.0) | (p > 1.0)):
        raise DynIdError("p-values must lie in [0, 1]")
    return p


def two_sided_p(z) -> np.ndarray:
    """``2 (1 - Phi(|z|))`` [1]; 0 for infinite z."""
    return 2.0 * norm.sf(np.abs(np.asarray(z, dtype=float)))


@dataclasses.dataclass(frozen=True, eq=False)
class FleetRecord:
    """One recording of a robot as the analysis sees it.

    Attributes
    ----------
    robot_id, recorded_at, data : str
        ``recorded_at`` ISO 8601 UTC (sorts in time order).
    status : {"identified", "failed"}
    reason : str
    model : DynamicModel or None
    model_file, report : str or None
        Relative to the output folder.
    """

    robot_id: str
    recorded_at: str
    data: str
    status: str
    reason: str = ""
    model: DynamicModel | None = None
    model_file: str | None = None
    report: str | None = None


def drive_parameters(model: DynamicModel) -> dict[str, str]:
    """Base parameter name -> the joint (or motor) name of each friction coefficient among ``model``'s
    base parameters."""
    regressor = model.regressor
    names = set(model.base.names)
    return {f"{coefficient}{row.label}": row.name for row in regressor.friction_rows
            for coefficient in model.friction.coefficient_names if f"{coefficient}{row.label}" in names}


@dataclasses.dataclass
class RobotChanges:
    """The change detection of one robot (:func:`analyse_fleet`); arrays over its compared recordings
    (c) and base parameters (r)."""

    robot_id: str
    records: list
    baseline: str
    names: tuple = ()
    compared: list = dataclasses.field(default_factory=list)
    z: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    p: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    adjusted: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    flagged: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    reference: DynamicModel | None = None
    notes: list = dataclasses.field(default_factory=list)
    far: list = dataclasses.field(default_factory=list)

    @property
    def flagged_names(self) -> list[str]:
        """Parameters flagged in any compared recording, in the models' order."""
        return [name for k, name in enumerate(self.names) if self.flagged[:, k].any()] if self.flagged.size else []

    def summary(self, parameters: dict[str, str]) -> dict:
        """Baseline, latest, change [%], z, adjusted p and flag of ``parameters`` (name -> joint), grouped by
        joint: {joint: [{parameter, ...}]}."""
        grouped: dict = {}
        if self.reference is None:
            return grouped
        latest = self.compared[-1] if self.compared else None
        for name, joint in parameters.items():
            if name not in self.names:
                continue
            k = self.names.index(name)
            a, sa = float(self.reference.values[k]), float(self.reference.std[k])
            entry = {"parameter": name, "baseline": a, "baseline_std": sa}
            if latest is not None:
                b, sb = float(latest.model.values[k]), float(latest.model.std[k])
                entry.update({"latest": b, "latest_std": sb, "latest_at": latest.recorded_at,
                              "change_percent": 100.0 * (b - a) / abs(a) if a else None,
                              "z": float(self.z[-1, k]), "p_adjusted": float(self.adjusted[-1, k]),
                              "flagged": bool(self.flagged[-1, k]),
                              "flagged_in": [r.recorded_at for i, r in enumerate(self.compared)
                                             if self.flagged[i, k]]})
            grouped.setdefault(joint, []).append(entry)
        return grouped


@dataclasses.dataclass
class FleetAnalysis:
    """Change detection and fleet spread of a fleet (:func:`analyse_fleet`)."""

    robots: dict
    level: float
    correction: str
    n_tests: int
    wear_parameters: tuple
    spread: dict
    n_spread_tests: int
    outlier_spreads: float

    @property
    def correction_name(self) -> str:
        return CORRECTION_NAMES[self.correction]

    def to_dict(self) -> dict:
        robots = {}
        for robot_id, changes in self.robots.items():
            friction = drive_parameters(changes.reference) if changes.reference is not None else {}
            wear = {name: _owner(name, friction) for name in self.wear_parameters}
            robots[robot_id] = {
                "flagged": changes.flagged_names,
                "far_from_median": list(changes.far),
                "baseline": changes.baseline,
                "friction": changes.summary(friction),
                "wear_indicators": changes.summary(wear),
                "recordings": [_record_dict(record, changes) for record in changes.records],
                "notes": list(changes.notes),
            }
        return {"level": self.level, "correction": CORRECTION_NAMES[self.correction], "tests": self.n_tests,
                "far_from_median_tests": self.n_spread_tests, "outlier_spreads": self.outlier_spreads,
                "wear_indicators": list(self.wear_parameters), "robots": robots, "spread": self.spread}


def _owner(name: str, friction: dict) -> str:
    """The joint a wear indicator belongs to: the friction row's, else the trailing joint number of its name."""
    if name in friction:
        return friction[name]
    digits = name[len(name.rstrip("0123456789")):]
    return f"joint {digits}" if digits else "-"


def _record_dict(record: FleetRecord, changes: RobotChanges) -> dict:
    entry = {"recorded_at": record.recorded_at, "data": record.data, "status": record.status,
             "model": record.model_file, "report": record.report}
    if record.status != "identified":
        entry["reason"] = record.reason
    i = next((i for i, compared in enumerate(changes.compared) if compared is record), None)
    if i is not None:
        entry["flagged"] = [name for k, name in enumerate(changes.names) if changes.flagged[i, k]]
        entry["max_abs_z"] = float(np.max(np.abs(changes.z[i]))) if changes.z.shape[1] else 0.0
    return entry


def analyse_fleet(histories: dict[str, Sequence[FleetRecord]], baseline: DynamicModel | str = "first",
                  level: float = DEFAULT_LEVEL, correction: str = "holm", wear_parameters: Sequence[str] = (),
                  outlier_spreads: float = DEFAULT_OUTLIER_SPREADS) -> FleetAnalysis:
    """Change detection of every robot and the fleet's spread (module docstring).

    Parameters
    ----------
    histories : dict
        Robot id -> its records, in time order.
    baseline : "first" or DynamicModel
        Each robot's first identified recording, or one model every robot is compared with.
    wear_parameters : sequence of str
        Base parameter names summarised per joint besides friction.

    Raises
    ------
    DynIdError
        A level outside (0, 1), an unknown correction, a wear indicator that no robot's model has
        (naming it and the known names).
    """
    validators.text(correction, "correction", DynIdError, list(CORRECTIONS))
    level = validators.significance_level(level, DynIdError)
    robots = {robot_id: _compare_robot(robot_id, list(records), baseline, level)
              for robot_id, records in histories.items()}
    known = {name for changes in robots.values() for name in changes.names}
    unknown = [name for name in wear_parameters if name not in known]
    if unknown and known:
        raise DynIdError(f"wear indicator(s) {unknown} are not base parameters of the fleet's models (known: "
                         f"{', '.join(sorted(known)[:60])})")
    tests = [changes for changes in robots.values() if changes.p.size]
    n_tests = int(sum(changes.p.size for changes in tests))
    if n_tests:
        adjusted, rejected = correct(np.concatenate([changes.p.ravel() for changes in tests]), level, correction)
        start = 0
        for changes in tests:
            size = changes.p.size
            changes.adjusted = adjusted[start:start + size].reshape(changes.p.shape)
            changes.flagged = rejected[start:start + size].reshape(changes.p.shape)
            start += size
    spread, n_spread_tests = _fleet_spread(robots, level, correction, outlier_spreads)
    return FleetAnalysis(robots, level, correction, n_tests, tuple(wear_parameters), spread, n_spread_tests,
                         outlier_spreads)


def _compare_robot(robot_id, records, baseline, level) -> RobotChanges:
    identified = [record for record in records if record.model is not None]
    if isinstance(baseline, DynamicModel):
        reference, compared, label = baseline, identified, "model given"
    elif identified:
        reference, compared, label = identified[0].model, identified[1:], identified[0].recorded_at
    else:
        return RobotChanges(robot_id, records, "-", notes=["no recording identified"])
    changes = RobotChanges(robot_id, records, label, tuple(reference.base.names), reference=reference)
    kept = []
    for record in compared:
        if tuple(record.model.base.names) != changes.names or record.model.joint_names != reference.joint_names:
            changes.notes.append(f"{record.recorded_at}: its model's base parameters differ from the baseline's "
                                 "(another robot description or friction model?); not compared")
        else:
            kept.append(record)
    changes.compared = kept
    if kept:
        comparison = compare_models([reference, *(record.model for record in kept)],
                                    ["baseline", *(record.recorded_at for record in kept)], level)
        changes.z = comparison.z
        changes.p = two_sided_p(comparison.z)
    else:
        changes.z = changes.p = np.zeros((0, len(changes.names)))
    changes.flagged = np.zeros(changes.p.shape, dtype=bool)
    changes.adjusted = np.ones(changes.p.shape)
    return changes


def _fleet_spread(robots: dict, level: float, correction: str, spreads: float) -> tuple[dict, int]:
    """{structure: per-parameter median, spread and each robot's deviation}; sets each robot's ``far``."""
    groups: dict = {}
    for changes in robots.values():
        latest = ([r for r in changes.records if r.model is not None] or [None])[-1]
        if latest is not None:
            groups.setdefault(tuple(latest.model.base.names), []).append((changes, latest))
    result, tests = {}, []
    for index, (names, members) in enumerate(sorted(groups.items(), key=lambda item: -len(item[1]))):
        ids = [changes.robot_id for changes, _ in members]
        x = np.array([latest.model.values for _, latest in members])
        s = np.array([latest.model.std for _, latest in members])
        median = np.median(x, axis=0)
        spread = MAD_TO_STD * np.median(np.abs(x - median), axis=0)
        entry = {"robots": ids, "parameters": list(names), "median": median.tolist(), "spread": spread.tolist(),
                 "values": x.tolist(), "std": s.tolist()}
        if len(members) >= 3:
            s_median = math.sqrt(math.pi / (2 * len(members))) * np.median(s, axis=0)
            z = (x - median) / np.hypot(s, s_median)
            deviation = np.abs(x - median)
            entry["deviation_in_spreads"] = np.where(spread > 0, deviation / np.where(spread > 0, spread, 1.0),
                                                     np.where(deviation > 0, np.inf, 0.0)).tolist()
            tests.append((members, names, z, deviation > spreads * spread, entry))
        else:
            entry["note"] = f"{len(members)} robot(s) with these base parameters: too few for a fleet median"
        result[f"group {index + 1}"] = entry
    if not tests:
        return result, 0
    p = np.concatenate([two_sided_p(z).ravel() for _, _, z, _, _ in tests])
    _, rejected = correct(p, level, correction)
    start = 0
    for members, names, z, beyond, entry in tests:
        far = rejected[start:start + z.size].reshape(z.shape) & beyond
        start += z.size
        entry["far"] = far.tolist()
        for i, (changes, _) in enumerate(members):
            changes.far = [name for k, name in enumerate(names) if far[i, k]]
    return result, int(p.size)
