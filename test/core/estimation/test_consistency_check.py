"""Options compared by cross-validation are scored on what a controller meets: with a low-pass fit, the folds'
raw (unfiltered) equations, never the filtered residual alone."""
import numpy as np
import pytest

from robot_dynid.estimation.consistency_check import choose_prior_weight, cross_validated_rss
from robot_dynid.estimation.estimators import LeastSquaresAccumulator

TRUE = np.array([2.0, -1.0])
DISTORTED = np.array([1.5, -0.6])
"""What the filtered equations make look right (a filter's distortion of the target, exaggerated)."""


def folds(theta, count=4, rows=50, seed=0):
    """``count`` accumulators of one joint, two parameters: rows ``tau = Y theta`` (exact)."""
    rng = np.random.default_rng(seed)
    result = []
    for _ in range(count):
        Y = rng.normal(size=(rows, 1, 2))
        result.append(LeastSquaresAccumulator(1, 2).add(Y, Y @ theta))
    return result


def test_the_cross_validated_residual_is_taken_on_the_scoring_folds():
    fitted, scored = folds(DISTORTED), folds(TRUE)
    rss = cross_validated_rss(fitted, lambda training: training.solve("ols").theta, scored)
    # each fold's fit is DISTORTED exactly; its residual on the scoring fold's rows, computed directly
    rng = np.random.default_rng(0)
    for k in range(4):
        Y = rng.normal(size=(50, 1, 2))
        assert rss[k, 0] == pytest.approx(np.sum((Y @ DISTORTED - Y @ TRUE) ** 2), rel=1e-9)
    assert np.all(cross_validated_rss(fitted, lambda training: training.solve("ols").theta) < 1e-9)   # rounding


def test_the_prior_weight_is_chosen_by_the_raw_score_when_the_fit_is_filtered():
    """Two candidate weights: one whose fit is right on the raw data, one whose fit only the filtered equations
    favour. Scored on the filtered folds the second would win; on the raw folds the first does."""
    fitted, raw = folds(DISTORTED), folds(TRUE)
    candidates = {1.0: TRUE, 10.0: DISTORTED}
    weight, scores = choose_prior_weight(fitted, lambda training, w: candidates[w], list(candidates), scoring=raw)
    assert weight == 1.0 and scores[1.0] < 1e-9 < scores[10.0]
    assert choose_prior_weight(fitted, lambda training, w: candidates[w], list(candidates))[0] == 10.0


def test_the_search_over_candidate_weights_reports_its_progress():
    """Each candidate is one consistent fit per fold (seconds on many recordings): the search goes through the
    progress callback, every candidate once, and the choice is the same as without it."""
    fitted, raw = folds(DISTORTED), folds(TRUE)
    candidates = {1.0: TRUE, 10.0: DISTORTED, 100.0: DISTORTED}
    seen = []

    def progress(iterable, description="", total=None):
        for item in iterable:
            seen.append((description, total, item))
            yield item

    weight, _ = choose_prior_weight(fitted, lambda training, w: candidates[w], list(candidates), scoring=raw,
                                    progress=progress)
    assert weight == 1.0
    assert seen == [("choosing the prior weight", 3, w) for w in candidates]
