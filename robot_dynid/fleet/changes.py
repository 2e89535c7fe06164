"""Change detection over a fleet: a verdict on wear per robot, with the evidence under it.

Wear (:mod:`robot_dynid.estimation.wear`): each identified model's wear indicators (friction at reference
speeds, gravity torque at reference poses, torque RMS along a reference motion, in N m) are compared with the
robot's baseline (its first identified recording, or a given model) against the spread between recordings
of unchanged robots, pooled over the fleet's robots whose indicators share their reference conditions. With
m such tests over the whole fleet (every indicator of every compared recording of every robot) the p-values
are corrected together (below); an indicator is flagged as wear where its adjusted p-value is at most
``level`` and its change is at least the practical threshold
(:func:`~robot_dynid.estimation.wear.practical_thresholds`: a fraction of the joint's friction). Each robot
gets one verdict in words and units (:attr:`RobotChanges.verdict`), the same text in the CLI's table, its
``--json`` and the fleet page.

Parameters (evidence under the verdict; they depend on the trajectory): each recording's base parameters are
compared with the robot's baseline in combined standard deviations,
``z = (b - a) / sqrt(s_a^2 + s_b^2)`` (:func:`~robot_dynid.estimation.comparison.compare_models`), and turned
into two-sided p-values ``p = 2 (1 - Phi(|z|))``, corrected over the fleet as below. Fits on different
trajectories differ through model error by many standard deviations even on an unchanged robot, so a flagged
parameter is not wear by itself.

Corrections of m p-values:

- Holm (default; controls the family-wise error rate: an unchanged fleet raises any flag with probability at
  most ``level``): sort ``p_(1) <= ... <= p_(m)``; reject while ``p_(k) <= level / (m - k + 1)``. Adjusted:
  ``max_{j <= k} min(1, (m - j + 1) p_(j))``.
- Benjamini-Hochberg (``bh``; controls the false discovery rate, the expected share of false flags among the
  flags; under no change at all the same as the family-wise rate): reject the k smallest for the largest k
  with ``p_(k) <= k level / m``. Adjusted: ``min_{j >= k} min(1, m p_(j) / j)``.

Robots far from the fleet median (parameters): for robots whose models share their base parameters, each
parameter's latest values x_i (std s_i) against their median, in two ways that must both hold: the
difference is significant against the estimation noise, ``z_i = (x_i - median) / sqrt(s_i^2 + s_median^2)``
with ``s_median = sqrt(pi / (2 R)) median(s)`` (the standard error of a median of R), corrected as above over
every robot and parameter; and it exceeds ``spreads`` robust spreads of the fleet, ``1.4826 MAD`` (the median
absolute deviation scaled to a normal standard deviation: real differences between arms, a heavier link, are
not outliers unless one arm stands apart). It needs three robots or more.
"""
from __future__ import annotations

import dataclasses
import json
import math
from typing import TYPE_CHECKING, Sequence

import numpy as np

from robot_dynid import validators
from robot_dynid.errors import DynIdError
from robot_dynid.estimation.wear import (between_recording_spread, change_statistics, ChangeStatistics,
                                         PRACTICAL_FRACTION, practical_thresholds, reference_conditions,
                                         ReferenceConditions, wear_indicators, WearIndicators)

__all__ = ["CORRECTIONS", "CORRECTION_NAMES", "DEFAULT_LEVEL", "DEFAULT_OUTLIER_SPREADS", "MAD_TO_STD", "holm",
           "benjamini_hochberg", "correct", "two_sided_p", "FleetRecord", "drive_parameters", "RobotWear",
           "RobotChanges", "FleetAnalysis", "PARAMETER_NOTE", "analyse_fleet", "change_text"]

if TYPE_CHECKING:
    from robot_dynid.model.dynamic_model import DynamicModel

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
    from scipy.special import ndtr                  # norm.sf(x) = ndtr(-x), without scipy.stats' 1 s import
    return 2.0 * ndtr(-np.abs(np.asarray(z, dtype=float)))


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
class RobotWear:
    """The wear tests of one robot (:func:`analyse_fleet`); arrays over its compared recordings (c) and its
    indicators (K).

    Attributes
    ----------
    reference : ReferenceConditions or None
    baseline : WearIndicators or None
        The baseline's indicators.
    history : list of (FleetRecord, WearIndicators)
        Every identified recording of the robot under ``reference``, in time order.
    compared : list of FleetRecord
        Those compared with the baseline (c).
    statistics : ChangeStatistics or None
    thresholds : ndarray (K,)
        [N m] (N) practical thresholds (:func:`~robot_dynid.estimation.wear.practical_thresholds`).
    adjusted, significant, flagged : ndarray (c, K)
        Adjusted p-values, ``adjusted <= level``, and significant with ``|change| >= threshold``.
    """

    reference: ReferenceConditions | None = None
    baseline: WearIndicators | None = None
    history: list = dataclasses.field(default_factory=list)
    compared: list = dataclasses.field(default_factory=list)
    statistics: ChangeStatistics | None = None
    thresholds: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    adjusted: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    significant: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0), dtype=bool))
    flagged: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0), dtype=bool))

    @property
    def indicators(self) -> tuple:
        return self.baseline.indicators if self.baseline is not None else ()

    @property
    def n_tests(self) -> int:
        return 0 if self.statistics is None else int(self.statistics.p.size)

    def since(self, k: int) -> FleetRecord | None:
        """The first recording of the run of flagged recordings (same sign) that ends with the latest one, for
        indicator ``k``; None when the latest does not flag it."""
        if not self.flagged.shape[0] or not self.flagged[-1, k]:
            return None
        sign = np.sign(self.statistics.difference[-1, k])
        first = len(self.compared) - 1
        while first > 0 and self.flagged[first - 1, k] and np.sign(self.statistics.difference[first - 1, k]) == sign:
            first -= 1
        return self.compared[first]

    def finding(self, i: int, k: int) -> dict:
        """Indicator ``k`` in compared recording ``i``: the change and its test."""
        indicator = self.indicators[k]
        record = self.compared[i]
        a, change = float(self.baseline.values[k]), float(self.statistics.difference[i, k])
        return {**indicator.to_dict(), "recorded_at": record.recorded_at, "baseline": a,
                "baseline_std": float(self.baseline.std[k]), "value": float(self.indicators_of(record).values[k]),
                "std": float(self.indicators_of(self.compared[i]).std[k]), "change": change,
                "change_percent": 100.0 * change / abs(a) if a else None,
                "combined_std": float(self.statistics.combined_std[i, k]), "t": float(self.statistics.t[i, k]),
                "dof": float(self.statistics.dof[i, k]), "p_adjusted": float(self.adjusted[i, k]),
                "threshold": float(self.thresholds[k]), "significant": bool(self.significant[i, k]),
                "flagged": bool(self.flagged[i, k])}

    def indicators_of(self, record: FleetRecord) -> WearIndicators:
        """The indicators of ``record``, one of :attr:`history`."""
        return next(indicators for item, indicators in self.history if item is record)


@dataclasses.dataclass
class RobotChanges:
    """The change detection of one robot (:func:`analyse_fleet`): its wear (``wear``, ``verdict``) and, as
    evidence, its parameters' comparison; parameter arrays over its compared recordings (c) and base parameters
    (r)."""

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
    wear: RobotWear = dataclasses.field(default_factory=RobotWear)
    verdict: str = ""
    wear_notes: list = dataclasses.field(default_factory=list)

    @property
    def flagged_names(self) -> list[str]:
        """Parameters flagged in any compared recording, in the models' order."""
        return [name for k, name in enumerate(self.names) if self.flagged[:, k].any()] if self.flagged.size else []

    @property
    def findings(self) -> list[dict]:
        """The indicators flagged as wear in the latest compared recording (:meth:`RobotWear.finding`, with
        ``since``), strongest first."""
        wear = self.wear
        if not wear.flagged.shape[0]:
            return []
        found = []
        for k in np.flatnonzero(wear.flagged[-1]):
            entry = wear.finding(wear.flagged.shape[0] - 1, k)
            entry["since"] = wear.since(k).recorded_at
            found.append(entry)
        return sorted(found, key=lambda entry: -abs(entry["t"]))

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

    def wear_dict(self) -> dict:
        """The wear tests: the baseline, every indicator's history (values, changes, tests), the findings."""
        wear = self.wear
        if wear.baseline is None:
            return {"indicators": [], "findings": [], "notes": list(self.wear_notes)}
        compared = {id(record): i for i, record in enumerate(wear.compared)}
        indicators = []
        for k, indicator in enumerate(wear.indicators):
            history = []
            for record, values in wear.history:
                point = {"recorded_at": record.recorded_at, "value": float(values.values[k]),
                         "std": float(values.std[k])}
                i = compared.get(id(record))
                if i is not None:
                    point.update({key: wear.finding(i, k)[key] for key in
                                  ("change", "change_percent", "combined_std", "t", "dof", "p_adjusted", "significant",
                                   "flagged")})
                history.append(point)
            indicators.append({**indicator.to_dict(), "baseline": float(wear.baseline.values[k]),
                               "baseline_std": float(wear.baseline.std[k]), "threshold": float(wear.thresholds[k]),
                               "history": history})
        return {"reference": wear.reference.key, "findings": self.findings, "indicators": indicators,
                "notes": list(self.wear_notes)}


@dataclasses.dataclass
class FleetAnalysis:
    """Wear verdicts, the parameters' change detection and the fleet's spread (:func:`analyse_fleet`).

    ``n_tests``: parameter tests; ``n_wear_tests``: indicator tests; ``references``: reference key ->
    (:class:`~robot_dynid.estimation.wear.ReferenceConditions`, the spread pooled over its robots or None, the
    robots).
    """

    robots: dict
    level: float
    correction: str
    n_tests: int
    wear_parameters: tuple
    spread: dict
    n_spread_tests: int
    outlier_spreads: float
    n_wear_tests: int = 0
    practical_fraction: float = PRACTICAL_FRACTION
    references: dict = dataclasses.field(default_factory=dict)

    @property
    def correction_name(self) -> str:
        return CORRECTION_NAMES[self.correction]

    @property
    def verdicts(self) -> dict:
        return {robot_id: changes.verdict for robot_id, changes in self.robots.items()}

    def robot_dicts(self):
        """``(robot_id, its document)`` of every robot, made one at a time (a fleet's documents together are
        about 15 kB per recording: :meth:`to_dict` with ``robots=False`` and these stream a large fleet)."""
        for robot_id, changes in self.robots.items():
            friction = drive_parameters(changes.reference) if changes.reference is not None else {}
            wear = {name: _owner(name, friction) for name in self.wear_parameters}
            yield robot_id, {
                "verdict": changes.verdict,
                "wear": changes.wear_dict(),
                "baseline": changes.baseline,
                "parameters": {"flagged": changes.flagged_names, "far_from_median": list(changes.far),
                               "friction": changes.summary(friction), "wear_parameters": changes.summary(wear)},
                "recordings": [_record_dict(record, changes) for record in changes.records],
                "notes": list(changes.notes),
            }

    def to_dict(self, robots: bool = True) -> dict:
        """The fleet's document; ``robots=False``: without the per-robot documents (:meth:`robot_dicts`)."""
        robots = dict(self.robot_dicts()) if robots else {}
        references = {key: {"robots": list(robots_of), "conditions": reference.to_dict(),
                            "spread": None if spread is None else spread.to_dict(names)}
                      for key, (reference, spread, robots_of, names) in self.references.items()}
        return {"verdicts": self.verdicts,
                "wear": {"level": self.level, "correction": CORRECTION_NAMES[self.correction],
                         "tests": self.n_wear_tests, "practical_fraction": self.practical_fraction,
                         "references": references},
                "robots": robots,
                "parameters": {"note": PARAMETER_NOTE, "level": self.level,
                               "correction": CORRECTION_NAMES[self.correction], "tests": self.n_tests,
                               "far_from_median_tests": self.n_spread_tests, "outlier_spreads": self.outlier_spreads,
                               "wear_parameters": list(self.wear_parameters), "spread": self.spread}}


PARAMETER_NOTE = ("base parameters fitted on different trajectories differ through model error even when the robot "
                  "did not change: a flagged parameter is evidence to read with the wear verdict, not wear")


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
        entry["flagged_parameters"] = [name for k, name in enumerate(changes.names) if changes.flagged[i, k]]
        entry["max_abs_z"] = float(np.max(np.abs(changes.z[i]))) if changes.z.shape[1] else 0.0
    wear = changes.wear
    i = next((i for i, compared in enumerate(wear.compared) if compared is record), None)
    if i is not None:
        entry["wear_flagged"] = [wear.indicators[k].name for k in np.flatnonzero(wear.flagged[i])]
    return entry


def analyse_fleet(histories: dict[str, Sequence[FleetRecord]], baseline: DynamicModel | str = "first",
                  level: float = DEFAULT_LEVEL, correction: str = "holm", wear_parameters: Sequence[str] = (),
                  outlier_spreads: float = DEFAULT_OUTLIER_SPREADS, reference_motions: dict | None = None,
                  practical_fraction: float = PRACTICAL_FRACTION) -> FleetAnalysis:
    """Wear verdicts of every robot, with the parameters' change detection and the fleet's spread as evidence
    (module docstring).

    Parameters
    ----------
    histories : dict
        Robot id -> its records, in time order.
    baseline : "first" or DynamicModel
        Each robot's first identified recording, or one model every robot is compared with.
    wear_parameters : sequence of str
        Base parameter names summarised per joint besides friction (parameter evidence).
    reference_motions : dict, optional
        Joint names (tuple) -> ``(q, qd, qdd, source)``: the reference motion of the robots with those joints
        (e.g. the protocol's validation trajectory as recorded), else the built-in one.
    practical_fraction : float
        [1] of a joint's friction below which a change is not wear.

    Raises
    ------
    DynIdError
        A level outside (0, 1), an unknown correction, a practical fraction outside [0, 1], a wear parameter that
        no robot's model has (naming it and the known names).
    """
    validators.text(correction, "correction", DynIdError, list(CORRECTIONS))
    level = validators.significance_level(level, DynIdError)
    practical_fraction = validators.fraction(practical_fraction, "practical fraction", DynIdError, allow_zero=True)
    robots = {robot_id: _compare_robot(robot_id, list(records), baseline, level)
              for robot_id, records in histories.items()}
    known = {name for changes in robots.values() for name in changes.names}
    unknown = [name for name in wear_parameters if name not in known]
    if unknown and known:
        raise DynIdError(f"wear parameter(s) {unknown} are not base parameters of the fleet's models (known: "
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
    references = _wear(robots, histories, baseline, level, correction, reference_motions or {}, practical_fraction)
    for changes in robots.values():
        changes.verdict = _verdict(changes, practical_fraction)
    return FleetAnalysis(robots, level, correction, n_tests, tuple(wear_parameters), spread, n_spread_tests,
                         outlier_spreads, sum(changes.wear.n_tests for changes in robots.values()),
                         practical_fraction, references)


def _wear(robots: dict, histories: dict, baseline, level: float, correction: str, motions: dict,
          practical_fraction: float) -> dict:
    """Indicators, pooled spreads and corrected tests of every robot (sets each ``wear``); the references."""
    conditions: dict = {}
    indicators: dict = {}

    def indicators_of(model, reference):
        """wear_indicators, once per model object and reference (rows reusing a recording share its model)."""
        key = (id(model), reference.key)
        if key not in indicators:
            indicators[key] = wear_indicators(model, reference)
        return indicators[key]

    def reference_of(robot) -> ReferenceConditions:
        names = tuple(robot.joint_names)
        key = (names, json.dumps(robot.to_dict(), sort_keys=True, default=str))
        if key not in conditions:
            q, qd, qdd, source = motions.get(names, (None, None, None, ""))
            conditions[key] = reference_conditions(robot, None if q is None else (q, qd, qdd), source)
        return conditions[key]

    for robot_id, changes in robots.items():
        identified = [record for record in histories[robot_id] if record.model is not None]
        given = not isinstance(baseline, str)       # a model, not "first"
        anchor = baseline if given else (identified[0].model if identified else None)
        if anchor is None:
            continue
        wear = changes.wear
        wear.reference = reference_of(anchor.robot)
        for record in identified:
            if tuple(record.model.joint_names) != wear.reference.joint_names:
                changes.wear_notes.append(f"{record.recorded_at}: its model's joints differ from the baseline's; "
                                          "not compared")
                continue
            wear.history.append((record, indicators_of(record.model, wear.reference)))
        if given:
            wear.baseline, wear.compared = wear_indicators(baseline, wear.reference), [r for r, _ in wear.history]
        elif wear.history:
            wear.baseline, wear.compared = wear.history[0][1], [r for r, _ in wear.history[1:]]
        if wear.baseline is not None:
            wear.thresholds = practical_thresholds(wear.baseline.indicators, wear.baseline.values, practical_fraction)
    references: dict = {}
    for changes in robots.values():
        if changes.wear.baseline is not None:
            references.setdefault(changes.wear.reference.key, []).append(changes)
    result = {}
    for key, members in references.items():
        spread = between_recording_spread([(np.array([values.values for _, values in changes.wear.history]),
                                            np.array([values.std for _, values in changes.wear.history]))
                                           for changes in members if changes.wear.history])
        usable = not np.isnan(spread.inflation).any()
        for changes in members:
            wear = changes.wear
            if not wear.compared:
                continue
            if not usable:
                changes.wear_notes.append("not tested: no recording-to-recording spread in the fleet yet (it needs a "
                                          "robot with two recordings or more)")
                continue
            values = np.array([wear.indicators_of(record).values for record in wear.compared])
            std = np.array([wear.indicators_of(record).std for record in wear.compared])
            wear.statistics = change_statistics(wear.baseline.values, wear.baseline.std, values, std, spread)
        result[key] = (members[0].wear.reference, spread if usable else None, [c.robot_id for c in members],
                       members[0].wear.baseline.names)
    tested = [changes.wear for changes in robots.values() if changes.wear.statistics is not None]
    if tested:
        adjusted, rejected = correct(np.concatenate([wear.statistics.p.ravel() for wear in tested]), level,
                                     correction)
        start = 0
        for wear in tested:
            shape = wear.statistics.p.shape
            wear.adjusted = adjusted[start:start + wear.statistics.p.size].reshape(shape)
            wear.significant = rejected[start:start + wear.statistics.p.size].reshape(shape)
            wear.flagged = wear.significant & (np.abs(wear.statistics.difference) >= wear.thresholds)
            start += wear.statistics.p.size
    return result


def _day(record: FleetRecord, records: Sequence[FleetRecord]) -> str:
    """The recording's date, or its full stamp when the robot has another recording that day."""
    day = record.recorded_at[:10]
    return day if sum(other.recorded_at[:10] == day for other in records) == 1 else record.recorded_at


def change_text(finding: dict) -> str:
    """``elbow_joint friction +31 % at 1.58 rad/s (+1.35 N m)`` and the like, of a :meth:`RobotWear.finding`."""
    unit, change, percent = finding["unit"], finding["change"], finding["change_percent"]
    relative = "" if percent is None else f"{percent:+.0f} % "
    if finding["kind"] == "friction":
        return f"{finding['joint']} friction {relative}{finding['condition']} ({change:+.3g} {unit})"
    quantity = {"gravity": "gravity torque", "motion": "torque RMS"}[finding["kind"]]
    if unit == "N":
        quantity = quantity.replace("torque", "force")
    relative = "" if percent is None else f" ({percent:+.0f} %)"
    return f"{finding['joint']} {quantity} {change:+.3g} {unit}{relative} {finding['condition']}"


def _verdict(changes: RobotChanges, practical_fraction: float) -> str:
    """One line on the robot's wear, in words and units (module docstring)."""
    robot_id, records, wear = changes.robot_id, changes.records, changes.wear
    identified = [record for record in records if record.model is not None]
    if not identified:
        failed = sum(record.status != "identified" for record in records)
        return f"{robot_id}: no recording identified ({failed} failed)"
    if not wear.compared:
        return f"{robot_id}: one recording ({_day(identified[0], records)}): nothing to compare with yet"
    if wear.statistics is None:
        return (f"{robot_id}: not tested ({len(identified)} recordings): no recording-to-recording spread in the fleet "
                "yet")
    findings = changes.findings
    count = f"{len(wear.history)} recording{'s' if len(wear.history) != 1 else ''}"
    if findings:
        parts, seen = [], set()
        for finding in findings:
            group = (finding["joint"], finding["kind"])
            if group in seen:
                continue
            seen.add(group)
            since = next(record for record in records if record.recorded_at == finding["since"])
            parts.append(f"{change_text(finding)} since {_day(since, records)}")
        return f"{robot_id}: " + "; ".join(parts)
    text = f"{robot_id}: no change beyond the fleet's spread ({count})"
    latest = wear.significant[-1]
    if latest.any():
        k = int(np.argmax(np.where(latest, np.abs(wear.statistics.t[-1]), -np.inf)))
        small = change_text(wear.finding(len(wear.compared) - 1, k))
        text = (f"{robot_id}: no change beyond {100 * practical_fraction:g} % of a joint's friction ({count}; the "
                f"largest smaller one: {small})")
    earlier = [record for i, record in enumerate(wear.compared[:-1]) if wear.flagged[i].any()]
    if earlier:
        text += f"; flagged on {', '.join(_day(record, records) for record in earlier)}, not in the latest"
    return text


def _compare_robot(robot_id, records, baseline, level) -> RobotChanges:
    from robot_dynid.estimation.comparison import compare_models
    identified = [record for record in records if record.model is not None]
    if not isinstance(baseline, str):
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
