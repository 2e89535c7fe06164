"""The one time-gap rule (signal_processing.gap_steps) on a hand-made stamp pattern with known gaps."""
import numpy as np
import pytest

from robot_dynid.recordings.signal_processing import (GAP_STEPS, STAGE_GAP_STEPS, derivative_gap_steps, gap_breaks,
                                                      gap_starts, gap_steps, gap_threshold)
from robot_dynid.recordings.stamp_quality import stamp_quality

H = 0.01
# steps in units of H: gaps of 2, 4 and 6 steps among steps of 1 (median 1 step)
STEPS = np.array([1, 1, 2, 1, 1, 4, 1, 1, 6, 1, 1])
TIME = np.concatenate(([0.0], np.cumsum(STEPS * H)))


def test_the_default_factor_finds_every_step_longer_than_one_and_a_half_median_steps():
    assert GAP_STEPS == 1.5
    assert np.flatnonzero(gap_steps(TIME)).tolist() == [2, 5, 8]
    assert gap_breaks(TIME).tolist() == [3, 6, 9]
    assert gap_threshold(H) == 1.5 * H


def test_a_named_factor_finds_only_the_longer_gaps():
    assert STAGE_GAP_STEPS == 5.0
    assert gap_breaks(TIME, STAGE_GAP_STEPS).tolist() == [9]


def test_derivative_windows_use_half_the_window_as_factor():
    assert [derivative_gap_steps(window) for window in (1, 3, 7, 9)] == [1.0, 1.0, 3.0, 4.0]
    assert gap_starts(TIME, 7).tolist() == [5, 8]       # steps of 4 and 6 exceed 3 median steps
    assert gap_starts(TIME, 9).tolist() == [8]          # a step of exactly 4 is not longer than 4


def test_stamp_quality_counts_the_same_gaps_and_missing_samples():
    quality = stamp_quality(TIME)
    assert quality.n_gaps == 3
    assert quality.missing == 1 + 3 + 5
    assert quality.longest_gap == pytest.approx(6 * H, rel=1e-12)


def test_fewer_than_two_stamps_have_no_gap():
    assert gap_steps([0.0]).tolist() == [] and gap_breaks([]).tolist() == []
