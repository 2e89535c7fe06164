"""The derivative window chosen for identification: by cross-validation of the torque residual.

Accelerations (and, without recorded velocities, velocities) come from local polynomial fits over a window. A
window that is too short lets noise through (and noise in a regressor biases least squares: errors in variables);
one too long smooths the motion away. How much noise a real recording carries, and of what colour (quantised
velocities, a driver's filter, correlated vibration), is not what a white-noise estimate from the data says:
on a 1 kHz arm with torque sensors the rule "shortest window whose acceleration noise is 10 % of its RMS" chose
23 samples where 0.2 s identified a model twice as good on held-out motion (docs/real_robots.md).

So the window is chosen for what identification needs: for each candidate (:data:`CANDIDATE_WINDOWS` [s] with at
least :data:`~robot_dynid.recordings.conditioning.MIN_WINDOW_SAMPLES` samples, and the noise rule's own choice),
the recording's :data:`FOLDS` contiguous time blocks are differentiated with it (of a recording longer than
:data:`MAX_SAMPLES` samples, as many evenly spaced excerpts of ``MAX_SAMPLES / FOLDS`` samples: the choice does not
need every sample of a shift's recording), their equations formed (rows thinned evenly to at most :data:`MAX_ROWS`),
each block is predicted by the least-squares fit of the others, and the window with the smallest held-out torque
residual wins (each joint's residual over its torque variance, summed); among windows within
:data:`TIE_TOLERANCE` of the smallest residual, the shortest (the one that smooths the motion least). The
measured torques do not depend on the window, so the residuals of all candidates are comparable; a window that
smooths the motion or lets noise in both raise them.
"""
from __future__ import annotations

import dataclasses
import logging

import numpy as np

from robot_dynid.errors import DataError
from robot_dynid.estimation.consistency_check import cross_validated_rss
from robot_dynid.estimation.estimators import LeastSquaresAccumulator
from robot_dynid.estimation.identification import IdentificationSettings
from robot_dynid.estimation.normal_equations import iter_regressor_chunks
from robot_dynid.model.base_parameters import compute_base_parameters
from robot_dynid.model.robot_description import RobotDescription
from robot_dynid.recordings.conditioning import (MAX_DERIVATIVE_WINDOW, MIN_WINDOW_SAMPLES, Conditioning,
                                                 derivative_plan)
from robot_dynid.recordings.pipeline import complete_derivatives, zero_at_rest
from robot_dynid.recordings.recording import Recording
from robot_dynid.recordings.signal_processing import median_step

__all__ = ["CANDIDATE_WINDOWS", "FOLDS", "MAX_ROWS", "MAX_SAMPLES", "TIE_TOLERANCE", "WindowChoice",
           "candidate_windows", "choose_derivative_window", "window_chooser"]

logger = logging.getLogger(__name__)

CANDIDATE_WINDOWS = (0.02, 0.035, 0.05, 0.07, 0.1, 0.14, 0.2)
"""[s] windows tried (those of at least MIN_WINDOW_SAMPLES samples), up to MAX_DERIVATIVE_WINDOW."""
FOLDS = 5
"""Contiguous time blocks of the cross-validation."""
MAX_ROWS = 20_000
"""Samples (evenly thinned) whose equations score a candidate."""
MAX_SAMPLES = 100_000
"""Samples differentiated per candidate at most (module docstring)."""
TIE_TOLERANCE = 0.01
"""Residuals within this fraction of the smallest are a tie, won by the shortest window."""


@dataclasses.dataclass(frozen=True)
class WindowChoice:
    """The chosen window and the evidence.

    Attributes
    ----------
    window : float
        [s] the chosen window.
    scores : dict
        Candidate window [s] -> held-out residual (sum over joints of residual / torque variance, per sample); inf
        where a block was too short for the window.
    noise_rule : float
        [s] what the noise rule alone would have chosen.
    """

    window: float
    scores: dict
    noise_rule: float

    def describe(self) -> str:
        best = self.scores[self.window]
        noise = self.scores.get(self.noise_rule)
        comparison = (f"; the noise rule's {self.noise_rule:.3g} s scores {noise / best:.3g}x" if noise is not None
                      and self.noise_rule != self.window else "")
        return (f"derivative window {self.window:.3g} s chosen by {FOLDS}-fold cross-validation of the torque "
                f"residual over {len(self.scores)} candidates{comparison}")

    def to_dict(self) -> dict:
        return {"window_s": float(self.window), "noise_rule_s": float(self.noise_rule), "folds": FOLDS,
                "scores": {f"{window:.4g}": float(score) if np.isfinite(score) else None
                           for window, score in sorted(self.scores.items())}}


def candidate_windows(recording: Recording, conditioning: Conditioning,
                      estimates: dict | None = None) -> tuple[list[float], float]:
    """``(candidates [s], the noise rule's choice [s])`` for ``recording`` (module docstring); ``estimates``: a dict
    that keeps the recording's noise and motion estimates
    (:func:`~robot_dynid.recordings.conditioning.derivative_plan`)."""
    step = median_step(recording.time)
    velocities = recording.qd if recording.qd is not None and not (conditioning.derive or
                                                                   conditioning.accelerations_from_positions) else None
    noise_rule = derivative_plan(recording.time, recording.q, velocities, estimates=estimates).window_seconds
    shortest = MIN_WINDOW_SAMPLES * step
    candidates = sorted({round(window, 6) for window in CANDIDATE_WINDOWS
                         if shortest * (1.0 - 1e-9) <= window <= MAX_DERIVATIVE_WINDOW} | {round(noise_rule, 6)})
    return candidates, round(noise_rule, 6)


def choose_derivative_window(recording: Recording, robot: RobotDescription, settings: IdentificationSettings,
                             conditioning: Conditioning, estimates: dict | None = None) -> WindowChoice:
    """The window [s] with the smallest cross-validated torque residual (module docstring) for ``recording``
    (read, checked and resampled, not yet differentiated; with torques) identified with ``settings``;
    ``estimates``: as :func:`candidate_windows`."""
    if recording.tau is None:
        raise DataError(f"{recording.source}: choosing the derivative window needs torques")
    candidates, noise_rule = candidate_windows(recording, conditioning, estimates)
    regressor = settings.regressor(robot)
    base = compute_base_parameters(regressor)
    blocks = _blocks(recording)
    estimates = [{} for _ in blocks]        # each block's noise and motion, the same for every window
    scores = {}
    for window in candidates:
        windowed = dataclasses.replace(conditioning, derivative_window=window)
        try:
            scores[window] = _cross_validated_residual(
                [_differentiated(block, windowed, kept) for block, kept in zip(blocks, estimates)],
                regressor, base, settings)
        except DataError:       # a block too short (or too gappy) for this window: not a candidate here
            scores[window] = float("inf")
    finite = {window: score for window, score in scores.items() if np.isfinite(score)}
    if finite:     # none: a recording too short for five blocks of any window takes the noise rule's
        best = min(finite.values())
        chosen = min(window for window, score in finite.items() if score <= best + TIE_TOLERANCE * abs(best))
    else:
        chosen = noise_rule
    choice = WindowChoice(chosen, scores, noise_rule)
    logger.info("%s: %s", recording.source, choice.describe())
    return choice


def _differentiated(block: Recording, conditioning: Conditioning, estimates: dict) -> Recording:
    """``block`` differentiated and zeroed at rest as the pipeline's steps 4 and 5 would (without their records)."""
    return zero_at_rest(complete_derivatives(block, conditioning.derivative_window,
                                             conditioning.accelerations_from_positions, estimates),
                        conditioning)[0]


def _blocks(recording: Recording) -> list[Recording]:
    """The :data:`FOLDS` contiguous blocks of ``recording``, or evenly spaced excerpts of a long one."""
    n = recording.n_samples
    if n <= MAX_SAMPLES:
        edges = np.linspace(0, n, FOLDS + 1).astype(np.int64)
        return [recording.take(np.arange(edges[k], edges[k + 1])) for k in range(FOLDS)]
    length = MAX_SAMPLES // FOLDS
    starts = np.linspace(0, n - length, FOLDS).astype(np.int64)
    return [recording.take(np.arange(start, start + length)) for start in starts]


def _cross_validated_residual(blocks, regressor, base, settings: IdentificationSettings) -> float:
    """Held-out residual per sample of ``blocks`` (conditioned recordings), each predicted by the fit of the
    others (:func:`~robot_dynid.estimation.consistency_check.cross_validated_rss`); each joint's torque weighted
    by its inverse variance (over all blocks)."""
    per_block = max(1, MAX_ROWS // len(blocks))
    thinned = [block.take(np.unique(np.linspace(0, block.n_samples - 1, min(per_block, block.n_samples))
                                    .astype(np.int64))) for block in blocks]
    root_weights = 1.0 / np.sqrt(np.maximum(np.var(np.concatenate([block.tau for block in thinned]), axis=0),
                                            np.finfo(float).tiny))
    folds = []
    for block in thinned:
        fold = LeastSquaresAccumulator(block.n_joints, base.rank, blocks=False)
        for Y_base, tau in iter_regressor_chunks(regressor, base, block, settings.chunk_size):
            fold.add(Y_base * root_weights[None, :, None], tau * root_weights)
        folds.append(fold)
    rss = cross_validated_rss(folds, lambda training: np.linalg.lstsq(
        training.gram_.sum(axis=0), training.moment_.sum(axis=0), rcond=None)[0])
    return float(np.sum(rss) / sum(block.n_samples for block in thinned))


def window_chooser(robot: RobotDescription, settings: IdentificationSettings):
    """``choose(recording, conditioning, estimates=None) -> (window [s], record)`` (None without torques) for the
    reading pipeline (:func:`robot_dynid.recordings.pipeline.run`'s ``choose_window``): :func:`choose_derivative_window`
    with the identification's own model family and its record (:meth:`WindowChoice.to_dict`)."""
    def choose(recording: Recording, conditioning: Conditioning, estimates: dict | None = None):
        if recording.tau is None:       # nothing to identify: the command says so, naming the torques
            return None
        choice = choose_derivative_window(recording, robot, settings, conditioning, estimates)
        return choice.window, choice.to_dict()
    return choose
