"""Does the consistent fit predict as well as plain least squares? Held-out and cross-validated checks.

A physically consistent fit (:mod:`robot_dynid.estimation.physical_consistency`) trades residual for
plausibility: the constraints and the prior (the robot description's inertial data) move the
parameters away from the least-squares ones. A good prior costs nothing on data neither fit has seen;
a biased one (a CAD mass 25 % off) makes the consistent model predict worse. This module measures it:

- :func:`fold_pieces`: the folds of the identification data: the recordings when there are two or more,
  else the cycles of the one recording (two or more), else :data:`MAX_FOLDS` blocks of consecutive
  samples; at most :data:`MAX_FOLDS` folds (recordings or cycles dealt round-robin);
- :class:`Folds`: the folds' accumulators (and those they are scored on), with the two uses below;
- :func:`cross_validated_rss`: per fold k, a fit on the other folds' normal equations and its
  residual sum of squares per joint on fold k (no data pass: the folds' accumulators hold everything);
  where the fit filters torques and regressor alike (``lowpass``), scored on fold k's unfiltered equations, so
  that no option is chosen by a filtered residual alone (it flatters every candidate, unevenly);
- :func:`compare_with_least_squares`: per joint, the RMS error [N m] of the consistent fit and of plain
  least squares on held-out (or cross-validated) data; joints where the consistent fit's is more than
  :data:`LEAST_SQUARES_MARGIN` above are named in a warning;
- :func:`held_out_comparison`: the same on held-out recordings, for a model that recorded its
  least-squares values (``metrics["consistency"]["least_squares_values"]``);
- :func:`choose_prior_weight`: the regularised mode's prior weight among :data:`PRIOR_WEIGHT_CANDIDATES`
  with the least cross-validated error, each joint's residual relative to its torques (so a wrist
  counts as much as a shoulder).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Callable, Sequence

import numpy as np

from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.progress import Progress, no_progress
from robot_dynid.model.dynamic_model import DynamicModel
from robot_dynid.recordings.recording import Recording

__all__ = ["LEAST_SQUARES_MARGIN", "MAX_FOLDS", "PRIOR_WEIGHT_CANDIDATES", "fold_pieces", "Folds",
           "cross_validated_rss", "relative_error", "choose_prior_weight", "compare_with_least_squares",
           "held_out_comparison"]

LEAST_SQUARES_MARGIN = 0.1
"""[1] the consistent fit's held-out RMS error may exceed least squares' by this fraction before a warning."""
MAX_FOLDS = 5
"""Folds of the cross-validation at most."""
PRIOR_WEIGHT_CANDIDATES = (0.1, 1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6)
"""[1] prior weights tried by ``prior_weight = "auto"`` (the regularised mode's weight in link scales:
a Gaussian prior of std ``1 / sqrt(weight)`` link scales, from 3 down to 0.001)."""


def fold_pieces(recordings: Sequence[Recording]) -> tuple[str, list[list[Recording]]]:
    """``(what the folds are, folds)``: each fold a list of recordings or pieces of one (module docstring)."""
    if len(recordings) >= 2:
        count = min(len(recordings), MAX_FOLDS)
        return "recordings", [list(recordings[k::count]) for k in range(count)]
    recording = recordings[0]
    cycles = [] if recording.cycle is None else sorted(int(c) for c in np.unique(recording.cycle) if c >= 0)
    if len(cycles) >= 2:
        count = min(len(cycles), MAX_FOLDS)
        return "cycles", [[recording.select(cycles=cycles[k::count])] for k in range(count)]
    bounds = np.linspace(0, recording.n_samples, MAX_FOLDS + 1).astype(int)
    return "blocks of consecutive samples", [[recording.take(slice(a, b))] for a, b in zip(bounds[:-1], bounds[1:])]


@dataclasses.dataclass(frozen=True, eq=False)
class Folds:
    """Cross-validation folds as normal equations (:meth:`RecordingEquations.folds
    <robot_dynid.estimation.normal_equations.RecordingEquations.folds>`).

    Attributes
    ----------
    kind : str
        What the folds are (:func:`fold_pieces`: ``"recordings"``, ``"cycles"``, ...).
    fits : list of LeastSquaresAccumulator
        Each fold's equations, as the fit sees them.
    scoring : list of LeastSquaresAccumulator or None
        The same samples' unfiltered equations where the fit filters them (None: scored on ``fits``).
    """

    kind: str
    fits: Sequence[LeastSquaresAccumulator]
    scoring: Sequence[LeastSquaresAccumulator] | None = None

    @property
    def n_samples(self) -> int:
        return sum(fold.n_samples for fold in self.fits)

    def cross_validated_rss(self, fit: Callable[[LeastSquaresAccumulator], np.ndarray]) -> np.ndarray:
        """:func:`cross_validated_rss` of ``fit`` over these folds, (K, n) [N^2 m^2]."""
        return cross_validated_rss(self.fits, fit, self.scoring)

    def choose_prior_weight(self, fit: Callable[[LeastSquaresAccumulator, float], np.ndarray],
                            progress: Progress = no_progress) -> tuple[float, dict]:
        """:func:`choose_prior_weight` over these folds."""
        return choose_prior_weight(self.fits, fit, scoring=self.scoring, progress=progress)


def cross_validated_rss(folds: Sequence[LeastSquaresAccumulator],
                        fit: Callable[[LeastSquaresAccumulator], np.ndarray],
                        scoring: Sequence[LeastSquaresAccumulator] | None = None) -> np.ndarray:
    """``(K, n)`` residual sums of squares [N^2 m^2]: row k of ``fit`` (training accumulator -> base values
    (r,)) fitted on every fold but k, evaluated on fold k; with ``scoring``, on ``scoring[k]`` instead (the same
    samples' equations unfiltered, when the fit filters them: a choice is never made on filtered residuals)."""
    rss = []
    for k, held_out in enumerate(folds):
        training = LeastSquaresAccumulator(held_out.n_joints, held_out.n_parameters)
        for other in folds[:k] + folds[k + 1:]:
            training.merge(other)
        rss.append((held_out if scoring is None else scoring[k]).residual_sum_of_squares(fit(training)))
    return np.array(rss)


def relative_error(rss: np.ndarray, folds: Sequence[LeastSquaresAccumulator]) -> float:
    """Sum over joints of the cross-validated residual over the torques' sum of squares [1] (``rss`` (K, n))."""
    torque = np.sum([fold.torque_square_sum_ for fold in folds], axis=0)
    return float(np.sum(np.sum(rss, axis=0) / np.maximum(torque, np.finfo(float).tiny)))


def choose_prior_weight(folds: Sequence[LeastSquaresAccumulator],
                        fit: Callable[[LeastSquaresAccumulator, float], np.ndarray],
                        candidates: Sequence[float] = PRIOR_WEIGHT_CANDIDATES,
                        scoring: Sequence[LeastSquaresAccumulator] | None = None,
                        progress: Progress = no_progress) -> tuple[float, dict]:
    """``(weight, {weight: relative error})``: the candidate whose consistent fit ``fit(training, weight)``
    has the least :func:`relative_error` over the folds (the larger weight on a tie: the stronger prior), scored
    on ``scoring`` when given (:func:`cross_validated_rss`); ``progress`` wraps the loop over the candidates (one
    consistent fit per fold each: seconds on many recordings)."""
    scored = folds if scoring is None else scoring
    scores = {float(weight): relative_error(cross_validated_rss(folds, lambda train: fit(train, weight), scoring),
                                            scored)
              for weight in progress(candidates, "choosing the prior weight", len(candidates))}
    best = min(scores.values())
    return max(weight for weight, score in scores.items() if score <= best * (1.0 + 1e-9)), scores


def compare_with_least_squares(joint_names: Sequence[str], consistent_rss, least_squares_rss, n_samples: int,
                               data: str, margin: float = LEAST_SQUARES_MARGIN, prior_share: float = math.nan) -> dict:
    """The consistent fit's RMS error against least squares' per joint on the same held-out samples.

    Parameters
    ----------
    joint_names : sequence of str
    consistent_rss, least_squares_rss : array_like, shape (n,)
        [N^2 m^2] residual sums of squares of both fits on ``n_samples`` held-out samples.
    data : str
        What the samples are (``"held-out recording(s) a.csv"``, ``"cross-validated over 5 cycles"``).
    margin : float
        [1] allowed relative increase of a joint's RMS error.
    prior_share : float
        [1] share of the consistent fit's training cost that comes from the prior (nan: unknown), to say
        whether the prior or the constraints cost the accuracy.

    Returns
    -------
    dict
        ``data``, ``margin``, ``joints`` ({joint: {consistent_rms, least_squares_rms, increase}}, [N m], [1]),
        ``worse`` (joints beyond the margin), ``text`` (one line) and ``warning`` (a line or None).
    """
    consistent = np.sqrt(np.asarray(consistent_rss, dtype=float) / max(n_samples, 1))
    least_squares = np.sqrt(np.asarray(least_squares_rss, dtype=float) / max(n_samples, 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        increase = np.where(least_squares > 0.0, consistent / least_squares - 1.0,
                            np.where(consistent > 0.0, np.inf, 0.0))
    worse = [joint for joint, value in zip(joint_names, increase) if value > margin]
    listing = ", ".join(f"{joint} {value:+.1%}" for joint, value in zip(joint_names, increase))
    text = (f"consistent fit against plain least squares on {data}: RMS error per joint {listing} "
            f"(warning above +{margin:.0%})")
    warning = None
    if worse:
        named = ", ".join(f"{joint} ({consistent[j]:.4g} against {least_squares[j]:.4g} N m)"
                          for j, joint in enumerate(joint_names) if joint in worse)
        cause = ("the prior (the robot description's inertial data) costs most of its residual: check those data, or "
                 "give --prior-mode regularised --prior-weight auto, or --prior-mode none" if prior_share > 0.5 else
                 "the constraints cost most of its residual: an unmodelled effect (a spring, a cable, friction of "
                 "another shape) the inertias absorbed in least squares, or bounds that are too tight")
        warning = (f"the physically consistent fit predicts {data} worse than plain least squares by more than "
                   f"{margin:.0%} on joint(s) {named}: {cause}")
    return {"data": data, "margin": margin,
            "joints": {joint: {"consistent_rms": float(consistent[j]), "least_squares_rms": float(least_squares[j]),
                               "increase": float(increase[j])} for j, joint in enumerate(joint_names)},
            "worse": worse, "text": text, "warning": warning}


def held_out_comparison(model: DynamicModel, recordings: Sequence[Recording],
                        margin: float = LEAST_SQUARES_MARGIN) -> dict | None:
    """:func:`compare_with_least_squares` of a consistent ``model`` on held-out ``recordings`` (q, qd, qdd,
    tau; joints matched by name) against the least-squares values it recorded; None for a model without them."""
    consistency = model.metrics.get("consistency") or {}
    if consistency.get("least_squares_values") is None or not recordings:
        return None
    least_squares = dataclasses.replace(model, values=np.asarray(consistency["least_squares_values"], dtype=float),
                                        standard=None)
    rss = np.zeros((2, model.robot.n_joints))
    n_samples = 0
    for recording in recordings:
        recording = recording.reorder(model.joint_names)
        for row, fit in enumerate((model, least_squares)):
            predicted = fit.torque(recording.q, recording.qd, recording.qdd, temperature=recording.temperature,
                                   elapsed=recording.elapsed)
            rss[row] += np.sum((predicted - recording.tau) ** 2, axis=0)
        n_samples += recording.n_samples
    total = consistency.get("residual_increase") or 0.0
    share = (total - consistency.get("constraint_increase", math.nan)) / total if total > 0.0 else math.nan
    return compare_with_least_squares(model.joint_names, rss[0], rss[1], n_samples,
                                      "held-out recording(s) " + ", ".join(r.source for r in recordings),
                                      margin, share)
