"""Accelerations of a position/velocity reference stream, against the analytic derivative of the reference."""
import numpy as np
import pytest

from robot_dynid.errors import DataError, DynIdError
from robot_dynid.model.reference_acceleration import ReferenceAcceleration


def stream(rate, duration, jitter=0.0, seed=0):
    """Header stamps [s] of a reference published at ``rate`` [Hz], each off its grid by up to ``jitter`` of a
    step, and the velocities (n=2) of ``qd = A sin(w t + phi)``, and their exact derivative."""
    rng = np.random.default_rng(seed)
    stamps = np.arange(0.0, duration, 1.0 / rate) + rng.uniform(-jitter, jitter, int(round(duration * rate))) / rate
    amplitude, omega, phase = np.array([1.2, 0.4]), np.array([2.0, 9.0]), np.array([0.3, 1.1])
    velocity = amplitude * np.sin(omega * stamps[:, None] + phase)
    acceleration = amplitude * omega * np.cos(omega * stamps[:, None] + phase)
    return stamps, velocity, acceleration


@pytest.mark.parametrize("rate, window", [(1000.0, 0.01), (500.0, 0.02), (100.0, 0.05)])
def test_the_estimate_follows_the_derivative_without_lag(rate, window):
    """Within the bound of a quadratic fit's end-point error (A w^4 window^2 / 12 per joint, plus rounding) once
    the window is full, also with stamps jittered by 20 % of a step; a line through the window (what a lagging
    estimate gives) would be off by about A w^2 window / 2, much more."""
    for jitter in (0.0, 0.2):
        stamps, velocity, acceleration = stream(rate, 3.0, jitter)
        estimator = ReferenceAcceleration(2, window)
        estimates = np.array([estimator.update(t, v) for t, v in zip(stamps, velocity)])
        full = stamps > stamps[0] + window
        amplitude, omega = np.array([1.2, 0.4]), np.array([2.0, 9.0])
        bound = amplitude * omega**4 * window**2 / 12.0 + 1e-9
        lagging = amplitude * omega**2 * window / 2.0
        error = np.abs(estimates[full] - acceleration[full]).max(axis=0)
        assert np.all(error <= 2.0 * bound), (rate, jitter, error, bound)
        assert np.all(error < 0.5 * lagging), (rate, jitter, error, lagging)


def test_a_gap_or_a_stamp_that_does_not_advance_restarts_the_estimate():
    estimator = ReferenceAcceleration(1, 0.05, max_gap=0.1)
    assert estimator.update(0.0, [0.0]) == pytest.approx(0.0)
    assert estimator.update(0.01, [0.1]) == pytest.approx(10.0)          # two references: their slope
    assert estimator.update(0.02, [0.2]) == pytest.approx(10.0)
    assert estimator.update(0.5, [5.0]) == pytest.approx(0.0)            # after a 0.48 s gap: from scratch
    assert estimator.update(0.51, [5.2]) == pytest.approx(20.0)
    assert estimator.update(0.51, [9.0]) == pytest.approx(0.0)           # the same stamp again: restarted
    assert estimator.update(0.40, [1.0]) == pytest.approx(0.0)           # back in time (a replayed stream)


def test_bad_settings_and_references_are_named():
    with pytest.raises(DynIdError, match=r"reference acceleration window must be finite and in \(0, 1\] \[s\]"):
        ReferenceAcceleration(6, 0.0)
    with pytest.raises(DynIdError, match="n_joints must be an integer >= 1"):
        ReferenceAcceleration(0, 0.01)
    estimator = ReferenceAcceleration(2, 0.01)
    with pytest.raises(DataError, match="reference velocities"):
        estimator.update(0.0, [1.0])
    with pytest.raises(DataError, match="reference velocities"):
        estimator.update(0.0, [1.0, np.nan])
